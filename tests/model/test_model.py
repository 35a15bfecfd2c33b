import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.model import FrozenDict, Message, Request, Route, Text, Tool, freeze, thaw

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_freeze_keeps_bytes_and_order(value):
    assert orjson.dumps(freeze(value)) == orjson.dumps(value)
    assert thaw(freeze(value)) == value


def test_frozen_dict_refuses_mutation():
    d = freeze({"b": 1, "a": 2})
    assert list(d) == ["b", "a"]
    for mutate in (lambda: d.__setitem__("c", 1), lambda: d.pop("a"), lambda: d.update(x=1), d.clear):
        with pytest.raises(TypeError):
            mutate()
    assert d == {"b": 1, "a": 2}


def test_request_is_deeply_immutable():
    params = {"type": "object", "properties": {"z": {}, "a": {}}}
    r = Request(Route("openai", "gpt-4o"), tools=[Tool("t", "d", params)],
                messages=[Message("user", [Text("hi")])])
    params["properties"]["b"] = {}
    assert list(r.tools[0].parameters["properties"]) == ["z", "a"]
    assert isinstance(r.tools, tuple) and isinstance(r.messages[0].parts, tuple)
    with pytest.raises(Exception):
        r.route = Route("x", "y")  # type: ignore[misc]
    assert isinstance(r.tools[0].parameters, FrozenDict)
