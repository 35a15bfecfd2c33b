"""Real-harness rows for the report: the committed parent/child snapshots of a
real harness's fork (``fixtures/harness/<harness>-<version>/``: ``parent.snapshot``,
``child.snapshot``, ``harness.toml``), scored under each provider that speaks
the body's wire format. A row is one (harness, provider) pair: first
divergence and cause, predicted cached tokens, tokens and dollars lost."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..jsonio import load_toml
from . import _store
from .parent import judge

__all__ = ["HarnessRow", "Scenario", "SCENARIOS", "harness_rows", "DEFAULT_FOLDER"]

#: the repository's committed fixtures (present in a source checkout)
DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "harness"


@dataclass(frozen=True)
class Scenario:
    """A provider a body can be sent to: its label, wire dialect, the model
    used for tokenizer and price, and the endpoint URL (``None``: the
    provider's own API)."""

    label: str
    dialect: str
    model: str
    endpoint: str | None = None


#: wire family of a recorded body -> the providers it is scored under
SCENARIOS: dict[str, tuple[Scenario, ...]] = {
    "openai": (
        Scenario("DashScope (qwen-plus)", "dashscope", "qwen-plus"),
        Scenario("DeepSeek (deepseek-chat)", "deepseek", "deepseek-chat"),
        Scenario("OpenAI (gpt-4.1)", "openai-chat", "gpt-4.1"),
        Scenario("vLLM, self-hosted (Qwen3)", "vllm", "qwen3-coder-plus"),
    ),
    "anthropic": (
        Scenario("Anthropic API (claude-sonnet-4-6)", "anthropic-messages", "claude-sonnet-4-6",
                 "https://api.anthropic.com/v1/messages"),
        Scenario("Anthropic-compatible third party (claude-sonnet-4-6 prices)", "anthropic-messages",
                 "claude-sonnet-4-6", "https://api.deepseek.com/anthropic/v1/messages"),
    ),
}
_FAMILY = {"anthropic-messages": "anthropic"}


@dataclass(frozen=True)
class HarnessRow:
    harness: str
    version: str
    provider: str
    first_divergence: str
    cause: str
    predicted_cached: int
    lost_tokens: int
    child_prompt: int
    estimated: bool
    usd_lost_per_fork: float | None

    def to_json(self) -> dict[str, object]:
        return {"harness": self.harness, "version": self.version, "provider": self.provider,
                "first_divergence": self.first_divergence, "cause": self.cause,
                "predicted_cached": self.predicted_cached, "lost_tokens": self.lost_tokens,
                "child_prompt": self.child_prompt, "estimated": self.estimated,
                "usd_lost_per_fork": None if self.usd_lost_per_fork is None else round(self.usd_lost_per_fork, 6)}


def harness_rows(folder: str | Path = DEFAULT_FOLDER) -> Iterator[HarnessRow]:
    """One row per (recorded harness fork, provider), folders in name order."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError("no such folder", path=root)
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        meta_path = sub / "harness.toml"
        meta = load_toml(meta_path)
        parent = _store.snapshot.read(sub / "parent.snapshot").body
        child = _store.snapshot.read(sub / "child.snapshot").body
        family = _FAMILY.get(str(meta.get("dialect")), "openai")
        for sc in SCENARIOS[family]:
            v = judge(parent, child, sc.dialect, model=sc.model, endpoint=sc.endpoint,
                      parent_path=str(sub / "parent.snapshot"), child_path=str(sub / "child.snapshot"))
            yield HarnessRow(str(meta.get("harness", sub.name)), str(meta.get("version", "?")), sc.label,
                             v.divergence(), v.cause + (f": {v.detail}" if v.detail else ""), v.predicted_cached,
                             v.lost_tokens, v.prompt_tokens, v.estimated, v.usd_lost)
