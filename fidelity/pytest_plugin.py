"""pytest plugin: prefix assertions and byte-exact request-body snapshots.

Registered through the ``pytest11`` entry point ``fidelity`` (else
``-p fidelity.pytest_plugin``). :func:`assert_prefix_preserved` fails with
the diff explanation; the ``fidelity_snapshot`` fixture compares a body with
``__snapshots__/<module>/<test>.json`` following syrupy's conventions
(``--fidelity-update``, ``--fidelity-warn-unused``;
https://github.com/syrupy-project/syrupy); ``fidelity_upstream`` starts a
scripted upstream. docs/ci-and-capture.md, "The pytest plugin"."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .bytediff import first_divergence

__all__ = ["assert_prefix_preserved", "RequestSnapshot", "PrefixNotPreserved"]

_PRESERVED = ("identical", "appended_only")


class PrefixNotPreserved(AssertionError):
    """Raised by :func:`assert_prefix_preserved`; ``result`` is the DiffResult."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


def _as_body(value: Any, provider: str | None, what: str) -> bytes:
    """Bytes of a request given as bytes, str, a path, a dict, a Request,
    a Snapshot or an httpx Request."""
    from .model import Request

    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, os.PathLike):
        from .capture.snapshot import load_body

        return load_body(Path(value))[0]
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, Request):
        if provider is None:
            raise TypeError(f"{what} is a Request: pass provider= (a wire dialect) to render it")
        from . import wire

        return wire.get(provider).render(value)
    if isinstance(value, dict):
        from .jsonbytes import dumps_compact

        return dumps_compact(value)
    body = getattr(value, "body", None)  # fidelity.capture.snapshot.Snapshot
    if isinstance(body, bytes):
        return body
    content = getattr(value, "content", None)  # httpx / httpx2 Request
    if isinstance(content, bytes):
        return content
    raise TypeError(f"{what}: expected bytes, str, a path, a dict, a Request or a snapshot, not {type(value).__name__}")


def explain(result: Any) -> str:
    """The failure text for a :class:`fidelity.diff.DiffResult` (:func:`fidelity.diff.views.text_lines`)."""
    from .diff.views import text_lines

    return "\n".join(text_lines(result, verdict="prefix not preserved"))


def assert_prefix_preserved(parent: Any, child: Any, provider: str | None = None, *,
                            model: str | None = None, prices: Any = None) -> Any:
    """Assert that ``child``'s cache view is ``parent``'s, possibly with segments
    appended, and no cached token is lost; returns the DiffResult, else raises
    :class:`PrefixNotPreserved` explaining where, why and what it costs.
    ``provider`` (a wire dialect) is detected when omitted, required for a Request."""
    from .diff import compare

    p = _as_body(parent, provider, "parent")
    c = _as_body(child, provider, "child")
    result = compare(p, c, dialect=provider, model=model, prices=prices)
    if result.cause.kind not in _PRESERVED or result.cache.lost > 0:
        raise PrefixNotPreserved(explain(result), result)
    return result


# -- snapshots --------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-\[\]]+")


def _test_name_of(file_name: str) -> str:
    stem = file_name[: -len(".json")] if file_name.endswith(".json") else file_name
    return re.sub(r"\.\d+$", "", stem)


@dataclass
class _State:
    """Session-wide bookkeeping, kept on the pytest config."""

    update: bool
    warn_unused: bool
    used: set[Path] = field(default_factory=set)
    passed: list[Path] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    updated: list[Path] = field(default_factory=list)
    failed: list[Path] = field(default_factory=list)
    unused: list[Path] = field(default_factory=list)
    deleted: list[Path] = field(default_factory=list)
    modules: dict[Path, set[str]] = field(default_factory=dict)  # snapshot dir -> selected test names
    partial: set[Path] = field(default_factory=set)  # snapshot dirs with deselected tests
    finished: dict[Path, set[str]] = field(default_factory=dict)  # snapshot dir -> tests that passed


def _snapshot_dir(path: Path) -> Path:
    return path.parent / "__snapshots__" / path.stem


_STATE = pytest.StashKey[_State]()


