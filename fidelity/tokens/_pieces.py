"""What a provider's rendering of one cache-view segment is made of.

A framing module (``framing_openai``...) turns a segment's bytes into a list
of pieces: text that the tokenizer counts, special tokens of the provider's
chat format (one token each), and media counted by the provider's rule
(:mod:`fidelity.tokens.media`). :mod:`fidelity.tokens.billed` turns pieces
into token ids.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Special", "Media", "Piece"]


@dataclass(frozen=True)
class Special:
    """One special token of the chat format (``<|start|>``...): its id in the
    tokenizer where known, else a stable stand-in."""

    id: int


@dataclass(frozen=True)
class Media:
    """An image, PDF, audio or video part. ``data`` holds its bytes when the
    body carries them (base64 inline); else ``url`` names where they are."""

    kind: str  # "image" | "pdf" | "audio" | "video" | "file"
    data: bytes | None = None
    mime: str | None = None
    url: str | None = None
    detail: str | None = None
    #: the wire part that carried it where a rule depends on it (OpenAI PDFs:
    #: Chat ``file`` or Responses ``input_file``)
    part: str | None = None


Piece = str | Special | Media
