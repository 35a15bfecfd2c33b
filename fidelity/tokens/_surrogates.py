"""Lone surrogates out of text before encoding (shared by the BPE tokenizers)."""

from __future__ import annotations

import re

__all__ = ["scrub_surrogates"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(text: str) -> str:
    """Replace lone surrogates (no UTF-8 encoder accepts them) with U+FFFD,
    as a JSON decoder does for an unpaired ``\\udXXX`` escape."""
    if text.isascii():  # a flag of the string object: no scan
        return text
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text