class RequestSnapshot:
    """Compares request bodies (bytes, str, a dict, an httpx request or a
    snapshot) with stored files byte for byte: ``assert_match(body)`` or ``==``;
    several calls in one test are numbered (``test_x.json``, ``test_x.1.json``)."""

    def __init__(self, state: _State, directory: Path, test_name: str) -> None:
        self._state = state
        self.directory = directory
        self.test_name = _UNSAFE.sub("_", test_name)
        self._index = 0
        self.last_message: str | None = None

    def _next_path(self, name: str | None) -> Path:
        if name is not None:
            return self.directory / f"{self.test_name}.{_UNSAFE.sub('_', name)}.json"
        n = self._index
        self._index += 1
        return self.directory / (f"{self.test_name}.json" if n == 0 else f"{self.test_name}.{n}.json")

    def check(self, body: Any, name: str | None = None) -> bool:
        """Compare (or, with ``--fidelity-update``, write); False with
        :attr:`last_message` set on a mismatch."""
        from .jsonio import atomic_write

        data = _as_body(body, None, "body")
        path = self._next_path(name)
        st = self._state
        st.used.add(path)
        self.last_message = None
        stored = path.read_bytes() if path.exists() else None
        if stored == data:
            st.passed.append(path)
            return True
        if st.update:
            atomic_write(path, data)
            (st.written if stored is None else st.updated).append(path)
            return True
        st.failed.append(path)
        self.last_message = (_mismatch(path, stored, data) if stored is not None else
                             f"fidelity snapshot {path} does not exist.\nRe-run pytest with --fidelity-update to create it.")
        return False

    def assert_match(self, body: Any, name: str | None = None) -> None:
        """Fail with the first divergent byte and the diff explanation."""
        if not self.check(body, name):
            raise AssertionError(self.last_message)

    def __eq__(self, other: object) -> bool:
        return self.check(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<fidelity_snapshot {self.directory / self.test_name}>"


def _mismatch(path: Path, stored: bytes, data: bytes) -> str:
    at = first_divergence(stored, data)
    lines = [f"request body differs from fidelity snapshot {path}",
             f"  first divergent byte: {at} (snapshot {len(stored)} bytes, body {len(data)} bytes)"]
    if at is not None:
        lo = max(0, at - 40)
        lines.append(f"  snapshot: {stored[lo:at + 40]!r}")
        lines.append(f"  body:     {data[lo:at + 40]!r}")
    try:
        from .diff import compare

        result = compare(stored, data)
        from .diff.views import text_lines

        lines.extend(text_lines(result, verdict="as a parent/child pair"))
    except Exception:  # not a recognised request body: the byte view stands
        pass
    lines.append("Re-run pytest with --fidelity-update to accept the new body.")
    return "\n".join(lines)


# -- hooks ---------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fidelity")
    group.addoption("--fidelity-update", action="store_true", default=False,
                    help="write new and changed request snapshots, delete unused ones")
    group.addoption("--fidelity-warn-unused", action="store_true", default=False,
                    help="report unused request snapshots without failing the run")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STATE] = _State(update=config.getoption("fidelity_update"),
                                  warn_unused=config.getoption("fidelity_warn_unused"))


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        st = item.config.stash.get(_STATE, None)
        if st is not None:
            st.partial.add(_snapshot_dir(Path(str(item.path))))


def pytest_collection_finish(session: pytest.Session) -> None:
    st = session.config.stash[_STATE]
    for item in session.items:
        st.modules.setdefault(_snapshot_dir(Path(str(item.path))), set()).add(_UNSAFE.sub("_", item.name))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    report = yield
    if report.when == "call" and report.passed:
        st = item.config.stash.get(_STATE, None)
        if st is not None:
            st.finished.setdefault(_snapshot_dir(Path(str(item.path))), set()).add(_UNSAFE.sub("_", item.name))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    st = session.config.stash.get(_STATE, None)
    if st is None:
        return
    for directory, selected in st.modules.items():
        if not directory.is_dir():
            continue
        passed = st.finished.get(directory, set())
        for f in sorted(directory.glob("*.json")):
            if f in st.used:
                continue
            owner = _test_name_of(f.name)
            if owner in selected:
                if owner in passed:  # the test ran to the end without asking for it
                    st.unused.append(f)
            elif directory not in st.partial:  # no such test in a fully selected module
                st.unused.append(f)
    if st.update and session.exitstatus == 0:
        for f in st.unused:
            f.unlink()
            st.deleted.append(f)
    elif st.unused and not st.warn_unused and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    st = config.stash.get(_STATE, None)
    if st is None or not (st.used or st.unused):
        return
    tr = terminalreporter
    tr.section("fidelity snapshots")
    parts = [f"{len(st.passed)} snapshot(s) passed"]
    for label, items in (("written", st.written), ("updated", st.updated), ("failed", st.failed),
                         ("unused", st.unused)):
        if items:
            parts.append(f"{len(items)} snapshot(s) {label}")
    tr.write_line(". ".join(parts) + ".")
    for p in st.written:
        tr.write_line(f"  new: {p}")
    for p in st.updated:
        tr.write_line(f"  updated: {p}")
    for p in st.unused:
        tr.write_line(f"  {'deleted' if p in st.deleted else 'unused'}: {p}")
    if st.failed and not st.update:
        tr.write_line("Re-run pytest with --fidelity-update to update the failed snapshots.")
    if st.unused and not st.deleted:
        tr.write_line("Re-run pytest with --fidelity-update to delete unused snapshots.")


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> list[str] | None:
    snap = left if isinstance(left, RequestSnapshot) else right if isinstance(right, RequestSnapshot) else None
    if op == "==" and snap is not None and snap.last_message:
        return snap.last_message.splitlines()
    return None


@pytest.fixture
def fidelity_snapshot(request: pytest.FixtureRequest) -> RequestSnapshot:
    """Byte-exact request-body snapshots (see :class:`RequestSnapshot`)."""
    path = Path(str(request.node.path))
    return RequestSnapshot(request.config.stash[_STATE], _snapshot_dir(path), request.node.name)


@pytest.fixture
def fidelity_upstream() -> Any:
    """A factory for scripted fake providers: ``fidelity_upstream(script)`` (a dict
    or a TOML/JSON path) returns a started :class:`~fidelity.proxy.testing.UpstreamThread`,
    closed after the test. Needs aiohttp (the ``proxy`` extra)."""
    pytest.importorskip("aiohttp")
    from .proxy.script import load_script, parse_script
    from .proxy.testing import UpstreamThread

    started: list[Any] = []

    def start(script: Any, **options: Any) -> Any:
        parsed = parse_script(script) if isinstance(script, dict) else load_script(script)
        started.append(UpstreamThread(parsed, **options))
        return started[-1]

    yield start
    for up in started:
        up.close()
