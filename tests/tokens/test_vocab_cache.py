"""The precompiled vocabulary copy: same ranks as the shipped file, checked
on every load, never trusted when altered or made from another file."""

from __future__ import annotations

from pathlib import Path

import pytest

from fidelity.tokens import _vocab_cache
from fidelity.tokens._vocab import package_file, read_quicktok_vocab, read_tiktoken_bpe

SOURCES = [("o200k_base", ("quicktok", "data", "o200k.vocab"), read_quicktok_vocab),
           ("cl100k_base", ("tiktoken_ext", "data", "cl100k_base.tiktoken"), read_tiktoken_bpe)]


class _Counting:
    def __init__(self, parse):  # type: ignore[no-untyped-def]
        self.parse, self.calls = parse, 0

    def __call__(self, path: Path) -> dict[bytes, int]:
        self.calls += 1
        return self.parse(path)


@pytest.mark.parametrize("name, where, parse", SOURCES, ids=[s[0] for s in SOURCES])
def test_copy_holds_the_shipped_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name, where, parse) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FIDELITY_CACHE_DIR", str(tmp_path))
    source = package_file(*where)
    counting = _Counting(parse)
    first = _vocab_cache.cached_ranks(name, source, counting)
    assert counting.calls == 1 and len(list(tmp_path.glob(f"vocab-{name}-*.marshal"))) == 1
    second = _vocab_cache.cached_ranks(name, source, counting)
    assert counting.calls == 1  # read from the copy
    assert second == first == parse(source)


def _copy_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, _Counting]:
    monkeypatch.setenv("FIDELITY_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "tiny.tiktoken"
    source.write_bytes(b"YQ== 0\nYg== 1\nYWI= 2\n")  # a, b, ab
    counting = _Counting(read_tiktoken_bpe)
    _vocab_cache.cached_ranks("tiny", source, counting)
    (copy,) = (tmp_path / "cache").glob("vocab-tiny-*.marshal")
    return source, copy, counting


@pytest.mark.parametrize("damage", ["flip payload", "truncate", "other magic", "empty"])
def test_damaged_copy_is_refused_and_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    source, copy, counting = _copy_of(tmp_path, monkeypatch)
    data = bytearray(copy.read_bytes())
    if damage == "flip payload":
        data[-3] ^= 0x01
    elif damage == "truncate":
        data = data[:-5]
    elif damage == "other magic":
        data[:5] = b"nope!"
    else:
        data = bytearray()
    copy.write_bytes(bytes(data))
    assert _vocab_cache.cached_ranks("tiny", source, counting) == {b"a": 0, b"b": 1, b"ab": 2}
    assert counting.calls == 2  # parsed again from the shipped file
    assert _vocab_cache.cached_ranks("tiny", source, counting) == {b"a": 0, b"b": 1, b"ab": 2}
    assert counting.calls == 2  # the rewritten copy is good


def test_another_shipped_file_never_reads_an_old_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, _copy, counting = _copy_of(tmp_path, monkeypatch)
    source.write_bytes(b"YQ== 0\nYg== 1\nYmE= 2\n")  # a, b, ba: an upgraded package
    assert _vocab_cache.cached_ranks("tiny", source, counting) == {b"a": 0, b"b": 1, b"ba": 2}
    assert counting.calls == 2


def test_off_reads_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIDELITY_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source = tmp_path / "tiny.tiktoken"
    source.write_bytes(b"YQ== 0\n")
    assert _vocab_cache.cached_ranks("tiny", source, read_tiktoken_bpe) == {b"a": 0}
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.tiktoken"]


def test_unwritable_folder_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("FIDELITY_CACHE_DIR", str(blocker / "cache"))  # a file where the folder goes
    source = tmp_path / "tiny.tiktoken"
    source.write_bytes(b"YQ== 0\n")
    assert _vocab_cache.cached_ranks("tiny", source, read_tiktoken_bpe) == {b"a": 0}
