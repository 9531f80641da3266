"""ArchivesSpace's advanced-query JSON (`aq`, `filter`; aspace-api §9.2) written as a Lucene
query string, which the one query translator (`fonds.search.query`) then parses."""

from __future__ import annotations

import re

import orjson

from fonds.errors import BadRequest

# Logical field names of ArchivesSpace's search definitions; others name index fields directly.
FIELD_NAMES = {"keyword": None, "creators": "creators_text", "subjects": "subjects_text", "published": "publish"}
SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
OPERATORS = ("AND", "OR", "NOT")


class _Malformed(Exception):
    pass


def escape(value: str) -> str:
    return SPECIAL.sub(r"\\\1", value)


def advanced_to_lucene(raw: str, parameter: str, *, literal: bool = False) -> str:
    """The Lucene form of an advanced query; 400 naming `parameter` when it is malformed."""
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest({parameter: [f"Not valid JSON: {exc}"]}) from None
    node = document.get("query", document) if isinstance(document, dict) else document
    try:
        return _node(node, literal, depth=0)
    except _Malformed as exc:
        raise BadRequest({parameter: [str(exc)]}) from None


def _node(node, literal: bool, depth: int) -> str:
    if not isinstance(node, dict):
        raise _Malformed("Each query must be a JSON object with a jsonmodel_type")
    if depth > 32:
        raise _Malformed("Queries are nested too deeply")
    kind = node.get("jsonmodel_type")
    builders = {
        "boolean_query": _boolean,
        "field_query": _field,
        "date_field_query": _date_field,
        "boolean_field_query": _boolean_field,
        "range_query": _range,
    }
    if kind not in builders:
        raise _Malformed(f"Unknown query type {kind!r} (expected one of {', '.join(builders)})")
    return builders[kind](node, literal, depth)


def _text(node: dict, key: str) -> str:
    value = node.get(key)
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise _Malformed(f"{node.get('jsonmodel_type')}: '{key}' must be a string or a number")
    return str(value)


def _field_name(node: dict) -> str | None:
    name = node.get("field")
    if not isinstance(name, str) or not name:
        raise _Malformed(f"{node.get('jsonmodel_type')}: 'field' is required")
    return FIELD_NAMES.get(name, name)


def _boolean(node: dict, literal: bool, depth: int) -> str:
    op = node.get("op")
    subqueries = node.get("subqueries")
    if op not in OPERATORS:
        raise _Malformed(f"boolean_query: 'op' must be one of {', '.join(OPERATORS)}")
    if not isinstance(subqueries, list) or not subqueries:
        raise _Malformed("boolean_query: 'subqueries' must be a non-empty list")
    parts = [f"({_node(q, literal, depth + 1)})" for q in subqueries]
    return f" {op} ".join(parts)


def _field(node: dict, literal: bool, depth: int) -> str:
    name = _field_name(node)
    prefix = f"{name}:" if name else ""
    if node.get("comparator") == "empty":
        if not name:
            raise _Malformed("field_query: 'empty' needs a field")
        clause = f"(*:* NOT {name}:*)"
    else:
        value = _text(node, "value").strip()
        if not value:
            raise _Malformed("field_query: 'value' must not be empty")
        if literal or node.get("literal"):
            clause = f'{prefix}"{value.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        else:
            clause = f"{prefix}({' '.join(escape(word) for word in value.split())})"
    return f"(*:* NOT {clause})" if node.get("negated") else clause


def _date_field(node: dict, literal: bool, depth: int) -> str:
    name = _field_name(node)
    comparator = node.get("comparator")
    if comparator == "empty":
        clause = f"(*:* NOT {name}:*)"
    else:
        value = _text(node, "value")
        if not DATE.match(value):
            raise _Malformed("date_field_query: 'value' must be a date (YYYY, YYYY-MM or YYYY-MM-DD)")
        bounds = {"greater_than": f"{{{value} TO *]", "lesser_than": f"[* TO {value}}}", "equal": f"[{value} TO {value}]"}
        if comparator not in bounds:
            raise _Malformed("date_field_query: 'comparator' must be greater_than, lesser_than, equal or empty")
        clause = f"{name}:{bounds[comparator]}"
    return f"(*:* NOT {clause})" if node.get("negated") else clause


def _boolean_field(node: dict, literal: bool, depth: int) -> str:
    value = node.get("value")
    if not isinstance(value, bool) and value not in ("true", "false"):
        raise _Malformed("boolean_field_query: 'value' must be true or false")
    return f"{_field_name(node)}:{str(value).lower()}"


def _range(node: dict, literal: bool, depth: int) -> str:
    low, high = node.get("from"), node.get("to")
    if low in (None, "") and high in (None, ""):
        raise _Malformed("range_query: give 'from', 'to' or both")
    low = "*" if low in (None, "") else escape(str(low))
    high = "*" if high in (None, "") else escape(str(high))
    return f"{_field_name(node)}:[{low} TO {high}]"
