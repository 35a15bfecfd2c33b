"""Prompt token ids as providers bill them, per cache-view segment.

:func:`segment_ids`: per segment, the ids of the segment *as the provider's
model reads it* (:mod:`.framing_openai`, :mod:`.framing_estimate`, else the
dialect's template text or the bytes), each media part replaced by stand-in
ids of the provider's rule's count (:mod:`.media`; :func:`media_ids`).
:func:`prompt_media`: the kinds of content one body's prompt holds and each
media part's rule.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..wire import Segment
from . import TOKEN_TYPECODE, Tokenizer, segment_tokens
from ._parallel import encode_texts
from ._pieces import Media, Piece, Special
from .media import MediaInfo, count_media, probe, probe_b64

__all__ = ["MediaPart", "PromptCount", "prompt_tokenizer", "segment_ids", "segment_pieces", "prompt_media", "media_ids",
           "billing_tokenizer", "prompt_tail", "pieces_ids", "media_in"]

#: dialects whose framing module renders each segment as the model reads it
_FRAMED = {"openai-chat", "openai-responses"}
#: dialects counted with the calibrated estimate (:mod:`.framing_estimate`)
_ESTIMATED = {"anthropic-messages": "anthropic", "gemini": "gemini"}
_CALIBRATED = {"claude-estimate": "claude-calibrated", "gemini-estimate": "gemini-calibrated"}


def _register() -> None:
    from . import names, register
    from .calibrated import claude_calibrated, claude_calibrated_47, gemini_calibrated

    if "claude-calibrated-4.7" not in names():
        register("claude-calibrated", claude_calibrated)
        register("claude-calibrated-4.7", claude_calibrated_47)
        register("gemini-calibrated", gemini_calibrated)


def billing_tokenizer(tok: Tokenizer, model: str = "") -> Tokenizer:
    """The tokenizer billed counts use: for Claude and Gemini models the
    calibrated estimate (:mod:`.calibrated`) in place of the plain one,
    whatever the body's shape (a gateway's OpenAI-shaped body too). ``model``
    picks Claude's tokenizer generation (:func:`.framing_estimate.table_of`)."""
    if tok.name in _CALIBRATED:
        from . import get
        from .framing_estimate import table_of

        _register()
        if tok.name == "claude-estimate" and table_of("anthropic", model) == "anthropic-4.7":
            return get("claude-calibrated-4.7")
        return get(_CALIBRATED[tok.name])
    return tok


def prompt_tokenizer(model: str, provider: str, dialect: str) -> Tokenizer:
    """The tokenizer a request to ``model`` is counted with, by every
    command: the model's own, else the nearest family's marked estimated
    (:func:`fidelity.tokens.for_model` with ``nearest``), as billed
    (:func:`billing_tokenizer`)."""
    from . import for_model

    return billing_tokenizer(for_model(model, provider, nearest=True), model)


@dataclass(frozen=True)
class MediaPart:
    kind: str
    tokens: int
    estimated: bool
    rule: str
    #: "body" (bytes in the request) or "url" (not in the body: a typical size)
    origin: str


@dataclass(frozen=True)
class PromptCount:
    tokens: int
    estimated: bool
    tokenizer: str
    kinds: tuple[str, ...]
    media: tuple[MediaPart, ...] = field(default=())

    @property
    def kind(self) -> str:
        """The request's main kind: audio > pdf > image > schema > tools > text."""
        return next((k for k in ("audio", "pdf", "image", "schema", "tools") if k in self.kinds), "text")


# ------------------------------------------------------------------ media stand-ins

def media_ids(media: Media, n: int) -> array[int]:
    """``n`` stand-in ids for one media part: negative, from a hash of its
    bytes (or URL), so identical media give identical ids."""
    h = hashlib.blake2b(media.data if media.data is not None else (media.url or "").encode(), digest_size=5)
    base = (int.from_bytes(h.digest(), "big") + 1) << 20
    n = min(n, (1 << 20) - 1)
    return array(TOKEN_TYPECODE, range(-base, -base - n, -1))


_ATTACHMENT_SIZE = re.compile(r"^attachment:[^?]*\?(?:.*&)?width=(\d+)&height=(\d+)")


