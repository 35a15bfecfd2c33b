"""``python -m fidelity.importers`` is ``fidelity import``."""

import sys

from ...cli import main

__all__ = []

sys.exit(main(["import", *sys.argv[1:]]))
