"""Tests are laid out by package: a module's tests are found under
``tests/<package or module>/``; the suites that cut across packages
(hostile input, real traffic, speed paths, engine, harness, project-wide
checks) have folders of their own."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "fidelity"
SUITES = {"hostile", "real_traffic", "speed", "engine", "harness", "project"}


def test_no_test_module_sits_at_the_top_of_tests() -> None:
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []


def test_every_folder_names_a_fidelity_package_or_module_or_a_suite() -> None:
    folders = {p.parent.relative_to(TESTS).parts[0] for p in TESTS.rglob("test_*.py")}
    strays = sorted(f for f in folders - SUITES
                    if not (PACKAGE / f).is_dir() and not (PACKAGE / f"{f}.py").is_file())
    assert strays == []
    assert folders >= {"cache", "diff", "scan", "tokens", "wire"}
