"""Which types a read serves straight from the stored JSON, and the SQL that fetches it.

A type whose hooks add nothing at read time (no computed fields, no hidden rows) and that is
not a tree node (position and ancestors are computed) answers a GET with its stored JSON bytes
exactly as written: the API's fast lane fetches them with one statement."""

from __future__ import annotations

from fonds.records.hooks import Hooks
from fonds.records.registry import RecordType


def stored_json_is_the_answer(record_type: RecordType) -> bool:
    hooks = type(record_type.hooks)
    tree = record_type.tree
    return hooks.read_extras is Hooks.read_extras and hooks.hidden is Hooks.hidden and (tree is None or tree.node != record_type.name)


def json_by_id_sql(record_type: RecordType) -> str | None:
    """A scalar subquery (parameters: id, then repository id for repository-scoped types)
    selecting the record's stored JSON, or None when the type's reads need more than that."""
    if not stored_json_is_the_answer(record_type):
        return None
    scoped = " AND repo_id = ?" if record_type.repo_scoped else ""
    return f'SELECT json FROM "{record_type.name}" WHERE id = ?{scoped}'
