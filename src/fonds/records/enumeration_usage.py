"""Where the controlled value lists are used: which properties of which record types hold a value
of a list (the `relationships` of ArchivesSpace's enumeration JSON), how many records use a
value, and moving those records from one value to another (a rename or a merge).

Everything is derived from the schemas' `x-enum` keywords, so a new type's lists are found
without being declared here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import orjson
from sqlalchemy import func, select

from fonds.records.rewrite import rewrite_records
from fonds.records.schemas import SchemaSet

CHUNK = 500


@dataclass
class _Found:
    """What one walk of the schemas found: properties per list, and lists per schema."""

    properties: dict[str, list[str]] = field(default_factory=dict)
    lists: dict[str, set[str]] = field(default_factory=dict)


def _collect(schemas: SchemaSet, schema: dict, found: _Found, into: set[str], seen: set[int], prop: str | None = None) -> None:
    if id(schema) in seen:
        return
    seen.add(id(schema))
    for option in schema.get("oneOf", ()):
        _collect(schemas, option, found, into, seen, prop)
    schema = schemas.deref(schema)
    name = schema.get("x-enum")
    if name:
        into.add(name)
        if prop and prop not in found.properties.setdefault(name, []):
            found.properties[name].append(prop)
    for key, definition in schema.get("properties", {}).items():
        _collect(schemas, definition, found, into, seen, key)
    if isinstance(schema.get("items"), dict):
        _collect(schemas, schema["items"], found, into, seen, prop)


class ListUsage:
    """The uses of every list by the registered record types."""

    def __init__(self, schemas: SchemaSet, registry):
        self.schemas, self.registry = schemas, registry
        found = _Found()
        self.types_using: dict[str, list] = {}
        for record_type in registry:
            names: set[str] = set()
            _collect(schemas, schemas[record_type.name], found, names, set())
            for name in names:
                self.types_using.setdefault(name, []).append(record_type)
        self.properties = found.properties

    def all_list_names(self) -> set[str]:
        return set(self.types_using)

    def relationships(self, name: str) -> list[str]:
        """The properties holding values of the list, as ArchivesSpace names them."""
        return list(self.properties.get(name, ()))

    def _candidates(self, conn, name: str, value: str) -> Iterator[tuple[object, list[int]]]:
        """Per record type, the ids of records whose JSON holds `value` as a string somewhere
        (a cheap filter in the database; the schema walk then decides)."""
        needle = orjson.dumps(value)
        for record_type in self.types_using.get(name, ()):
            table = conn.info["fonds_tables"][record_type.name]
            statement = select(table.c.id, table.c.json).where(_holds(conn, table.c.json, needle)).order_by(table.c.id)
            ids = [
                row.id
                for row in conn.execute(statement)
                if _replace(self.schemas, self.schemas[record_type.name], orjson.loads(row.json), name, value, None)
            ]
            if ids:
                yield record_type, ids

    def count(self, conn, name: str, value: str) -> int:
        """How many records hold `value` in a property of list `name`."""
        return sum(len(ids) for _, ids in self._candidates(conn, name, value))

    def migrate(self, conn, name: str, old: str, new: str, *, now, username: str) -> int:
        """Move every record holding `old` (in a property of list `name`) to `new`: each is
        rewritten, its lock_version moves on and the change is logged. Returns how many."""
        moved = 0
        schemas = self.schemas
        for record_type, ids in list(self._candidates(conn, name, old)):
            schema = schemas[record_type.name]
            rewrite_records(
                conn, record_type, ids, now=now, username=username, edit=lambda doc, s=schema: _replace(schemas, s, doc, name, old, new)
            )
            moved += len(ids)
        return moved


def _holds(conn, column, needle: bytes):
    """The stored JSON bytes contain `needle` (SQLite's LIKE does not match BLOBs; PostgreSQL's
    bytea LIKE does, with `\\` escaping)."""
    if conn.dialect.name == "sqlite":
        return func.instr(column, needle) > 0
    escaped = needle.replace(b"\\", b"\\\\").replace(b"%", b"\\%").replace(b"_", b"\\_")
    return column.op("LIKE")(b"%" + escaped + b"%")


def _replace(schemas: SchemaSet, schema: dict, doc, name: str, old: str, new: str | None) -> int:
    """Replace `old` by `new` wherever the schema puts list `name` (only count when `new` is None)."""
    hits = 0

    def visit(schema: dict, node, put: Callable[[object], None]) -> None:
        nonlocal hits
        if "oneOf" in schema:
            schema = (schemas.branch_for(schema["oneOf"], node.get("jsonmodel_type")) if isinstance(node, dict) else None) or {}
        schema = schemas.deref(schema)
        if schema.get("x-enum") == name and node == old:
            hits += 1
            if new is not None:
                put(new)
        elif isinstance(node, dict):
            props = schema.get("properties", {})
            for key in [k for k in node if k in props]:
                visit(props[key], node[key], lambda value, key=key: node.__setitem__(key, value))
        elif isinstance(node, list) and isinstance(schema.get("items"), dict):
            for index, item in enumerate(node):
                visit(schema["items"], item, lambda value, index=index: node.__setitem__(index, value))

    visit(schema, doc, lambda value: None)
    return hits
