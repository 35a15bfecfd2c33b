"""Billed prompt tokens: each provider's documented rule pinned with the
worked examples of its own pages, the framing, and the figures against
recorded usage (``../shared/real``; skipped when absent)."""

from __future__ import annotations

import base64
import io
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import tokens, wire
from fidelity.tokens import media
from fidelity.tokens._pieces import Media
from fidelity.tokens.billed import media_ids, segment_ids
from fidelity.tokens.framing_openai import render_tools
from fidelity.tokens_check import count_prompt
from fidelity.traffic.usage import from_response

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real"
ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ documented rules, worked examples

def test_openai_tile_rule_worked_examples() -> None:
    # https://platform.openai.com/docs/guides/images-vision#calculating-costs
    assert media.openai_image_tokens("gpt-4o", 1024, 1024, "high") == 765
    assert media.openai_image_tokens("gpt-4o", 2048, 4096, "high") == 1105
    assert media.openai_image_tokens("gpt-4o", 4096, 8192, "low") == 85
    assert media.openai_image_tokens("gpt-4o-mini", 4096, 8192, "low") == 2833


def test_openai_patch_rule_worked_examples() -> None:
    # same page, "GPT-4.1-mini, GPT-4.1-nano, o4-mini": 1024x1024 -> 1024 patches; 1800x2400 -> 1452
    assert media.openai_patches(1024, 1024) == 1024
    assert media.openai_patches(1800, 2400) == 1452
    assert media.openai_image_tokens("gpt-4.1-mini", 1024, 1024) == 1659  # ceil(1024 * 1.62)
    assert media.openai_image_tokens("o4-mini", 1024, 1024) == 1762  # ceil(1024 * 1.72)


def test_anthropic_image_rule_worked_examples() -> None:
    # https://platform.claude.com/docs/en/build-with-claude/vision: 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590
    assert media.anthropic_image_tokens(200, 200) == 54
    assert media.anthropic_image_tokens(1000, 1000) == 1334
    assert media.anthropic_image_tokens(1092, 1092) == 1590
    # larger images are scaled down first: never more than about 1.15 MP / 750
    assert media.anthropic_image_tokens(4000, 3000) <= 1590


def test_gemini_rules() -> None:
    # https://ai.google.dev/gemini-api/docs/tokens: up to 384 px both sides = 258; 768 px tiles of 258 (2.0)
    assert media.gemini_image_tokens("gemini-2.0-flash", 300, 300) == 258
    assert media.gemini_image_tokens("gemini-2.0-flash", 1000, 1000) == 258 * 4
    assert media.gemini_image_tokens("gemini-2.5-flash", 1000, 1000) == 258
    got = media.count_media("gemini", "gemini-2.5-flash", "audio", media.MediaInfo("audio", seconds=10.0))
    assert got.tokens == 320 and not got.estimated  # 32 tokens a second
    got = media.count_media("gemini", "gemini-2.5-flash", "pdf", media.MediaInfo("pdf", pages=3))
    assert got.tokens == 3 * 258


def test_url_media_is_an_estimate() -> None:
    got = media.count_media("anthropic", "claude-sonnet-4-5", "image", None)
    assert got.estimated and got.tokens == media.anthropic_image_tokens(1024, 1024)


# ------------------------------------------------------------------ header reading

def _png(w: int, h: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h)).save(buf, "PNG")
    return buf.getvalue()


def test_probe_reads_sizes_pages_and_seconds() -> None:
    assert media.probe(_png(640, 480), "image/png").width == 640
    b64 = base64.b64encode(_png(33, 17)).decode()
    info = media.probe_b64(b64, "image/png")
    assert (info.width, info.height) == (33, 17)
    urlsafe = base64.urlsafe_b64encode(_png(31, 7)).decode().rstrip("=")
    assert media.probe_b64(urlsafe, "image/png").width == 31
    import wave

    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(8000)
        w.writeframes(b"\0\0" * 16000)
    assert media.probe(buf.getvalue(), "audio/wav").seconds == 2.0
    from pypdf import PdfWriter

    pdf = io.BytesIO()
    writer = PdfWriter()
    for _ in range(3):
        writer.add_blank_page(612, 792)
    writer.write(pdf)
    assert media.probe(pdf.getvalue(), "application/pdf").pages == 3


# ------------------------------------------------------------------ framing and cache views

def _chat(content, tools=None, model="gpt-4o") -> bytes:
    body = {"model": model, "messages": [{"role": "user", "content": content}]}
    if tools:
        body["tools"] = tools
    return json.dumps(body, separators=(",", ":")).encode()


def test_openai_text_framing_matches_cookbook_rule() -> None:
    # cookbook: 3 tokens per message + role + content, 3 for the reply priming
    tok = tokens.get("o200k_base")
    assert count_prompt(_chat("hello world")).tokens == 3 + 1 + len(tok.encode("hello world")) + 3


