"""``python -m fidelity.importers`` is ``fidelity import``."""

import sys

from ...cli import main

sys.exit(main(["import", *sys.argv[1:]]))
