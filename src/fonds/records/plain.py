"""A record's answer is its stored JSON bytes with the fields its type computes at read time
spliced in, unparsed: read fields are never stored (`Hooks.read_fields`), so no key repeats.

A type whose hooks state those fields in SQL too (`Hooks.read_sql`; a type without `read_extras`
has none) and that hides no rows has its answer read by one statement: the API's fast lane runs
it. A tree node's `position` and `ancestors` are stated in SQL by `trees.node_fields.read_sql`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from fonds.records.hooks import Hooks
from fonds.records.registry import RecordType, Registry
from fonds.records.trees import node_fields

# The alias of the record's table in the statements below; `Hooks.read_sql` correlates on it.
ROW = "r"


def splice_fields(body: bytes, fields: bytes) -> bytes:
    """Insert `fields` (`"name":value,…`, JSON text without braces) first into an object's JSON."""
    if not fields:
        return body
    return b"{" + fields + (b"," + body[1:] if len(body) > 2 else b"}")


def splice(body: bytes, extra: dict | None) -> bytes:
    """Insert computed fields into stored JSON bytes without parsing them."""
    return splice_fields(body, orjson.dumps(extra)[1:-1]) if extra else body


@dataclass(frozen=True)
class StoredAnswer:
    """What a statement selects for a record's answer: `columns` (its stored JSON, then the JSON
    text of each read field) over the record's table aliased ROW, and how they join."""

    columns: str
    # `"name":` of each read field, in the order of `columns`.
    names: tuple[bytes, ...]
    # `columns` each named (answer_0, answer_1, …), for a subquery's select list.
    aliased: str

    def body(self, values: Sequence) -> bytes | None:
        """The answer from the values of `columns` (None when one is missing)."""
        stored, fields = values[0], values[1:]
        if stored is None or None in fields:
            return None
        return splice_fields(stored, b",".join(name + value.encode() for name, value in zip(self.names, fields)))


def stored_answer(record_type: RecordType, dialect: str, registry: Registry) -> StoredAnswer | None:
    """How one statement reads the type's answers on `dialect`, or None when a read needs Python."""
    hooks = type(record_type.hooks)
    if hooks.hidden is not Hooks.hidden:
        return None
    fields = {} if hooks.read_extras is Hooks.read_extras else record_type.hooks.read_sql(dialect, ROW)
    if fields is None:
        return None
    tree = record_type.tree
    if record_type.is_tree_node:
        # After the type's own fields, as `RecordService.render` merges them.
        fields = {**fields, **node_fields.read_sql(dialect, tree, record_type.path, registry[tree.root].path, ROW)}
    selected = [f"{ROW}.json", *(f"({sql})" for sql in fields.values())]
    aliased = ", ".join(f"{column} AS answer_{n}" for n, column in enumerate(selected))
    return StoredAnswer(", ".join(selected), tuple(orjson.dumps(name) + b":" for name in fields), aliased)


def by_id_sql(record_type: RecordType, answer: StoredAnswer, first: str) -> str:
    """A statement selecting `first` (SQL), then `answer.columns` of one record (parameters: its id,
    then the repository id for repository-scoped types): no row when it is missing."""
    scoped = f" AND {ROW}.repo_id = ?" if record_type.repo_scoped else ""
    return f'SELECT {first}, {answer.columns} FROM "{record_type.name}" {ROW} WHERE {ROW}.id = ?{scoped}'
