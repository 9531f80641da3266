"""The base of per-type behaviour: `Hooks` (what a type may override) and `WriteContext` (what a
hook knows while one record is written).

Each record type gets one `Hooks` object in its declaration (`records/types/<area>.py`, users
and groups in `auth/types.py`); the generic record service calls these and never branches on
type names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fonds.errors import FieldErrors

if TYPE_CHECKING:
    import datetime

    from sqlalchemy import Connection, Row

    from fonds.records.registry import RecordType, Registry


@dataclass(slots=True)
class WriteContext:
    """What a hook may know and change while one record is written."""

    conn: Connection
    registry: Registry
    record_type: RecordType
    repo_id: int | None
    record_id: int
    uri: str
    existing: Row | None = None
    existing_doc: dict | None = None
    stale: bool = False
    columns: dict[str, Any] = field(default_factory=dict)
    # Request options a type understands (a group's `with_members`).
    options: dict[str, Any] = field(default_factory=dict)
    # Who writes and when: hooks that rewrite other records too (a moved subtree) stamp them alike.
    actor: str = ""
    now: datetime.datetime | None = None
    # The batch of new records this one is created in (records/writes.py; None on update): what
    # its records share, such as the next free tree positions (`batch.memo`), and `batch.flush()`
    # to write the rows derived so far before a hook reads the database for them.
    batch: Any = None

    @property
    def tables(self):
        return self.conn.info["fonds_tables"]

    def rewrite_side_effect(self, type_name: str, ids) -> None:
        """Records whose read form changed through this write get a new lock_version and a
        change-log row (the record being written gets its own anyway)."""
        from fonds.records.rewrite import rewrite_records

        ids = [i for i in ids if (type_name, i) != (self.record_type.name, self.record_id)]
        if ids:
            rewrite_records(self.conn, self.registry[type_name], ids, now=self.now, username=self.actor)


class Hooks:
    # A repository's records go when it goes.
    contains_repository_records = False
    # Fields `read_extras` computes at read time: never stored (nor filled with schema defaults).
    read_fields: tuple[str, ...] = ()
    # `derive` may read the rows of the records this one refers to: a batch writes those of its
    # own members first. False where it reads nothing of a batch member but what the batch
    # remembers of it (`batch.memo`), so a batch's new tree is written in one step, not a level
    # at a time.
    derive_reads_referenced_rows = True

    def list_filter(self, table):
        """A WHERE clause hiding rows from listings (None: show all)."""
        return None

    def can_delete(self, row) -> bool:
        return True

    def hidden(self, row) -> bool:
        """A record the system keeps for itself: not readable, changeable or deletable over HTTP."""
        return False

    def check(self, doc: dict) -> FieldErrors:
        """Rules a JSON Schema cannot express; returns field errors."""
        return {}

    def prepare_batch(self, batch, docs: list[dict]) -> None:
        """Called once per batch of new records (records/writes.py), with this type's docs, after
        their refs are checked and before any is derived: work `derive` would otherwise do a
        record at a time (lookups, side records) done for all at once, kept in `batch.memo`."""

    def derive(self, ctx: WriteContext, doc: dict) -> None:
        """Fill server-computed fields and `ctx.columns` before the record is stored; may also
        write the type's own side tables, in the same transaction. On create the record's id
        and URI are allocated but its row is written after `derive` (with the rest of its batch),
        so a side table written here must not hold a foreign key to the record's table; the
        records it refers to (batch members included, unless `derive_reads_referenced_rows` is
        False) are stored already."""

    def derive_new(self, doc: dict) -> tuple[dict, bool] | None:
        """A new record's server-computed fields, when they need nothing but the record itself:
        its columns, and whether the record now differs from what the client sent (`stale`).
        None (the default): only `derive`, with its write context, can. A type that gives them
        derives a new record with this alone (a tree node is placed besides, by the write path),
        and has no `prepare_batch` or `after_save`: a batch import then derives its records where
        it validates them (records/import_validation.py) and the server stores their JSON as it
        comes back."""
        return None

    def after_save(self, service, ctx: WriteContext, doc: dict, actor) -> None:
        """Checks and companion records once the row is stored (`ctx.existing` is None on create):
        the rule that an administrator remains."""

    def seed_repository(self, service, ctx: WriteContext, repository: dict, actor) -> None:
        """Records of this type every new repository starts with (`ctx` is the repository's
        write: `ctx.record_id` is its id): its standard groups."""

    def on_delete(self, conn: Connection, rows: list[Row], deleted: set[tuple[str, int]]) -> None:
        """Called with the rows of this type about to be deleted (all of `deleted` goes too)."""

    def read_extras(self, conn: Connection, rows: list[Row]) -> list[dict] | None:
        """Fields computed at read time and spliced into the stored JSON (None: nothing)."""
        return None

    def read_sql(self, dialect: str, row: str) -> dict[str, str] | None:
        """The fields of `read_extras` as SQL on `dialect` (None: not expressible): each a scalar
        subquery correlated on the record's row (table alias `row`) yielding the JSON text that
        `read_extras` gives, so one statement reads a whole answer (`fonds.records.plain`)."""
        return None
