"""Harness descriptors and capture records are read by the one TOML reader
(:func:`fidelity.jsonio.load_toml`): one wording for a file that is not TOML,
not UTF-8 or missing, naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from fidelity.errors import InputError
from fidelity.harness import descriptor
from fidelity.harness.capture import read_captures


@pytest.mark.parametrize(("data", "words"), [(b"name = [unclosed\n", "not valid TOML"),
                                              (b"name = \"\xff\"\n", "not valid TOML")])
def test_a_bad_descriptor_is_one_error_naming_it(tmp_path: Path, data: bytes, words: str) -> None:
    (tmp_path / "bad.toml").write_bytes(data)
    with pytest.raises(InputError) as info:
        descriptor.load("bad", tmp_path)
    text = str(info.value)
    assert "bad.toml" in text and words in text and "\n" not in text


def test_a_bad_capture_record_is_one_error_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "fake-1.0.0" / "fork"
    folder.mkdir(parents=True)
    (folder / "capture.toml").write_text("harness = [unclosed\n")
    with pytest.raises(InputError, match="capture.toml: not valid TOML"):
        list(read_captures(tmp_path))
