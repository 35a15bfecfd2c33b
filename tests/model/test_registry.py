"""The one registry idiom (``fidelity._registry``): aliases, case, lazy entries, the error."""

from __future__ import annotations

import pytest

from fidelity._registry import Registry
from fidelity.errors import UnknownName


def test_aliases_resolve_and_are_not_listed() -> None:
    r: Registry[int] = Registry("colour")
    r.add("red", 1, aliases=("rouge",))
    r.add("green", 2)
    assert (r.get("rouge"), r.get("RED"), r.names()) == (1, 1, ["red", "green"])
    assert "rouge" in r and "blue" not in r and len(r) == 2 and list(r) == ["red", "green"]
    with pytest.raises(UnknownName, match=r"^unknown colour 'blue'; known: green, red$"):
        r.get("blue")
    r.remove("red")
    assert "rouge" not in r and r.names() == ["green"]


def test_a_lazy_entry_is_imported_once_on_first_use() -> None:
    r: Registry[object] = Registry("thing")
    r.add("dumps", "json:dumps", lazy=True)
    import json

    assert r.get("dumps") is json.dumps and r.get("dumps") is json.dumps
