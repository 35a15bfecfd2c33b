"""List every hypothesis property of the test suite with the number of
examples it runs in CI, read from the code (not from memory).

    python3 tests/hypothesis_counts.py           # print the Markdown list
    python3 tests/hypothesis_counts.py --write   # rewrite docs/property-tests.md

A property runs the ``ci`` profile's ``max_examples`` (tests/conftest.py)
unless a ``@settings(max_examples=...)`` on it, or a ``settings`` object it
is decorated with, asks for another number. ``tests/project/test_hypothesis_counts.py``
checks that the committed list is current and that no property runs fewer
examples than the profile says.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

__all__ = ["Property", "profile_examples", "properties", "markdown", "DOC"]

TESTS = Path(__file__).resolve().parent
DOC = TESTS.parent / "docs" / "property-tests.md"


class Property(NamedTuple):
    """One ``@given`` test: where it is, how many examples (``None`` when the
    count is an expression this reader does not evaluate), and the source of
    the setting (``profile ci`` when the test sets none)."""

    file: str
    name: str
    examples: int | None
    setting: str


def profile_examples(conftest: Path = TESTS / "conftest.py") -> int:
    """``max_examples`` of the ``ci`` profile registered in conftest.py."""
    for node in ast.walk(ast.parse(conftest.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "register_profile" and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "ci"):
            for kw in node.keywords:
                if kw.arg == "max_examples" and isinstance(kw.value, ast.Constant):
                    return int(kw.value.value)
    raise ValueError(f"{conftest}: no 'ci' profile with a literal max_examples")


def _is_call_to(node: ast.expr, name: str) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == name) or (isinstance(func, ast.Attribute) and func.attr == name)


def _max_examples(call: ast.Call) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == "max_examples"), None)


def _least(expr: ast.expr, names: dict[str, ast.expr] | None = None) -> int | None:
    """The smallest count an expression gives in CI: a literal, the smaller
    branch of ``a if cond else b``, a module constant (``EXAMPLES``), and the
    default of ``int(os.environ.get(...) or 400)``; ``None`` for anything else."""
    names = names or {}
    if isinstance(expr, ast.Constant) and isinstance(expr.value, int):
        return expr.value
    if isinstance(expr, ast.IfExp):
        a, b = _least(expr.body, names), _least(expr.orelse, names)
        return None if a is None or b is None else min(a, b)
    if isinstance(expr, ast.Name) and expr.id in names:
        return _least(names[expr.id], names)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "int" and len(expr.args) == 1:
        return _least(expr.args[0], names)
    if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.Or):  # the default after ``or``
        return _least(expr.values[-1], names)
    return None


def _walk_functions(node: ast.AST, outer: str | None = None) -> Iterator[tuple[str, ast.FunctionDef]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = child.name if outer is None else outer
            yield name, child  # type: ignore[misc]
            yield from _walk_functions(child, name)
        elif isinstance(child, ast.ClassDef):
            yield from _walk_functions(child, outer)


def properties(tests: Path = TESTS) -> list[Property]:
    """Every ``@given`` test under ``tests`` (a ``@given`` function nested in
    a test is named after that test)."""
    default = profile_examples(tests / "conftest.py")
    out: list[Property] = []
    for path in sorted(tests.rglob("test_*.py")):
        if path.relative_to(tests).parts[0] == "engine":
            continue  # .ci/engine's suite: each example is a request to a real vLLM engine; it sets its own counts
        tree = ast.parse(path.read_text())
        constants = {target.id: stmt.value for stmt in tree.body if isinstance(stmt, ast.Assign)
                     for target in stmt.targets if isinstance(target, ast.Name)}
        named = {k: v for k, v in constants.items() if _is_call_to(v, "settings")}
        for name, fn in _walk_functions(tree):
            if not any(_is_call_to(d, "given") for d in fn.decorator_list):
                continue
            count: int | None = default
            setting = "profile ci"
            for d in fn.decorator_list:
                call = named.get(d.id) if isinstance(d, ast.Name) else d if _is_call_to(d, "settings") else None
                expr = _max_examples(call) if isinstance(call, ast.Call) else None
                if expr is not None:
                    count = _least(expr, constants)
                    setting = f"{d.id}: " if isinstance(d, ast.Name) else ""
                    setting += f"max_examples={ast.unparse(expr)}"
                    if isinstance(expr, ast.Name) and expr.id in constants:
                        setting += f" ({expr.id} = {ast.unparse(constants[expr.id])})"
                    if any(kw.arg == "derandomize" and isinstance(kw.value, ast.Constant) and kw.value.value is False
                           for kw in call.keywords):  # type: ignore[union-attr]
                        setting += "; derandomize=False: a fresh seed each run"
            out.append(Property(path.relative_to(tests).as_posix(), name, count, setting))
    return out


def markdown(props: list[Property] | None = None, default: int | None = None) -> str:
    props = properties() if props is None else props
    default = profile_examples() if default is None else default
    lines = [
        "# Property tests and their example counts",
        "",
        "Generated from the code by `python3 tests/hypothesis_counts.py --write`; "
        "`tests/project/test_hypothesis_counts.py` fails when this list is stale or when a property runs "
        f"fewer than the `ci` profile's {default} examples. CI runs the `ci` profile "
        "(tests/conftest.py): derandomized, so a red run reproduces, except where a test sets "
        "`derandomize=False` (said below). A parametrized property runs its count once per parameter.",
        "",
        f"{len(props)} properties: {sum(p.setting == 'profile ci' for p in props)} run the profile's "
        f"{default}; the others set their own count, which the test holds at {default} or more.",
        "",
        "| file | test | examples (least) | set by |",
        "|---|---|---|---|",
    ]
    lines += [f"| {p.file} | `{p.name}` | {p.examples if p.examples is not None else '?'} | `{p.setting}` |"
              for p in props]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text = markdown()
    if "--write" in sys.argv[1:]:
        DOC.write_text(text)
        print(f"wrote {DOC}")
    else:
        sys.stdout.write(text)
