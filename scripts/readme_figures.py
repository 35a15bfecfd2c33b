"""The README's report figures, generated from the report itself.

The README quotes the bundled report twice: the coding session's lost
tokens and dollars per 1,000 forks for three providers (the report's JSON
fields, formatted by ``fidelity.formats.usd``, as the report's views), and the real-harness
table (the report's Markdown lines themselves). Both tables sit between markers in README.md::

    <!-- readme_figures: NAME -->
    ...generated...
    <!-- /readme_figures -->

and are written here from the report's own JSON (``fidelity.report.to_json``
of the score the report computes in-process on the bundled fixtures), with
the report's own number formatting, so the README can never disagree with
``fidelity report``. ``tests/project/test_readme_figures.py`` fails when a block is
stale; this script rewrites them::

    python3 scripts/readme_figures.py           # check: exit 1 and show what changed
    python3 scripts/readme_figures.py --write   # rewrite README.md's blocks
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"

#: the coding-session table: (variant, label in the README), in README order
VARIANTS = (
    ("one-shot-fork", "one-shot fork"),
    ("continuable-fork", "continuable fork (`report` tool + section)"),
    ("tool-filter", "tool filter"),
    ("spawn", "spawn (no history)"),
    ("defect-timestamp", "timestamp in the system prompt"),
    ("defect-tool-order", "tools in map order"),
    ("defect-argument-key-order", "tool-call argument key order drift"),
    ("breakpoints-automatic", "Anthropic breakpoints: automatic caching only"),
    ("breakpoints-system-only", "Anthropic breakpoints: system prompt only"),
    ("breakpoints-none", "Anthropic breakpoints: none"),
)
#: the table's providers, in README order
PROVIDERS = ("deepseek", "openai-chat", "anthropic-messages")
SESSION = "coding-agent"
_BLOCK = re.compile(r"(<!-- readme_figures: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /readme_figures -->)", re.S)


def report_json() -> dict[str, Any]:
    """The report's JSON for the rows the README quotes: the coding session
    under the table's variants and providers, and the real-harness rows
    (the same score and harness rows ``fidelity report`` computes)."""
    from fidelity import compose, fixtures, score
    from fidelity.proxy.harness_rows import DEFAULT_FOLDER, harness_rows
    from fidelity.report import to_json

    fx = fixtures.load(None)
    fx = dataclasses.replace(fx, sessions=tuple(s for s in fx.sessions if s.name == SESSION))
    by_name = {v.name: v for v in compose.load_variants_from_bytes(fx.compositions)}
    result = score.score(fx, [by_name[name] for name, _ in VARIANTS], providers=list(PROVIDERS))
    result = dataclasses.replace(result, harness=tuple(harness_rows(DEFAULT_FOLDER)))
    return to_json(result)


def coding_session(doc: dict[str, Any]) -> str:
    from fidelity.formats import usd

    rows = {(r["variant"], r["provider"]): r for r in doc["rows"] if r["session"] == SESSION}
    models = {p: rows[(VARIANTS[0][0], p)]["model"] for p in PROVIDERS}
    estimated = {p: rows[(VARIANTS[0][0], p)]["tokens_estimated"] for p in PROVIDERS}
    head = ["variant", "keeps prefix"] + [
        f"{models[p]}{' (estimate)' if estimated[p] else ''}: lost tokens / $ per 1,000 forks" for p in PROVIDERS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, label in VARIANTS:
        first = rows[(name, PROVIDERS[0])]
        keeps = "yes" if first["cache_preserving"] else ("(placement)" if name.startswith("breakpoints-") else "no")
        cells = []
        for p in PROVIDERS:
            r = rows[(name, p)]
            cost = r["cost"] or {}
            price = usd(cost.get("usd_per_1000"), 2) if r["cost"] else "no price"
            cells.append(f"{r['tokens']['lost']:,} / {price}")
        lines.append("| " + " | ".join([label, keeps, *cells]) + " |")
    return "\n".join(lines) + "\n"


def harnesses(doc: dict[str, Any]) -> str:
    """The report's own "Real harnesses" table, line for line as ``fidelity
    report`` writes it to fidelity-report.md."""
    from fidelity.report import render_markdown

    lines = render_markdown(doc).splitlines()
    first = lines.index("## Real harnesses")
    head = next(i for i in range(first, len(lines)) if lines[i].startswith("| harness |"))
    end = next(i for i in range(head, len(lines)) if not lines[i].startswith("|"))
    return "\n".join(lines[head:end]) + "\n"


BLOCKS = {"coding-session": coding_session, "harnesses": harnesses}


def render(text: str, doc: dict[str, Any]) -> str:
    """``text`` (the README) with every block regenerated from ``doc``."""
    def one(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in BLOCKS:
            raise SystemExit(f"README.md: unknown block {name!r}; known: {', '.join(BLOCKS)}")
        return m.group(1) + BLOCKS[name](doc) + m.group(4)

    return _BLOCK.sub(one, text)


def blocks(text: str) -> dict[str, str]:
    """The README's blocks by name, as they stand."""
    return {m.group("name"): m.group("body") for m in _BLOCK.finditer(text)}


def main(argv: list[str]) -> int:
    text = README.read_text("utf-8")
    new = render(text, report_json())
    if new == text:
        print("README.md: the report figures are current")
        return 0
    if "--write" in argv:
        tmp = README.with_name(".README.md.tmp")
        tmp.write_text(new, "utf-8")
        tmp.replace(README)
        print("README.md: report figures rewritten")
        return 0
    sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), "README.md", "generated"))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
