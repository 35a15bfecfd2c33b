"""What a provider's rendering of one cache-view segment is made of (a framing
module's output, :mod:`.billed`'s input): text the tokenizer counts, special
tokens (one each), media counted by the provider's rule (:mod:`.media`).
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