def _measure(media: Media, provider: str, model: str, tok: Tokenizer | None = None) -> MediaPart:
    if media.kind in ("reasoning", "compaction"):
        from .framing_openai import compaction_tokens, reasoning_tokens

        count = reasoning_tokens if media.kind == "reasoning" else compaction_tokens
        return MediaPart(media.kind, count(len(media.data or b"")), True,
                         f"openai {media.kind} item: fitted on encrypted_content length", "body")
    info = None
    sized = _ATTACHMENT_SIZE.match(media.url or "") if media.data is None else None
    if sized is not None:  # a DeepSeek Harness attachment: the log records its size
        info = MediaInfo("image", width=int(sized.group(1)), height=int(sized.group(2)))
        got = count_media(provider, model, "image", info, detail=media.detail)
        return MediaPart("image", got.tokens, got.estimated, got.rule, "log")
    if media.data is not None:
        if media.mime is not None and media.kind in ("image", "pdf", "audio", "video", "file") and _is_b64(media.data):
            info = probe_b64(media.data.decode("ascii", "replace"), media.mime)
        else:
            info = probe(media.data, media.mime)
    kind = info.kind if info is not None and info.kind in ("image", "pdf", "audio", "video") else media.kind
    counter = None if tok is None else (lambda text: len(tok.ids(text)))
    got = count_media(provider, model, kind, info, detail=media.detail, text_tokens=counter, part=media.part)
    return MediaPart(kind, got.tokens, got.estimated, got.rule, "body" if media.data is not None else "url")


