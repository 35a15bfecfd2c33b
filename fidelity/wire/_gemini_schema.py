"""What google-genai does to a function-declaration schema before it sends it:
``types.Schema.model_validate(...).model_dump(exclude_none=True)``, so keys in
the model's field order under snake_case names (camelCase aliases accepted),
``type`` upper-cased through the ``Type`` enum, ``maximum``/``minimum`` as
floats, nulls dropped, unknown keys refused. Idempotent. Sources (google-genai
3.6.1): ``google/genai/types.py`` (``class Schema``, ``class Type``),
``google/genai/_common.py`` (``BaseModel.model_config``,
``CaseInSensitiveEnum._missing_``, ``convert_to_dict``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InputError
from ..jsonbytes import escape_token
from ..model import thaw

__all__ = ["dump_schema", "enum_upper"]

#: ``types.Type`` member names (google-genai 3.6.1).
TYPE_NAMES = frozenset(
    ("TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL")
)


def enum_upper(value: Any, names: frozenset[str], where: str) -> str:
    """``CaseInSensitiveEnum``: a known name in any case becomes the member
    (upper case); an unknown string is kept as given."""
    text = _str(value, where)
    if text in names:
        return text
    if text.upper() in names:
        return text.upper()
    if text.lower() in names:
        return text.lower()
    return text


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise InputError(f"expected a string, got {type(v).__name__}", pointer=where)
    return v


def _int(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise InputError(f"expected an integer, got {v!r}", pointer=where)
    return int(v)


def _float(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"expected a number, got {v!r}", pointer=where)
    return float(v)


def _bool(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise InputError(f"expected true or false, got {v!r}", pointer=where)
    return v


def _str_list(v: Any, where: str) -> list[str]:
    if not isinstance(v, (list, tuple)):
        raise InputError(f"expected a list of strings, got {type(v).__name__}", pointer=where)
    return [_str(x, f"{where}/{i}") for i, x in enumerate(v)]


def _any(v: Any, where: str) -> Any:
    return thaw(v)


def _schema_map(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, Mapping):
        raise InputError(f"expected an object of schemas, got {type(v).__name__}", pointer=where)
    return {k: dump_schema(s, f"{where}/{escape_token(k)}") for k, s in v.items()}


def _schema_list(v: Any, where: str) -> list[Any]:
    if not isinstance(v, (list, tuple)):
        raise InputError(f"expected a list of schemas, got {type(v).__name__}", pointer=where)
    return [dump_schema(s, f"{where}/{i}") for i, s in enumerate(v)]


def _type(v: Any, where: str) -> str:
    return enum_upper(v, TYPE_NAMES, where)


#: ``types.Schema`` fields in declaration order: (field name, alias, converter).
SCHEMA_FIELDS: tuple[tuple[str, str, Callable[[Any, str], Any]], ...] = (
    ("additional_properties", "additionalProperties", _any),
    ("defs", "defs", _schema_map),
    ("ref", "ref", _str),
    ("any_of", "anyOf", _schema_list),
    ("default", "default", _any),
    ("description", "description", _str),
    ("enum", "enum", _str_list),
    ("example", "example", _any),
    ("format", "format", _str),
    ("items", "items", lambda v, w: dump_schema(v, w)),
    ("max_items", "maxItems", _int),
    ("max_length", "maxLength", _int),
    ("max_properties", "maxProperties", _int),
    ("maximum", "maximum", _float),
    ("min_items", "minItems", _int),
    ("min_length", "minLength", _int),
    ("min_properties", "minProperties", _int),
    ("minimum", "minimum", _float),
    ("nullable", "nullable", _bool),
    ("pattern", "pattern", _str),
    ("properties", "properties", _schema_map),
    ("property_ordering", "propertyOrdering", _str_list),
    ("required", "required", _str_list),
    ("title", "title", _str),
    ("type", "type", _type),
)
_BY_KEY = {k: f for f in SCHEMA_FIELDS for k in (f[0], f[1])}


def dump_schema(schema: Any, where: str = "") -> dict[str, Any]:
    """The wire form of a schema: ``types.Schema.model_validate(schema)
    .model_dump(exclude_none=True)`` without importing google-genai.

    >>> dump_schema({"type": "object", "properties": {"b": {"type": "string"}, "a": {"maxItems": 2.0}}})
    {'properties': {'b': {'type': 'STRING'}, 'a': {'max_items': 2}}, 'type': 'OBJECT'}
    """
    if not isinstance(schema, Mapping):
        raise InputError(f"a schema must be an object, got {type(schema).__name__}", pointer=where)
    given: dict[str, Any] = {}
    for key, value in schema.items():
        field = _BY_KEY.get(key)
        if field is None:
            raise InputError(
                f"schema key {key!r} has no field in google-genai's types.Schema "
                "(send the schema verbatim as Tool.extra['parameters_json_schema'])",
                pointer=where,
            )
        if field[0] in given:
            raise InputError(f"schema gives {field[0]!r} twice (name and alias)", pointer=where)
        given[field[0]] = (key, value)
    out: dict[str, Any] = {}
    for name, _alias, convert in SCHEMA_FIELDS:
        if name in given:
            key, value = given[name]
            if value is not None:
                out[name] = convert(value, f"{where}/{escape_token(key)}")
    return out
