"""SQLite: the rows a bulk write inserts counted once they are in, grouped by block and band,
rather than one at a time by the insert triggers of the record counts (storage/counts.py) and
sibling bands (storage/siblings.py).

A SQLite trigger runs as a sub-program for every row it fires on. Counting an archival object's
row (its block, its repository's total, its sibling band: three upserts) took 12-13 µs of the
~20 µs its insert took (100,000 rows inserted 256 a statement), all under the one write lock.
So a write of many rows of a table inserts them while counting_deferred holds a row, which the
insert triggers' WHEN clause looks for (they still start for each row, to test it: about half
their cost, docs/operations.md), then adds them up: one upsert per block, total and band. The
row is deleted before the counts are added, in the same transaction, and never committed: no
other connection sees it (SQLite has one writer at a time). PostgreSQL's triggers count each
statement's rows grouped already: nothing to defer."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy import Connection

from fonds.storage import counts, driver, siblings

# Fewer rows than this are counted by the triggers: deferring costs a few statements a write
# (the row in counting_deferred, the upserts), the triggers ~6 µs a row.
LEAST_ROWS = 16


@contextlib.contextmanager
def counted_after(conn: Connection, table: str, rows: list[dict], tree_root: str | None) -> Iterator[None]:
    """Insert `rows` of the record table `table` (complete rows: id, repo_id, and for a tree's
    nodes their root column `tree_root`, parent_id and position) within this, and they are
    counted as the triggers would have counted them. A failed insert is not counted: its
    transaction is rolled back (every write's is, on any error)."""
    if conn.dialect.name != "sqlite" or len(rows) < LEAST_ROWS:
        yield
        return
    driver.execute(conn, "INSERT INTO counting_deferred (id) VALUES (1)")
    yield  # on an error, the row goes with the rolled back transaction
    driver.execute(conn, "DELETE FROM counting_deferred")
    counts.add(conn, table, [(row["repo_id"], row["id"]) for row in rows])
    if tree_root is not None:
        siblings.add(conn, table, [(row[tree_root], row["parent_id"], row["position"]) for row in rows])
