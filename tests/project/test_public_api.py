"""The declared surface: what the package exports, pinned (as httpx does),
and every module says what it exports."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import fidelity

#: The names ``import fidelity`` promises. Changing this list is an API change.
TOP_LEVEL = [
    "FidelityError", "ForkUnavailable", "InputError", "UnknownName",
    "FrozenDict", "Image", "Message", "Reasoning", "Request", "Route", "SystemBlock", "Text",
    "Tool", "ToolCall", "ToolResult", "freeze", "thaw",
    "compare", "compare_requests", "DiffResult", "record", "Provider",
    "__version__",
]

#: What the README's examples use, by module.
README_API = {
    "fidelity.diff": ["compare", "compare_requests", "DiffResult", "first_divergence"],
    "fidelity.capture": ["record", "RecordingTransport", "AsyncRecordingTransport"],
    "fidelity.capture.snapshot": ["pairs_in_folder", "Snapshot", "SnapshotWriter"],
    "fidelity.providers": ["Provider", "Route", "register", "get", "from_url", "family"],
    "fidelity.wire": ["get", "names", "detect", "register", "Segment"],
    "fidelity.cache": ["get", "for_provider", "PromptTokens"],
    "fidelity.tokens": ["get", "for_model", "segment_tokens"],
    "fidelity.pricing": ["load", "Price", "PriceTable"],
}


def _modules() -> list[str]:
    names = ["fidelity"]
    for info in pkgutil.walk_packages(fidelity.__path__, "fidelity."):
        if info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


def test_top_level_exports_are_pinned() -> None:
    assert sorted(fidelity.__all__) == sorted(TOP_LEVEL)
    for name in TOP_LEVEL:
        assert getattr(fidelity, name) is not None


def test_every_module_declares_what_it_exports() -> None:
    missing, broken = [], []
    for name in _modules():
        mod = importlib.import_module(name)
        exported = getattr(mod, "__all__", None)
        if exported is None:
            missing.append(name)
            continue
        broken += [f"{name}.{n}" for n in exported if not hasattr(mod, n)]
    assert missing == [], f"modules without __all__: {missing}"
    assert broken == [], f"__all__ names that do not exist: {broken}"


def test_readme_api_is_exported() -> None:
    for module, names in README_API.items():
        mod = importlib.import_module(module)
        for n in names:
            assert n in mod.__all__, f"{module}.{n}"


def test_typed_marker_ships() -> None:
    from importlib import resources

    assert resources.files("fidelity").joinpath("py.typed").is_file()


def test_strategies_without_hypothesis_says_what_to_install() -> None:
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "try:\n    import fidelity.strategies\nexcept ModuleNotFoundError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install 'fidelity[strategies]'" in out.stdout, out.stderr


def test_import_fidelity_stays_light() -> None:
    code = ("import sys, fidelity\n"
            "heavy = [m for m in ('deepdiff', 'rich', 'hypothesis', 'tokenizers', 'fidelity.diff') if m in sys.modules]\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