def test_tools_render_as_typescript_namespace() -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Get the weather",
            "parameters": {"type": "object", "required": ["city"], "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["c", "f"]}}}}}
    text = render_tools([tool])
    assert text == ("# Tools\n\n## functions\n\nnamespace functions {\n\n// Get the weather\n"
                    "type get_weather = (_: {\n// City name\ncity: string,\nunit?: \"c\" | \"f\",\n}) => any;\n\n"
                    "} // namespace functions")


def test_image_counts_by_rule_not_base64_and_identical_images_share_ids() -> None:
    url = "data:image/png;base64," + base64.b64encode(_png(1024, 1024)).decode()
    body = _chat([{"type": "text", "text": "what is this"}, {"type": "image_url", "image_url": {"url": url}}])
    got = count_prompt(body)
    assert got.kind == "image" and got.media[0].tokens == 765 and not got.media[0].estimated
    assert got.tokens < 800  # base64 as text would be thousands
    d = wire.get("openai-chat")
    tok = tokens.get("o200k_base")
    a = segment_ids(tok, d.cache_view(body), dialect="openai-chat", provider="openai", model="gpt-4o")
    b = segment_ids(tok, d.cache_view(body), dialect="openai-chat", provider="openai", model="gpt-4o")
    assert a == b and any(i < 0 for i in a[-1])


@settings(max_examples=200)
@given(st.binary(min_size=1, max_size=64), st.binary(min_size=1, max_size=64), st.integers(1, 2000))
def test_media_ids_identify_the_bytes(x: bytes, y: bytes, n: int) -> None:
    """Stand-in ids: the rule's count, negative, equal for equal bytes, disjoint otherwise (200 examples)."""
    ix, iy = media_ids(Media("image", data=x), n), media_ids(Media("image", data=y), n)
    assert len(ix) == n and max(ix) < 0
    assert (ix == iy) == (x == y)


def test_usage_reader_shapes() -> None:
    assert from_response("anthropic", "application/json", json.dumps({"type": "message", "usage": {
        "input_tokens": 3, "cache_read_input_tokens": 10, "cache_creation_input_tokens": 5,
        "output_tokens": 2}}).encode())["prompt"] == 18
    sse = b'data: {"choices":[]}\n\ndata: {"usage":{"prompt_tokens":54,"completion_tokens":3}}\n\ndata: [DONE]\n'
    assert from_response("openai", "text/event-stream", sse)["prompt"] == 54


def test_dsh_image_attachment_is_read_and_counted(tmp_path: Path) -> None:
    from fidelity.sources.dsh import read_session, step_messages

    lines = (ROOT / "tests" / "data" / "sources" / "dsh_valid.jsonl").read_text().splitlines()
    att = {"type": "image", "attachment": {"attachmentId": "sha256:ab", "mediaType": "image/png",
                                           "bytes": 95, "width": 1000, "height": 1000, "name": "p.png"}}
    lines[3] = lines[3].replace('[{"type":"text","text":"List the files."}]',
                                '[{"type":"text","text":"List the files."},' + json.dumps(att) + "]")
    log = tmp_path / "session.jsonl"
    log.write_text("\n".join(lines) + "\n")
    msgs = step_messages(read_session(log), 1, 1)
    image = msgs[0].parts[1]
    assert image.url == "attachment:sha256:ab?width=1000&height=1000&bytes=95"
    from fidelity.model import Request, Route

    body = wire.get("openai-chat").render(Request(route=Route("openai", "gpt-4o"), messages=msgs))
    got = count_prompt(body)
    assert got.media[0].tokens == 765 and got.media[0].origin == "log"


# ------------------------------------------------------------------ against recorded usage

needs_real = pytest.mark.skipif(not (REAL / "recorded-usage").is_dir(), reason="../shared/real is absent")


@needs_real
def test_recorded_figures_hold() -> None:
    from fidelity.tokens_check import check

    result = check([REAL / "recorded-usage", REAL / "cassettes"])
    g = {(x.provider, x.kind): x for x in result.groups}
    assert g[("openai", "text")].median <= 0.02 and g[("openai", "text")].p95 <= 0.05
    assert g[("openai", "tools")].median <= 0.02 and g[("openai", "tools")].p95 <= 0.05
    assert g[("gemini", "image")].median <= 0.15 and g[("gemini", "pdf")].median <= 0.15
    assert g[("anthropic", "image")].median <= 0.15
    # the worked example of ../shared/real/README: gpt-4o Chat, 3,652 prompt tokens billed
    row = next(r for r in result.rows if r.model == "gpt-4o" and r.billed == 3652 and r.dialect == "openai-chat")
    assert row.predicted == 3652


@needs_real
def test_claude_estimate_on_held_out_tests() -> None:
    from fidelity.tokens.fit import held_out, samples
    from fidelity.traffic.sources import reported as iter_recorded

    data = [s for root in (REAL / "recorded-usage", REAL / "cassettes") for s in samples(iter_recorded(root))]
    test = [s for s in data if s.provider.startswith("anthropic") and held_out(s.group)]
    assert test
    predicted = [count for count in _held_out_counts(test)]
    assert statistics.median(predicted) <= 0.05


def _held_out_counts(test):
    from fidelity.tokens.calibrated import FITTED
    from fidelity.tokens.fit import predict
    from fidelity.tokens.framing_estimate import CONSTANTS

    for s in test:
        factor, rank = FITTED[s.provider]
        c = {"factor": factor, "rank": rank, **CONSTANTS[s.provider]}
        yield abs(predict(s, c) - s.billed) / s.billed


@needs_real
def test_tokens_check_command_json() -> None:
    env = {"PYTHONPATH": str(ROOT)}
    import os

    out = subprocess.run([sys.executable, "-m", "fidelity", "tokens-check", str(REAL / "cassettes"), "--json"],
                         capture_output=True, env={**os.environ, **env}, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema"] == "fidelity.tokens-check/1" and doc["groups"]


def test_tokens_check_bad_input_is_one_line(tmp_path: Path) -> None:
    import os

    out = subprocess.run([sys.executable, "-m", "fidelity", "tokens-check", str(tmp_path / "missing")],
                         capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and len(out.stderr.decode().strip().splitlines()) == 1
