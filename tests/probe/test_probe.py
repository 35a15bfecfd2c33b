"""fidelity probe without an engine: a loopback stub server that answers
like vLLM (block rule, cached-token report), and the bad-input paths
(unreachable endpoint, no cached-token report, refused key)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fidelity.probe import cases, predict
from fidelity.probe.client import Endpoint, ProbeError, reported_usage
from fidelity.probe.engine import settings_from_metrics

REPO = Path(__file__).resolve().parents[2]
BLOCK = 32


class _Stub(BaseHTTPRequestHandler):
    mode = "vllm"
    seen: list[list[int]] = []

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _reply(self, code: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/metrics":
            text = f'vllm:cache_config_info{{block_size="{BLOCK}",num_gpu_blocks="1000"}} 1.0\n'.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)
        elif self.path == "/version":
            self._reply(200, {"version": "stub"})
        else:
            self._reply(404, {})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.mode == "401":
            return self._reply(401, {"error": "bad key"})
        if "messages" in body:  # plumbing only: the engine test checks chat tokens against vLLM itself
            from fidelity import tokens

            ids = list(predict.prompt_ids(body, tokens.get("deepseek-v4")))
        else:
            ids = body["prompt"]
        n = len(ids)
        best = 0
        for prior in self.seen:  # an independent little block cache: whole blocks, at most n-1
            k = 0
            while k < min(len(prior), n) and prior[k] == ids[k]:
                k += 1
            best = max(best, min(k, n - 1) // BLOCK * BLOCK)
        self.seen.append(ids)
        usage: dict[str, Any] = {"prompt_tokens": n, "completion_tokens": 1}
        if self.mode == "vllm":
            usage["prompt_tokens_details"] = {"cached_tokens": best}
        self._reply(200, {"choices": [{"text": "x"}], "usage": usage})


@pytest.fixture
def stub() -> Iterator[Any]:
    _Stub.seen = []
    _Stub.mode = "vllm"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-m", "fidelity", "probe", *args], capture_output=True, text=True,
                          env=full, cwd=REPO, timeout=120)


def url(server: Any) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_cases_json_shape_and_figures(stub: Any) -> None:
    got = cli("--url", url(stub), "--model", "m", "--tokenizer", "deepseek-v4", "--cases", "8", "--json")
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert list(out) == ["engine", "version", "block_size", "cases", "exact", "mismatches"]
    assert out["block_size"] == BLOCK  # read from /metrics, not assumed
    assert out["version"] == "stub"
    assert (out["cases"], out["exact"], out["mismatches"]) == (8, 8, [])


def test_table_and_mismatch_exit_1(stub: Any) -> None:
    got = cli("--url", url(stub), "--model", "m", "--tokenizer", "deepseek-v4", "--cases", "4", "--block-size", "16")
    assert got.returncode == 1  # predicted with 16-token blocks, the server uses 32
    assert "MISMATCH" in got.stdout and "cases exact" in got.stdout


def test_request_files_in_order(stub: Any, tmp_path: Path) -> None:
    parent = list(range(1000, 1100))
    (tmp_path / "p.json").write_text(json.dumps({"model": "m", "prompt": parent}))
    (tmp_path / "c.json").write_text(json.dumps({"model": "m", "prompt": parent[:70] + [5, 6]}))
    got = cli("--url", url(stub), "--tokenizer", "deepseek-v4", str(tmp_path / "p.json"), str(tmp_path / "c.json"))
    assert got.returncode == 0, got.stderr
    child = [ln for ln in got.stdout.splitlines() if "child 1" in ln][0].split()
    assert child[-2:] == ["64", "64"]  # 70 shared tokens -> two 32-token blocks


def _one_line_exit_2(got: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert got.returncode == 2
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in got.stderr, got.stderr
    for needle in needles:
        assert needle in lines[0]


def test_unreachable_endpoint() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    got = cli("--url", f"http://127.0.0.1:{port}", "--model", "m", "--tokenizer", "deepseek-v4", "--cases", "1")
    _one_line_exit_2(got, "unreachable")


def test_server_without_cache_report(stub: Any) -> None:
    _Stub.mode = "nocache"
    got = cli("--url", url(stub), "--model", "m", "--tokenizer", "deepseek-v4", "--cases", "1")
    _one_line_exit_2(got, "reports no cached tokens", "--enable-prompt-tokens-details")


def test_wrong_key_never_printed(stub: Any) -> None:
    _Stub.mode = "401"
    secret = "sk-test-do-not-print-0123456789"
    got = cli("--url", url(stub), "--key-env", "PROBE_TEST_KEY", "--model", "m", "--tokenizer", "deepseek-v4",
              "--cases", "1", env={"PROBE_TEST_KEY": secret})
    _one_line_exit_2(got, "HTTP 401", "key was refused")
    assert secret not in got.stdout + got.stderr


def test_missing_key_variable() -> None:
    got = cli("--url", "http://127.0.0.1:9", "--key-env", "PROBE_TEST_UNSET_KEY", "--model", "m", "--cases", "1",
              env={"PROBE_TEST_UNSET_KEY": ""})
    _one_line_exit_2(got, "PROBE_TEST_UNSET_KEY")


def test_bad_body_file(tmp_path: Path) -> None:
    bad = tmp_path / "b.json"
    bad.write_text('{"model": "m"}')
    got = cli("--url", "http://127.0.0.1:9", "--tokenizer", "deepseek-v4", str(bad))
    _one_line_exit_2(got, str(bad), "neither")


def test_reported_usage_formats() -> None:
    assert reported_usage({"usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 4}}}).cached_tokens == 4
    assert reported_usage({"usage": {"prompt_tokens": 10, "prompt_cache_hit_tokens": 3}}).cached_tokens == 3
    got = reported_usage({"timings": {"cache_n": 7, "prompt_n": 2}})
    assert got is not None and (got.prompt_tokens, got.cached_tokens) == (9, 7)
    assert reported_usage({"usage": {"prompt_tokens": 10}}) is None


def test_settings_from_metrics() -> None:
    text = '# HELP x\nvllm:cache_config_info{block_size="128",engine="0",num_gpu_blocks="4096"} 1.0\n'
    s = settings_from_metrics(text)
    assert s is not None and (s.block_size, s.num_blocks, s.capacity_tokens) == (128, 4096, 4095 * 128)
    assert settings_from_metrics("nothing here") is None


def test_endpoint_repr_hides_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE_K", "sk-secret-value")
    e = Endpoint("http://127.0.0.1:9/v1", key_env="PROBE_K")
    assert "sk-secret" not in repr(e) and e.base == "http://127.0.0.1:9"
    with pytest.raises(ProbeError):
        Endpoint("ftp://x")


def test_chat_prompt_joins_parts_like_vllm() -> None:
    body = {"messages": [{"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                         {"role": "user", "content": "hi"}]}
    text = predict.chat_prompt(body, "chatml")
    assert text == "<|im_start|>system\na\nb<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_generated_cases_are_deterministic() -> None:
    a = [c.name for c in cases.generate(12, block=128, seed=3)]
    assert a == [c.name for c in cases.generate(12, block=128, seed=3)]
    assert {c.kind for c in cases.generate(12, block=128, seed=3)} == set(cases.KINDS)


def test_hosted_cache_model(stub: Any) -> None:
    """A provider's own cache model (no engine settings) is accepted: the
    stub's 32-token blocks are not DeepSeek's rule, so the run is inexact (1),
    not an error."""
    got = cli("--url", url(stub), "--cache", "deepseek", "--model", "deepseek-v4-flash", "--cases", "4")
    assert got.returncode in (0, 1), got.stderr
    assert "cases exact" in got.stdout
