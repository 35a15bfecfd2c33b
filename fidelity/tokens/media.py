"""Media (images, PDFs, audio, video) counted by each provider's rule.

Providers bill media by what it is (pixels, pages, seconds), never by its
base64 text. This module reads only what a rule needs from the bytes, from
their headers: image dimensions with Pillow (``Image.open`` parses the
header and decodes no pixels until asked), PDF page count and page sizes
with pypdf, WAV duration with the standard library's ``wave``, MP3 duration
from its first frame header, MP4 duration from its movie header. Base64 is
decoded only as far as the header needs (a prefix; the whole payload only
when the header lies further in).

Rules and their sources
-----------------------
OpenAI (https://platform.openai.com/docs/guides/images-vision#calculating-costs):

* *Tile models* (gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3...): ``detail:
  "low"`` costs the base tokens; otherwise the image is scaled to fit a
  2048 x 2048 square, then so that its shortest side is 768 px (never
  scaled up), and costs ``base + tile * (number of 512 px tiles)``. Base and
  tile tokens per family: gpt-4o / 4.1 / 4.5: 85 and 170; gpt-4o-mini: 2833
  and 5667; o1 / o3: 75 and 150; gpt-5 (and -chat): 70 and 140;
  computer-use-preview: 65 and 129. The page's worked examples: 1024 x 1024
  high = 765 tokens; 2048 x 4096 high = 1105; 4096 x 8192 low = 85.
* *Patch models* (gpt-4.1-mini, gpt-4.1-nano, o4-mini, gpt-5-mini,
  gpt-5-nano): the image is cut into 32 px patches; above 1536 patches it
  is scaled down to fit 1536 (and then so that its width is a whole number
  of patches); tokens = patches x multiplier (gpt-4.1-mini and gpt-5-mini
  1.62, gpt-4.1-nano and gpt-5-nano 2.46, o4-mini 1.72). Worked examples:
  1024 x 1024 = 1024 patches; 1800 x 2400 = 1452 patches. gpt-5-mini is
  counted at 1.2 a patch, not the page's 1.62: what its recorded usage
  bills (docs/tokens-billed.md, "OpenAI: rules measured on the fit side").
* PDFs (``input_file`` / ``file`` parts): "both the extracted text and an
  image of each page" go into the context
  (https://platform.openai.com/docs/guides/pdf-files). What is billed was
  measured, not documented: the extracted text (counted with the model's
  tokenizer) plus a fixed amount per page that depends on the API, not on
  the model's image rule: 216 tokens on Chat Completions (``file``), 4 on
  the Responses API (``input_file``), 25 for one a function returns; fitted
  (docs/tokens-billed.md), so estimated.
* Audio (``input_audio``): not documented per second; estimated at 10
  tokens a second (the gpt-4o audio models' observed rate), marked estimated.

Anthropic (https://platform.claude.com/docs/en/build-with-claude/vision,
"Evaluate image size"): an image whose long edge exceeds 1568 px, or whose
area exceeds about 1.15 megapixels, is scaled down (aspect kept) until it
fits both; tokens = width x height / 750. Worked examples from the page:
200 x 200 = 54 tokens, 1000 x 1000 = 1334, 1092 x 1092 = 1590. PDFs
(https://platform.claude.com/docs/en/build-with-claude/pdf-support): each
page is "converted into an image" and its text extracted, both counted;
here: the page text plus the page rendered at 1568 px on its long edge.

Gemini (https://ai.google.dev/gemini-api/docs/tokens, "Multimodal tokens";
https://ai.google.dev/gemini-api/docs/document-processing): Gemini 2.x: an
image with both sides at most 384 px is 258 tokens; a larger one is cropped
and scaled into 768 x 768 tiles, 258 tokens each (the tile count here: a
crop unit of ``floor(min(w, h) / 1.5)`` px, ``ceil(w / unit) * ceil(h /
unit)`` tiles, as Vertex AI's counts behave); video 263 tokens a second,
audio 32 tokens a second; each PDF page 258 tokens. Gemini 3
(https://ai.google.dev/gemini-api/docs/media-resolution): images 1120
tokens, PDF pages 560, video 70 a frame at the default resolution; audio
25 tokens a second (measured: :data:`GEMINI3_AUDIO`). Video is sampled at
one frame a second (https://ai.google.dev/gemini-api/docs/video-understanding):
``ceil(seconds)`` frames, the first at 0 s (a 1.305 s clip billed 526 video
tokens, two frames, on gemini-2.5-flash). The audio track of a video is not
counted.

A part whose bytes are not in the body (a URL, a file id) cannot be
measured (no network: a remote URL is never fetched; a ``data:`` URL is
decoded): it is counted with a typical size and marked ``estimated``. An
image under the OpenAI rule is taken as 480 x 360 (:data:`OPENAI_URL_IMAGE`,
fitted), a PDF under the OpenAI part rules as one page without text (its
per-page tokens only, fitted), every other part as :data:`_TYPICAL` (a
1024 x 1024 image, one letter-size page with 2,000 characters, 30 s).
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
import wave
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "MediaInfo",
    "MediaCount",
    "probe",
    "decode_data_url",
    "openai_image_tokens",
    "anthropic_image_tokens",
    "gemini_image_tokens",
    "count_media",
]


@dataclass(frozen=True)
class MediaInfo:
    """What the header says: pixel size, PDF pages (and their sizes in
    points), audio/video seconds. ``None`` where it could not be read."""

    kind: str
    width: int | None = None
    height: int | None = None
    pages: int | None = None
    page_sizes: tuple[tuple[float, float], ...] = ()
    page_text_chars: tuple[int, ...] = ()
    seconds: float | None = None
    #: a PDF's extracted text, pages joined by a newline
    text: str = ""


@dataclass(frozen=True)
class MediaCount:
    tokens: int
    estimated: bool
    rule: str
    #: tokens of text that the provider adds for the part (a PDF's extracted text)
    text: str = ""


_DATA_URL = re.compile(r"^data:([^;,]*)(?:;[^,]*)?,", re.I)

#: base64 characters decoded first to find a header (JPEG frame headers may
#: sit after a large EXIF block; the rest is decoded only when needed)
HEAD_B64 = 96 * 1024


def decode_data_url(url: str) -> tuple[str | None, str] | None:
    """``(mime type, base64 payload)`` of a ``data:`` URL, else ``None``."""
    m = _DATA_URL.match(url)
    if m is None:
        return None
    return (m.group(1) or None), url[m.end():]


def _b64(payload: str, limit: int | None = None) -> bytes:
    text = payload if limit is None else payload[: limit - limit % 4]
    text = text.strip()
    text += "=" * (-len(text) % 4)
    try:
        if "-" in text or "_" in text:  # URL-safe alphabet (Gemini REST accepts it)
            return base64.urlsafe_b64decode(text)
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return b""


def kind_of(mime: str | None, head: bytes = b"") -> str:
    m = (mime or "").lower()
    if m == "application/pdf" or head.startswith(b"%PDF"):
        return "pdf"
    if m.startswith("image/"):
        return "image"
    if m.startswith("audio/") or head[:4] in (b"RIFF", b"ID3\x03", b"fLaC", b"OggS"):
        return "audio"
    if m.startswith("video/"):
        return "video"
    if head[:8] == b"\x89PNG\r\n\x1a\n" or head[:3] == b"\xff\xd8\xff" or head[:4] in (b"GIF8", b"RIFF"):
        return "image"
    return "file"


@lru_cache(maxsize=512)
def probe_b64(payload: str, mime: str | None) -> MediaInfo:
    """:func:`probe` of base64 text, decoding only a prefix when that holds the header."""
    head = _b64(payload, HEAD_B64)
    kind = kind_of(mime, head[:16])
    if kind == "image":
        info = _image_info(head)
        if info.width is None and len(payload) > HEAD_B64:
            info = _image_info(_b64(payload))
        return info
    return probe(_b64(payload), mime)


def probe(data: bytes, mime: str | None = None) -> MediaInfo:
    """Read sizes, pages or duration from the header of ``data``."""
    kind = kind_of(mime, data[:16])
    if kind == "image":
        return _image_info(data)
    if kind == "pdf":
        return _pdf_info(data)
    if kind == "audio":
        return MediaInfo("audio", seconds=_wav_seconds(data) or _mp3_seconds(data))
    if kind == "video":
        return MediaInfo("video", seconds=_mp4_seconds(data))
    return MediaInfo(kind)


def _image_info(data: bytes) -> MediaInfo:
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as img:  # parses the header only
            width, height = img.size
        return MediaInfo("image", width=width, height=height)
    except Exception:  # a truncated prefix, or not an image Pillow knows
        return MediaInfo("image")


def _pdf_info(data: bytes) -> MediaInfo:
    try:
        import logging

        from pypdf import PdfReader

        logging.getLogger("pypdf").setLevel(logging.ERROR)  # repaired xref tables are not the user's problem
        reader = PdfReader(io.BytesIO(data))
        sizes = []
        texts = []
        for page in reader.pages:
            box = page.mediabox
            sizes.append((float(box.width), float(box.height)))
            try:
                texts.append(page.extract_text() or "")
            except Exception:  # a page whose text pypdf cannot extract
                texts.append("")
        return MediaInfo("pdf", pages=len(sizes), page_sizes=tuple(sizes),
                         page_text_chars=tuple(len(t) for t in texts), text="\n".join(texts))
    except Exception:  # not a PDF pypdf can read
        return MediaInfo("pdf")


def _wav_seconds(data: bytes) -> float | None:
    try:
        with wave.open(io.BytesIO(data)) as w:
            rate = w.getframerate()
            return w.getnframes() / rate if rate else None
    except (wave.Error, EOFError, OSError):
        return None


# MPEG audio frame header tables (ISO/IEC 11172-3 and 13818-3; layout as summarised in
# http://www.mp3-tech.org/programmer/frame_header.html): bitrates in kbit/s by
# (MPEG-1?, layer) and sample rates by version
_MP3_BITRATES = {
    (True, 1): (0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (True, 2): (0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (True, 3): (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (False, 1): (0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (False, 2): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    (False, 3): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
_MP3_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


def _mp3_seconds(data: bytes) -> float | None:
    """Duration of an MP3 from its first frame header: the frame count of a
    Xing/Info header where there is one (VBR), else the stream's bytes at
    the first frame's bitrate (CBR). ``None`` when no frame header is found."""
    pos = 0
    if data[:3] == b"ID3" and len(data) >= 10:  # ID3v2: a syncsafe size after a 10-byte header
        size = (data[6] & 0x7F) << 21 | (data[7] & 0x7F) << 14 | (data[8] & 0x7F) << 7 | (data[9] & 0x7F)
        pos = 10 + size + (10 if data[5] & 0x10 else 0)
    limit = min(len(data) - 4, pos + 4096)  # a frame follows the tag, after at most some padding
    while pos < limit:
        if data[pos] == 0xFF and data[pos + 1] & 0xE0 == 0xE0:
            h = int.from_bytes(data[pos:pos + 4], "big")
            version, layer_bits = (h >> 19) & 3, (h >> 17) & 3
            rate_i, sr_i = (h >> 12) & 15, (h >> 10) & 3
            if version != 1 and layer_bits and rate_i not in (0, 15) and sr_i != 3:
                mpeg1, layer = version == 3, 4 - layer_bits
                bitrate = _MP3_BITRATES[(mpeg1, layer)][rate_i] * 1000
                sr = _MP3_RATES[version][sr_i]
                samples = 384 if layer == 1 else (1152 if layer == 2 or mpeg1 else 576)
                mono = (h >> 6) & 3 == 3
                side = (17 if mono else 32) if mpeg1 else (9 if mono else 17)
                pad = (h >> 9) & 1
                if layer == 1:
                    size = (12 * bitrate // sr + pad) * 4
                else:
                    size = (144 if layer == 2 or mpeg1 else 72) * bitrate // sr + pad
                nxt = pos + size
                if nxt + 2 <= len(data) and not (data[nxt] == 0xFF and data[nxt + 1] & 0xE0 == 0xE0):
                    pos += 1  # no second frame where this one ends: not a frame header
                    continue
                tag = pos + 4 + side
                if data[tag:tag + 4] in (b"Xing", b"Info") and len(data) >= tag + 12 and data[tag + 7] & 1:
                    frames = int.from_bytes(data[tag + 8:tag + 12], "big")
                    return frames * samples / sr
                return (len(data) - pos) * 8 / bitrate
        pos += 1
    return None


def _mp4_seconds(data: bytes) -> float | None:
    """Duration of an MP4/QuickTime file from its movie header (``mvhd`` in
    ``moov``: ISO/IEC 14496-12, 8.2.2): duration / timescale."""
    i = data.find(b"mvhd")
    if i < 4 or len(data) <= i + 4:
        return None
    version = data[i + 4]
    if version == 1:
        fields = data[i + 24:i + 36]
        if len(fields) < 12:
            return None
        scale, duration = int.from_bytes(fields[:4], "big"), int.from_bytes(fields[4:], "big")
    else:
        fields = data[i + 16:i + 24]
        if len(fields) < 8:
            return None
        scale, duration = int.from_bytes(fields[:4], "big"), int.from_bytes(fields[4:], "big")
    return duration / scale if scale else None


# ------------------------------------------------------------------ OpenAI

#: (model-name prefix, base tokens, tile tokens) of tile models, longest prefix first
_OPENAI_TILES: tuple[tuple[str, int, int], ...] = (
    ("gpt-4o-mini", 2833, 5667),
    ("computer-use-preview", 65, 129),
    ("gpt-5-chat", 70, 140),
    ("gpt-4o", 85, 170),
    ("chatgpt-4o", 85, 170),
    ("gpt-4.1", 85, 170),
    ("gpt-4.5", 85, 170),
    ("gpt-4", 85, 170),
    ("gpt-5", 70, 140),
    ("o1", 75, 150),
    ("o3", 75, 150),
)
#: (model-name prefix, multiplier) of patch models
_OPENAI_PATCHES: tuple[tuple[str, float], ...] = (
    ("gpt-4.1-mini", 1.62),
    ("gpt-4.1-nano", 2.46),
    ("gpt-5-mini", 1.2),  # the page says 1.62; recorded usage bills 1.2 (module docstring)
    ("gpt-5-nano", 2.46),
    ("o4-mini", 1.72),
)


def _key(model: str) -> str:
    return model.strip().lower().rsplit("/", 1)[-1]


def openai_image_tokens(model: str, width: int, height: int, detail: str | None = None) -> int:
    """Tokens of one image for an OpenAI model (rules in the module docstring)."""
    key = _key(model)
    for prefix, mult in _OPENAI_PATCHES:
        if key.startswith(prefix):
            return math.ceil(openai_patches(width, height) * mult)
    base, tile = 85, 170
    for prefix, b, t in _OPENAI_TILES:
        if key.startswith(prefix):
            base, tile = b, t
            break
    if (detail or "").lower() == "low":
        return base
    return base + tile * openai_tiles(width, height)


def openai_tiles(width: int, height: int) -> int:
    """512 px tiles after fitting 2048 x 2048 and scaling the short side to 768."""
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        s = 2048 / max(w, h)
        w, h = w * s, h * s
    if min(w, h) > 768:
        s = 768 / min(w, h)
        w, h = w * s, h * s
    return math.ceil(w / 512) * math.ceil(h / 512)


def openai_patches(width: int, height: int, cap: int = 1536) -> int:
    """32 px patches, after scaling down to at most ``cap`` patches."""
    raw = math.ceil(width / 32) * math.ceil(height / 32)
    if raw <= cap:
        return raw
    shrink = math.sqrt(32 * 32 * cap / (width * height))
    w, h = width * shrink, height * shrink
    # then so that the width is a whole number of patches
    w_patches = w / 32
    adjust = math.floor(w_patches) / w_patches
    w, h = w * adjust, h * adjust
    return min(cap, math.ceil(w / 32) * math.ceil(h / 32))


# ------------------------------------------------------------------ Anthropic

ANTHROPIC_LONG_EDGE = 1568
#: the page says "about 1.15 megapixels"; its table's largest 1:1 size, 1092 x 1092
#: (~1590 tokens), is 1,192,464 pixels, so the cap is taken there
ANTHROPIC_MAX_PIXELS = 1092 * 1092


def anthropic_image_tokens(width: int, height: int) -> int:
    """``ceil(w * h / 750)`` after Claude's resize limits."""
    w, h = float(width), float(height)
    if max(w, h) > ANTHROPIC_LONG_EDGE:
        s = ANTHROPIC_LONG_EDGE / max(w, h)
        w, h = w * s, h * s
    if w * h > ANTHROPIC_MAX_PIXELS:
        s = math.sqrt(ANTHROPIC_MAX_PIXELS / (w * h))
        w, h = w * s, h * s
    return math.ceil(int(w) * int(h) / 750)


# ------------------------------------------------------------------ Gemini

GEMINI_TILE = 258
#: Gemini 3 video: tokens a frame at the default media resolution (media-resolution page)
GEMINI3_VIDEO_FRAME = 70
#: Gemini 3 audio: tokens a second, measured (not documented): a 4.488 s MP3
#: billed 113 audio tokens on gemini-3-flash-preview through both the Gemini
#: Developer API and Vertex AI (fit side, docs/tokens-billed.md), where
#: gemini-2.5-flash billed the documented 32 a second (144)
GEMINI3_AUDIO = 25


def _gemini3(model: str) -> bool:
    return _key(model).startswith("gemini-3")


def gemini_image_tokens(model: str, width: int, height: int) -> int:
    """258 per 768 px tile (Gemini 2.0 / 1.5; one tile for images up to 384 px);
    258 flat on Gemini 2.5; 1120 on Gemini 3."""
    if _gemini3(model):
        return 1120
    if not _key(model).startswith(("gemini-2.0", "gemini-1.5")):
        return GEMINI_TILE  # Gemini 2.5: one 258-token image at the default media resolution
    if width <= 384 and height <= 384:
        return GEMINI_TILE
    unit = max(1, math.floor(min(width, height) / 1.5))
    return GEMINI_TILE * math.ceil(width / unit) * math.ceil(height / unit)


# ------------------------------------------------------------------ one entry point

#: typical sizes when the bytes are not in the body (a URL): a 1024 x 1024
#: image, a one-page letter-size PDF, 30 s of audio or video
_TYPICAL = MediaInfo("typical", width=1024, height=1024, pages=1, page_sizes=((612.0, 792.0),),
                     page_text_chars=(2000,), seconds=30.0)
#: fitted: the typical size of an image an OpenAI-shaped request names by URL,
#: 480 x 360 (the web images the fit side's requests name are 400 x 301 and
#: about 540 x 360, as other requests of the same tests sent them as bytes:
#: docs/tokens-billed.md, "URL images")
OPENAI_URL_IMAGE = (480, 360)


#: fitted per-page tokens of an OpenAI PDF besides its text, by the part that carries it:
#: Chat ``file``, Responses ``input_file`` in a message, and in a ``function_call_output``
#: (docs/tokens-billed.md, "PDFs" and the sixth pass)
OPENAI_PDF_PAGE = {"file": 216, "input_file": 4, "function_call_output": 25}


def count_media(provider: str, model: str, kind: str, info: MediaInfo | None, *,
                detail: str | None = None, text_tokens: Callable[[str], int] | None = None,
                part: str | None = None) -> MediaCount:
    """Tokens of one media part for ``provider`` (``openai``, ``anthropic``,
    ``gemini``; other providers: the OpenAI tile rule, estimated). ``info``
    ``None`` (bytes not in the body) counts a typical part, estimated.
    ``text_tokens`` counts a PDF's extracted text for the OpenAI rule (else
    4 characters a token); ``part`` is the wire part that carried it."""
    estimated = info is None or (kind == "image" and info.width is None) or \
        (kind == "pdf" and info.pages is None) or (kind in ("audio", "video") and info.seconds is None)
    got = _TYPICAL if estimated else info
    assert got is not None
    fam = provider
    if kind == "image":
        w, h = got.width or 1024, got.height or 1024
        if fam == "anthropic":
            return MediaCount(anthropic_image_tokens(w, h), estimated, "anthropic w*h/750")
        if fam == "gemini":
            return MediaCount(gemini_image_tokens(model, w, h), estimated, "gemini 258/tile")
        if estimated:
            w, h = OPENAI_URL_IMAGE
        return MediaCount(openai_image_tokens(model, w, h, detail), estimated or fam != "openai",
                          "openai tiles/patches" + (" (typical URL image)" if estimated else ""))
    if kind == "pdf":
        pages = got.pages or 1
        sizes = got.page_sizes or ((612.0, 792.0),) * pages
        chars = sum(got.page_text_chars) if got.page_text_chars else 0
        text_est = math.ceil(chars / 4)  # the page text, when no text counter is given
        if fam == "gemini":
            per = 560 if _gemini3(model) else GEMINI_TILE
            return MediaCount(per * pages, estimated, f"gemini {per}/page")
        if fam == "anthropic":
            img = sum(anthropic_image_tokens(*_page_px(pw, ph)) for pw, ph in sizes)
            return MediaCount(img + text_est, True, "anthropic page image + text")
        if part in OPENAI_PDF_PAGE:
            per = OPENAI_PDF_PAGE[part]
            text = text_tokens(got.text) if text_tokens is not None and got.text else text_est
            if estimated:  # not in the body: its text is not known, only the page is counted (fitted)
                return MediaCount(per * pages, True, f"openai pdf {per}/page ({part}, typical URL PDF: no text)")
            return MediaCount(text + per * pages, True, f"openai pdf text + {per}/page ({part})")
        img = sum(openai_image_tokens(model, *_page_px(pw, ph), "high") for pw, ph in sizes)
        return MediaCount(img + text_est, True, "openai page image + text")
    if kind in ("audio", "video"):
        secs = got.seconds or 30.0
        if fam == "gemini":
            if kind == "video":  # one frame a second, the first at 0 s
                per = GEMINI3_VIDEO_FRAME if _gemini3(model) else 263
                return MediaCount(per * math.ceil(secs), estimated, f"gemini {per}/frame at 1 frame/s")
            rate = GEMINI3_AUDIO if _gemini3(model) else 32
            return MediaCount(math.ceil(secs * rate), estimated, f"gemini {rate}/s")
        return MediaCount(math.ceil(secs * 10), True, "estimate 10/s")
    return MediaCount(0, True, "unknown media kind")


def _page_px(width_pt: float, height_pt: float) -> tuple[int, int]:
    """A PDF page rendered with its long edge at 1568 px."""
    s = 1568 / max(width_pt, height_pt, 1.0)
    return max(1, round(width_pt * s)), max(1, round(height_pt * s))
