"""The change log: one row per record created, updated or deleted, appended in the transaction
that made the change. The search indexer reads it after the sequence it has applied; a search
reads its head to know which changes it must be able to see.

Sequence numbers must become visible in order: an indexer that has read past sequence 11 never
looks at 10 again, so 10 must not commit after 11. SQLite has one writer at a time, which gives
that for free; on PostgreSQL every appending transaction takes one advisory lock, held until it
commits, right before it appends (late in the transaction, so the serialised part is short)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, delete, func, insert, select

from fonds.storage import driver
from fonds.storage.records import insert_rows

# An arbitrary constant naming the advisory lock (PostgreSQL's locks are named by integers).
APPEND_LOCK_KEY = 7_420_015


@dataclass(frozen=True)
class Change:
    seq: int
    record_type: str
    record_id: int
    repo_id: int | None
    uri: str
    op: str


COLUMNS = ["record_type", "record_id", "repo_id", "uri", "op", "at"]


_APPEND_LOCK = ("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK_KEY,))


def _take_append_lock(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        driver.rows(conn, *_APPEND_LOCK)


def append(conn: Connection, changes: list[dict]) -> None:
    """Append change rows (record_type, record_id, repo_id, uri, op, at), in bounded statements;
    on PostgreSQL the lock first (a write's few rows: in the statement that appends them)."""
    if not changes:
        return
    first = _APPEND_LOCK if conn.dialect.name == "postgresql" else None
    insert_rows(conn, conn.info["fonds_tables"]["change_log"], changes, first=first)


def append_from(conn: Connection, query) -> None:
    """Append the change rows `query` selects (the columns of COLUMNS, in order): one statement
    however many records a moved subtree holds."""
    _take_append_lock(conn)
    conn.execute(insert(conn.info["fonds_tables"]["change_log"]).from_select(COLUMNS, query))


def read_after(conn: Connection, seq: int, limit: int) -> list[Change]:
    """The next `limit` changes after `seq`, oldest first."""
    table = conn.info["fonds_tables"]["change_log"]
    rows = conn.execute(
        select(table.c.seq, table.c.record_type, table.c.record_id, table.c.repo_id, table.c.uri, table.c.op)
        .where(table.c.seq > seq)
        .order_by(table.c.seq)
        .limit(limit)
    )
    return [Change(*row) for row in rows]


def head(conn: Connection) -> int:
    """The sequence of the last committed change (0 when there is none)."""
    table = conn.info["fonds_tables"]["change_log"]
    return conn.execute(select(func.coalesce(func.max(table.c.seq), 0))).scalar_one()


def first(conn: Connection) -> int | None:
    """The oldest sequence still kept (None when the log is empty)."""
    table = conn.info["fonds_tables"]["change_log"]
    return conn.execute(select(func.min(table.c.seq))).scalar_one()


def prune(conn: Connection, through: int) -> int:
    """Delete the changes up to and including `through`, always keeping the newest row (its
    sequence is what tells an index restored from an old backup that it missed pruned changes)."""
    table = conn.info["fonds_tables"]["change_log"]
    keep = head(conn)
    return conn.execute(delete(table).where(table.c.seq <= min(through, keep - 1))).rowcount