def _is_b64(data: bytes) -> bool:
    head = data[:64]
    return bool(head) and all(c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n\r-_" for c in head)


# ------------------------------------------------------------------ generic dialects

_ANTHROPIC_MEDIA = {"image": "image", "document": "pdf"}


def media_in(value: Any) -> Media | None:
    """A media object of the Anthropic or Gemini wire format, else ``None``
    (what the calibrated estimate counts by rule)."""
    if not isinstance(value, dict) and (isinstance(value, (str, list)) or not isinstance(value, Mapping)):
        return None
    t = value.get("type")
    if isinstance(t, str) and t in _ANTHROPIC_MEDIA:
        src = value.get("source")
        if isinstance(src, dict) or isinstance(src, Mapping):
            kind = _ANTHROPIC_MEDIA[t]
            if src.get("type") == "base64" and isinstance(src.get("data"), str):
                mime = src.get("media_type") if isinstance(src.get("media_type"), str) else None
                return Media("pdf" if (mime or "").endswith("pdf") else kind, data=src["data"].encode("ascii", "replace"), mime=mime)
            if src.get("type") == "text":
                return None  # a plain-text document: its text is counted as text
            return Media(kind, url=str(src.get("url") or src.get("file_id") or ""))
    for key in ("inlineData", "inline_data", "fileData", "file_data"):  # Gemini parts, both spellings
        part = value.get(key)
        if not isinstance(part, Mapping) or (key.startswith("inline") and not isinstance(part.get("data"), str)):
            continue
        mime = part.get("mimeType") or part.get("mime_type")
        mime = mime if isinstance(mime, str) else None
        if key.startswith("inline"):
            return Media(_gemini_kind(mime), data=part["data"].encode("ascii", "replace"), mime=mime)
        return Media(_gemini_kind(mime), url=str(part.get("fileUri") or part.get("file_uri") or ""), mime=mime)
    if t == "image" and isinstance(value.get("attachment"), (str, dict, Mapping)):  # DeepSeek Harness
        return Media("image", url=orjson.dumps(value["attachment"]).decode())
    if t in ("image_url", "input_image", "input_audio", "file", "input_file"):  # OpenAI-compatible dialects
        from .framing_openai import _media_of_part

        return _media_of_part(value)
    return None


def _gemini_kind(mime: str | None) -> str:
    m = (mime or "").lower()
    if m.endswith("pdf"):
        return "pdf"
    return next((k for k in ("image", "audio", "video") if m.startswith(k + "/")), "file")


def _strip_media(value: Any, found: list[Media]) -> Any:
    """``value`` with each media object replaced by a short marker."""
    media = media_in(value)
    if media is not None:
        found.append(media)
        return {"media": media.kind}
    if isinstance(value, Mapping):
        return {k: _strip_media(v, found) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_media(v, found) for v in value]
    return value


def _plain_media(seg: Segment) -> list[Piece] | None:
    """Pieces of a segment of a dialect without framing that holds media
    (``None``: count its text or bytes as they are; a template text holds none)."""
    if seg.text is not None:
        return None
    if b'"data"' not in seg.data and b'"source"' not in seg.data and b"fileData" not in seg.data \
            and b"file_data" not in seg.data and b'"attachment"' not in seg.data \
            and b'"image_url"' not in seg.data and b'"input_audio"' not in seg.data:
        return None
    try:
        value = orjson.loads(seg.data if seg.kind != "params" else b"{" + seg.data + b"}")
    except orjson.JSONDecodeError:
        return None
    found: list[Media] = []
    stripped = _strip_media(value, found)
    if not found:
        return None
    return [orjson.dumps(stripped).decode(), *found]


# ------------------------------------------------------------------ pieces -> ids

def segment_pieces(dialect: str, segs: Sequence[Segment], model: str = "") -> list[list[Piece]] | None:
    """Pieces of each segment for a framed dialect, else ``None``."""
    if dialect in _FRAMED:
        from .framing_openai import segment_pieces as openai_pieces

        return openai_pieces(dialect, segs, model)
    if dialect in _ESTIMATED:
        from .framing_estimate import segment_pieces as estimate_pieces

        return estimate_pieces(_ESTIMATED[dialect], segs, model, media_in)
    return None


def pieces_ids(tok: Tokenizer, pieces: Iterable[Piece], provider: str, model: str,
               known: dict[str, array[int]] | None = None) -> array[int]:
    """Ids of one segment's pieces: text through the tokenizer (or ``known``),
    special ids as they are, media as stand-ins of its rule's count
    (:func:`media_ids`); ``fidelity scan`` calls it per element it has not seen."""
    out = array(TOKEN_TYPECODE)
    for p in pieces:
        if isinstance(p, str):
            if p:
                hit = known.get(p) if known is not None else None
                out.extend(tok.ids(p) if hit is None else hit)
        elif isinstance(p, Special):
            out.append(p.id)
        else:
            out.extend(media_ids(p, _measure(p, provider, model, tok).tokens))
    return out


def _encode_pieces(tok: Tokenizer, framed: Sequence[Sequence[Piece]]) -> dict[str, array[int]]:
    """Ids of every distinct text piece, each encoded once; a large batch (a
    first request of megabytes) on all cores (:mod:`fidelity.tokens._parallel`)."""
    texts = list(dict.fromkeys(p for pieces in framed for p in pieces if isinstance(p, str) and p))
    return dict(zip(texts, encode_texts(tok, texts)))


def segment_ids(tok: Tokenizer, segs: Sequence[Segment], *, dialect: str, provider: str,
                model: str) -> list[array[int]]:
    """Billed token ids of each segment of a cache view (see the module
    docstring). The params segment holds tokens only where the provider
    renders part of it (a response schema). Arrays may be shared with
    memos: read-only."""
    tok = billing_tokenizer(tok, model)
    framed = segment_pieces(dialect, segs, model)
    if framed is not None:
        known = _encode_pieces(tok, framed)
        return [pieces_ids(tok, pieces, provider, model, known=known) for pieces in framed]
    plain = segment_tokens(tok, segs)
    out: list[array[int]] = []
    for seg, ids in zip(segs, plain):
        if seg.kind == "params":
            out.append(array(TOKEN_TYPECODE))
            continue
        pieces = _plain_media(seg)
        out.append(ids if pieces is None else pieces_ids(tok, pieces, provider, model))
    return out


# ------------------------------------------------------------------ one body

def prompt_tail(tok: Tokenizer, dialect: str, *, model: str = "") -> array[int]:
    """Ids the provider appends after the last segment of a cache view: the
    reply priming of the framed dialects (that ``model``'s,
    :func:`fidelity.tokens.framing_openai.priming`; without one
    ``<|start|>assistant<|message|>``), empty for the others."""
    if dialect not in _FRAMED:
        return array(TOKEN_TYPECODE)
    from .framing_openai import priming

    return pieces_ids(tok, priming(model), "", model)


def prompt_media(body: bytes, segs: Sequence[Segment], tok: Tokenizer, *, dialect: str, provider: str,
                 model: str) -> tuple[tuple[str, ...], tuple[MediaPart, ...]]:
    """What one body's prompt holds beside its count (that is
    :func:`fidelity.cache.prompts.cache_prompt`'s): the kinds of content and
    each media part's rule, without tokenizing any text."""
    framed = segment_pieces(dialect, segs, model)
    if framed is None:
        framed = [(_plain_media(s) if s.kind != "params" else None) or [] for s in segs]
    tok = billing_tokenizer(tok, model)
    parts = tuple(_measure(p, provider, model, tok) for pieces in framed for p in pieces
                  if not isinstance(p, (str, Special)))
    return _kinds(body, dialect, segs, parts), parts


def _kinds(body: bytes, dialect: str, segs: Sequence[Segment], parts: Sequence[MediaPart]) -> tuple[str, ...]:
    kinds = {p.kind for p in parts if p.kind in ("image", "pdf", "audio", "video")}
    if any(s.kind == "tools" for s in segs) or b'"functionDeclarations"' in body:
        kinds.add("tools")
    if b'"json_schema"' in body or b'"responseSchema"' in body or b'"responseJsonSchema"' in body \
            or b'"output_format"' in body:
        kinds.add("schema")
    return tuple(sorted(kinds)) or ("text",)
