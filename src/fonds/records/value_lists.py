"""The controlled value lists as the validator sees them: read from the database once and kept
in the process, read again when any worker has changed a list (each change moves the one
generation number on; comparing it costs one indexed query per validated record)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from importlib import resources

from sqlalchemy import select, update

from fonds.storage import driver

GENERATION_ROW = 1
GENERATION_SQL = f"SELECT generation FROM enumeration_generation WHERE id = {GENERATION_ROW}"


@dataclass(frozen=True)
class ValueList:
    name: str
    editable: bool
    # Suppressed values stay valid (ArchivesSpace hides them from forms, not from records).
    values: frozenset[str]
    ordered: tuple[str, ...]


@dataclass(frozen=True)
class Snapshot:
    generation: int
    lists: dict[str, ValueList]

    def get(self, name: str) -> ValueList | None:
        return self.lists.get(name)


def generation(conn) -> int:
    # Read in every write transaction: on the driver's cursor it costs a fraction of a
    # statement SQLAlchemy executes.
    return driver.scalar(conn, GENERATION_SQL)


def bump_generation(conn) -> None:
    """Mark the lists changed (in the writing transaction). On PostgreSQL the row lock also makes
    concurrent changes to the lists wait for each other."""
    table = conn.info["fonds_tables"]["enumeration_generation"]
    conn.execute(update(table).where(table.c.id == GENERATION_ROW).values(generation=table.c.generation + 1))


def read_lists(conn) -> dict[str, ValueList]:
    tables = conn.info["fonds_tables"]
    lists, values = tables["enumeration"], tables["enumeration_value"]
    rows = conn.execute(
        select(lists.c.name, lists.c.editable, values.c.value)
        .select_from(lists.outerjoin(values, values.c.enumeration_id == lists.c.id))
        .order_by(lists.c.id, values.c.position, values.c.value)
    ).all()
    found: dict[str, tuple[bool, list[str]]] = {}
    for row in rows:
        entry = found.setdefault(row.name, (bool(row.editable), []))
        if row.value is not None:
            entry[1].append(row.value)
    return {name: ValueList(name, editable, frozenset(ordered), tuple(ordered)) for name, (editable, ordered) in found.items()}


class ListCache:
    """`refresh()` once per validated record, then `snapshot` (no query) at each checked value."""

    def __init__(self, db):
        self.db = db
        self._lock = threading.Lock()
        self.snapshot = Snapshot(-1, {})

    def refresh(self, conn=None) -> Snapshot:
        """The current lists; `conn`: read in the caller's transaction (a write checking them)."""
        if conn is None:
            with self.db.read() as conn:
                return self.refresh(conn)
        current = generation(conn)
        if current == self.snapshot.generation:
            return self.snapshot
        lists = read_lists(conn)
        with self._lock:
            if current > self.snapshot.generation:
                self.snapshot = Snapshot(current, lists)
        return self.snapshot

    def matches(self, generation: int) -> bool:
        """Whether the kept lists are those of `generation` (GENERATION_SQL read in a transaction)."""
        return generation == self.snapshot.generation


def load_seed() -> dict[str, dict]:
    """The lists a new database starts with (ArchivesSpace's, with its list ids)."""
    return json.loads((resources.files("fonds.records") / "enumerations.json").read_text())["enumerations"]
