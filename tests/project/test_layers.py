"""The import graph of ``fidelity/`` (read with ``ast``): no cycles, no
import from a lower layer to a higher one (:data:`LAYERS`), no library
module importing ``fidelity.commands``, no private name imported across
packages. Imports inside functions count: a deferred import is
still a dependency, only a later one."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fidelity"

#: cycles another change removes, each with why it is allowed for now (none left: the gate <-> gate_output
#: pair that was here went with main's gate_rows split)
ALLOWED_CYCLES: set[frozenset[str]] = set()


#: the layers, lowest first; a module may import its own layer and those below.
#: Each top-level module or package of ``fidelity`` is in exactly one.
LAYERS: tuple[tuple[str, ...], ...] = (
    # ground and model: errors, JSON and bytes, the provider table, the request model and its builders
    ("errors", "_registry", "stats", "jsonio", "jsonends", "jsonbytes", "gzipped", "bytediff", "formats", "providers",
     "model", "canonical", "pricing", "breakpoints", "server_side", "sources", "fork", "compose", "fixtures",
     "strategies"),
    ("wire",),
    ("tokens",),
    ("cache",),
    ("diff",),
    ("traffic", "capture"),  # recorded traffic, read one way
    ("replay", "calibrate", "scan", "score", "deepseek_split", "probe", "proxy", "harness", "gate_rows", "pairs",
     "tokens_check"),  # sinks
    ("report", "views", "gate", "gate_output", "pytest_plugin"),  # views
    ("commands", "cli", "_entry", "__main__"),  # the edge
)

#: imports that still reach up a layer, each with why (another change removes it)
ALLOWED_UPWARD: set[tuple[str, str]] = {
    # the Claude/Gemini fit's command line (python -m fidelity.tokens.fit) reads recordings
    # itself; the fit needs billing internals of tokens, so it cannot move up as a whole
    ("fidelity.tokens.fit", "fidelity.traffic"), ("fidelity.tokens.fit", "fidelity.traffic.exchange"),
    ("fidelity.tokens.fit", "fidelity.traffic.sources"),
}


def _layer(module: str) -> int:
    """The layer of ``fidelity.<top>...``; ``python -m`` entry points are the edge."""
    if module.endswith(".__main__"):
        return len(LAYERS) - 1
    top = module.split(".")[1]
    for rank, names in enumerate(LAYERS):
        if top in names:
            return rank
    raise AssertionError(f"{module}: its top-level name {top!r} is in no layer of LAYERS")


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(current: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = current.split(".")
    base = base if is_pkg else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _type_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:`` (for the type checker, not run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ((isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                                         or (isinstance(node.test, ast.Attribute)
                                             and node.test.attr == "TYPE_CHECKING")):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _imports(mods: dict[str, Path]) -> list[tuple[str, str, str | None]]:
    """``(importer, imported module, imported name or None)`` for every
    import of a fidelity module that runs (type-checking-only imports left out)."""
    out = []
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                out += [(mod, a.name, None) for a in node.names if a.name.startswith("fidelity")]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(mod, is_pkg, node.level, node.module)
                if not target.startswith("fidelity"):
                    continue
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    out.append((mod, sub, None) if sub in mods else (mod, target, a.name))
    return out


def _owner(name: str, mods: dict[str, Path]) -> str:
    """The module that exists for a dotted name (a name inside a module: the module)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for src, target, _ in _imports(mods):
        dst = _owner(target, mods)
        # a module's import of its own package's __init__ (``from . import x``) is not a dependency on it
        if dst and dst != src and not (src.startswith(dst + ".")):
            graph[src].add(dst)
        # importing fidelity.a.b runs fidelity/a/__init__.py first: an edge to
        # each package above the target that is not also above the importer
        pkg = dst.rpartition(".")[0]
        while pkg.count(".") >= 1 and pkg in mods and not src.startswith(pkg + "."):
            graph[src].add(pkg)
            pkg = pkg.rpartition(".")[0]
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    cycles = [c for c in _cycles(_graph()) if frozenset(c) not in ALLOWED_CYCLES]
    assert cycles == []


def test_no_import_reaches_up_a_layer() -> None:
    up = sorted((src, dst) for src, dsts in _graph().items() if src != "fidelity" for dst in dsts
                if dst != "fidelity" and _layer(dst) > _layer(src) and (src, dst) not in ALLOWED_UPWARD)
    assert up == []
    # an allowance nobody needs any more goes too
    graph = _graph()
    assert sorted(e for e in ALLOWED_UPWARD if e[1] not in graph.get(e[0], ())) == []


def test_no_library_module_imports_commands() -> None:
    bad = sorted({(src, dst) for src, dsts in _graph().items() for dst in dsts
                  if (dst == "fidelity.commands" or dst.startswith("fidelity.commands."))
                  and not src.startswith("fidelity.commands") and src not in ("fidelity.cli", "fidelity._entry")})
    assert bad == []


def test_no_private_name_crosses_a_package() -> None:
    mods = _modules()
    bad = []
    for src, target, name in _imports(mods):
        if name is None or not name.startswith("_") or name.startswith("__"):
            continue
        owner = _owner(target, mods)
        src_pkg = src if mods[src].name == "__init__.py" else src.rpartition(".")[0]
        own_pkg = owner if mods[owner].name == "__init__.py" else owner.rpartition(".")[0]
        if src_pkg != own_pkg:
            bad.append(f"{src} imports {name} from {owner}")
    assert bad == []


def test_the_checker_finds_what_it_looks_for() -> None:
    # the graph is not empty and a known import is in it (a checker that reads nothing passes everything)
    graph = _graph()
    assert "fidelity.traffic.usage" in graph["fidelity.traffic.sources"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
