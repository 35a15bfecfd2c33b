"""MP3 and MP4 durations read from their headers (fidelity.tokens.media), and
Gemini's audio and video rules that bill by them. Before these were read,
every MP3 and MP4 part counted as a typical 30 s clip (pydantic-ai's
multimodal tool-return cassettes, the public corpus's fit side: a 4.488 s
MP3 counted 960 tokens where gemini-2.5-flash billed 144)."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from fidelity.tokens.media import GEMINI3_AUDIO, GEMINI3_VIDEO_FRAME, count_media, probe, probe_b64

#: MPEG-1 Layer III, 96 kbit/s, 48 kHz, no padding, joint stereo: 288-byte frames of 1,152 samples
_HEADER = bytes([0xFF, 0xFB, 0x74, 0x44])
_FRAME = 144 * 96000 // 48000


def _mp3(frames: int, id3: bytes = b"") -> bytes:
    return id3 + (_HEADER + bytes(_FRAME - 4)) * frames


def _id3(size: int) -> bytes:
    syncsafe = bytes([(size >> 21) & 0x7F, (size >> 14) & 0x7F, (size >> 7) & 0x7F, size & 0x7F])
    return b"ID3\x03\x00\x00" + syncsafe + bytes(size)


def _mp4(scale: int, duration: int, version: int = 0) -> bytes:
    if version == 1:
        body = bytes([1, 0, 0, 0]) + bytes(16) + scale.to_bytes(4, "big") + duration.to_bytes(8, "big")
    else:
        body = bytes(4) + bytes(8) + scale.to_bytes(4, "big") + duration.to_bytes(4, "big")
    mvhd = (8 + len(body) + 80).to_bytes(4, "big") + b"mvhd" + body + bytes(80)
    moov = (8 + len(mvhd)).to_bytes(4, "big") + b"moov" + mvhd
    return b"\x00\x00\x00\x1cftypmp42\x00\x00\x00\x01isommp41mp42" + moov


def test_cbr_mp3_duration_is_its_bytes_at_the_first_frames_bitrate() -> None:
    info = probe(_mp3(187), "audio/mpeg")
    assert info.seconds is not None and abs(info.seconds - 187 * 1152 / 48000) < 1e-9  # 4.488 s


def test_mp3_after_an_id3_tag() -> None:
    info = probe(_mp3(100, _id3(300)), "audio/mpeg")
    assert info.seconds is not None and abs(info.seconds - 100 * 1152 / 48000) < 1e-9


def test_vbr_mp3_duration_is_its_xing_frame_count() -> None:
    xing = bytearray(_HEADER + bytes(_FRAME - 4))
    at = 4 + 32  # after the header and the side information of a stereo MPEG-1 frame
    xing[at:at + 12] = b"Xing" + (1).to_bytes(4, "big") + (500).to_bytes(4, "big")
    info = probe(bytes(xing) + _mp3(3), "audio/mpeg")
    assert info.seconds is not None and abs(info.seconds - 500 * 1152 / 48000) < 1e-9


def test_not_an_mp3_has_no_duration() -> None:
    assert probe(b"not audio at all" * 10, "audio/mpeg").seconds is None
    assert probe(b"", "audio/mpeg").seconds is None
    # a frame sync with no second frame where the first would end is not a frame header
    assert probe(_HEADER + b"\x01" * 600, "audio/mpeg").seconds is None
    # a Xing tag cut short: read as a CBR frame, no exception
    cut = _HEADER + bytes(32) + b"Xing"
    assert probe(cut, "audio/mpeg").seconds is not None


def test_mp4_duration_from_its_movie_header() -> None:
    assert probe(_mp4(1000, 1305), "video/mp4").seconds == 1.305
    assert probe(_mp4(600, 6000, version=1), "video/mp4").seconds == 10.0
    assert probe(b"\x00\x00\x00\x1cftypmp42", "video/mp4").seconds is None
    assert probe(_mp4(0, 10), "video/mp4").seconds is None


def test_base64_payloads_are_read_whole() -> None:
    payload = base64.urlsafe_b64encode(_mp3(187)).decode()
    info = probe_b64(payload, "audio/mpeg")
    assert info.seconds is not None and abs(info.seconds - 4.488) < 1e-9


def test_gemini_audio_per_second_by_generation() -> None:
    """The 4.488 s MP3 billed 144 audio tokens on gemini-2.5-flash and 113 on
    gemini-3-flash-preview (fit side)."""
    info = probe(_mp3(187), "audio/mpeg")
    assert count_media("gemini", "gemini-2.5-flash", "audio", info).tokens == 144
    assert count_media("gemini", "gemini-3-flash-preview", "audio", info).tokens == 113
    assert GEMINI3_AUDIO == 25
    assert not count_media("gemini", "gemini-2.5-flash", "audio", info).estimated


def test_gemini_video_per_frame_at_one_frame_a_second() -> None:
    """A 1.305 s MP4 billed 526 video tokens on gemini-2.5-flash: two frames."""
    info = probe(_mp4(1000, 1305), "video/mp4")
    assert count_media("gemini", "gemini-2.5-flash", "video", info).tokens == 526
    assert count_media("gemini", "gemini-3-flash-preview", "video", info).tokens == 2 * GEMINI3_VIDEO_FRAME


@given(st.integers(min_value=1, max_value=400), st.integers(min_value=0, max_value=2000))
def test_cbr_duration_grows_with_its_frames(frames: int, tag: int) -> None:
    """Any CBR stream, after any ID3 tag: duration = frames x 1,152 / 48,000."""
    info = probe(_mp3(frames, _id3(tag) if tag else b""), "audio/mpeg")
    assert info.seconds is not None and abs(info.seconds - frames * 1152 / 48000) < 1e-9


@given(st.binary(max_size=600), st.sampled_from([b"", b"ID3\x03\x00", b"\xff\xfb\x74\x44", b"mvhd", b"Xing"]),
       st.sampled_from(["audio/mpeg", "video/mp4"]))
def test_any_bytes_give_a_duration_or_none(data: bytes, head: bytes, mime: str) -> None:
    """Truncated or hostile media never raises: a duration (positive) or ``None``."""
    for blob in (head + data, data + head, head):
        seconds = probe(blob, mime).seconds
        assert seconds is None or seconds >= 0


def test_an_inline_mp4_in_a_gemini_body_is_counted_by_its_length() -> None:
    """test_google_model_video_as_binary_content_input (fit side): a 1.305 s MP4
    sent as ``inlineData``. Its base64 text was probed as if it were the bytes
    (video was not among the kinds read as base64), so it counted 7,890."""
    import orjson

    from fidelity.tokens_check import count_prompt

    payload = base64.b64encode(_mp4(1000, 1305)).decode()
    body = {"contents": [{"parts": [{"inlineData": {"data": payload, "mimeType": "video/mp4"}},
                                    {"text": "Explain me this video"}], "role": "user"}]}
    got = count_prompt(orjson.dumps(body), dialect="gemini", model="gemini-2.5-flash")
    assert [(m.kind, m.tokens, m.estimated) for m in got.media] == [("video", 526, False)]
