"""The link table: the refs records hold, one row each (`record_link`), read by source and by target.

SQLite: a bulk write's links go to `record_link_recent` first, merged into `record_link` in bulk.
Each link of a bulk load to a subject, an agent or a container lands on a page of its own of
`record_link`'s index by target (the targets are many, and come in no order), and every import
wrote each such page to the write-ahead log again, and the checkpoints copied it back: at a
million records that index was more than a third of the pages each import logged. The recent
links have no index by target: an import appends them (and to their index by source); merged
`RECENT_MERGE_AT` at a time, in one transaction, the index's pages take their links together.
1,000,000-record bench loads on SQLite, alternating with the code before (a slow stretch of this
host, CPU probe 158-265 ms): 11,645-12,698 records/s (mean 12,176, six loads) against
10,098-12,312 (mean 11,235); the server's CPU 134-145 µs a record against 141-169; the two
processes writing imports wrote 6.5-6.7 GB instead of 13.3-13.5, in 2.6 million writes instead of 5.8.

The recent links are merged when a bulk write leaves `RECENT_MERGE_AT` of them, and when the
imports stop (`storage.statistics`, before the tables' statistics are gathered); the search
indexer merges what is left before it applies changes. Until then every read of links, by
source or by target, reads both tables (`readable`: on SQLite a view of both; a read by target
scans the recent links, at most `RECENT_MERGE_AT`). While recent links wait, every link written
goes after them, so that a link's id still tells the order links were written in (a digital
object's `linked_instances`), merged or not. PostgreSQL meets its bulk load target with one
table: its recent table stays empty."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from sqlalchemy import Column, Connection, MetaData, Table

from fonds.storage import driver
from fonds.storage.records import insert_values, placeholder, row_reader, rows_where_in, where_in

LINK_COLUMNS = ("source_type", "source_id", "field", "path", "target_type", "target_id")
RECENT = "record_link_recent"
# SQLite: every link, merged and recent (created by migration 0018).
VIEW = "record_link_all"
# Recent links a bulk write merges at most. More makes fewer merges, each taking more of the
# index's pages together, and a read by target scans them all meanwhile: 250,000 bought nothing
# measurable (a 1,000,000-record load, 11,592 and 11,956 records/s against 11,645 and 11,975).
RECENT_MERGE_AT = 100_000
# Set on a connection whose writes are bulk writes (storage.db.Database.bulk_write).
BULK = "fonds_bulk_links"


def readable(conn: Connection) -> Table:
    """The table to read links from: every link, merged or recent."""
    table = conn.info["fonds_tables"]["record_link"]
    return _view(table) if conn.dialect.name == "sqlite" else table


def readable_name(dialect: str) -> str:
    """`readable`'s name, for SQL written by hand."""
    return VIEW if dialect == "sqlite" else "record_link"


@functools.cache
def _view(table: Table) -> Table:
    return Table(VIEW, MetaData(), *(Column(c.name, c.type, primary_key=c.primary_key) for c in table.columns))


def parts(conn: Connection) -> list[Table]:
    """The tables holding links: a query that must read each on its own (ordered and limited,
    say, from an index: the view would read and sort every row) reads these."""
    tables = conn.info["fonds_tables"]
    return [tables["record_link"], tables[RECENT]] if conn.dialect.name == "sqlite" else [tables["record_link"]]


def replace_links(
    conn: Connection, tables, *, source_type: str, source_id: int, links: list[tuple[str, str, str, int]], fresh: bool = False
) -> None:
    """Record the refs a record holds: (field pattern, concrete path, target type, target id).
    `fresh`: the record was just created, so it holds no links yet."""
    if not fresh:
        for table in parts(conn):
            where = f"source_type = {placeholder(conn, table, 'source_type')} AND source_id = {placeholder(conn, table, 'source_id')}"
            driver.execute(conn, f"DELETE FROM {table.name} WHERE {where}", (source_type, source_id))
    insert_links(conn, tables, [(source_type, source_id, link) for link in links])


def insert_links(conn: Connection, tables, links: list[tuple[str, int, tuple[str, str, str, int]]]) -> None:
    """Record refs of many records: (source type, source id, (field pattern, path, target type, target id))."""
    if not links:
        return
    values = [(s, i, f, p, t, target) for s, i, (f, p, t, target) in links]
    if conn.dialect.name != "sqlite":
        insert_values(conn, tables["record_link"], LINK_COLUMNS, values)
        return
    bulk = conn.info.get(BULK, False)
    if not bulk and driver.scalar(conn, _RECENT_LAST) is None:
        insert_values(conn, tables["record_link"], LINK_COLUMNS, values)
        return
    merged_last, recent_last, recent_first = driver.rows(conn, _EDGES)[0]
    # After every link written yet, merged or recent (ids that the merge keeps).
    start = max(merged_last or 0, recent_last or 0) + 1
    numbered = [(start + n, *value) for n, value in enumerate(values)]
    insert_values(conn, tables[RECENT], ("id", *LINK_COLUMNS), numbered)
    if bulk and start + len(values) - (recent_first or start) >= RECENT_MERGE_AT:
        merge_recent(conn)


_RECENT_LAST = f"SELECT max(id) FROM {RECENT}"
_EDGES = f"SELECT (SELECT max(id) FROM record_link), (SELECT max(id) FROM {RECENT}), (SELECT min(id) FROM {RECENT})"
_COLUMNS = ", ".join(("id", *LINK_COLUMNS))


def merge_recent(conn: Connection) -> int:
    """Move the recent links into `record_link` (SQLite, in the caller's write transaction); how many."""
    if conn.dialect.name != "sqlite":
        return 0
    moved = driver.execute(conn, f"INSERT INTO record_link ({_COLUMNS}) SELECT {_COLUMNS} FROM {RECENT} ORDER BY id")
    if moved:
        driver.execute(conn, f"DELETE FROM {RECENT}")
    return moved


def recent_waiting(conn: Connection) -> bool:
    """Whether links wait to be merged."""
    return conn.dialect.name == "sqlite" and driver.scalar(conn, _RECENT_LAST) is not None


def merge_recent_of(db) -> int:
    """Merge the links waiting in `db`, if any, in a write transaction of its own."""
    if db.kind != "sqlite":
        return 0
    with db.read() as conn:
        if not recent_waiting(conn):
            return 0
    with db.write() as conn:
        return merge_recent(conn)


def links_to(conn: Connection, targets: Iterable[tuple[str, int]]) -> list[tuple]:
    """Every link pointing at one of `targets` ((type, id) pairs), as `StoredRow`s."""
    table = readable(conn)
    by_type: dict[str, list[int]] = {}
    for target_type, target_id in targets:
        by_type.setdefault(target_type, []).append(target_id)
    names = tuple(column.name for column in table.columns)
    read = row_reader(conn, table, names)
    found: list[tuple] = []
    for target_type, ids in by_type.items():
        found += map(read, rows_where_in(conn, table, names, {"target_type": target_type}, "target_id", ids))
    return found


def delete_links_of(conn: Connection, record_type: str, ids: list[int]) -> None:
    """Delete the links from and to the records `ids` of `record_type`."""
    for table in parts(conn):
        for equal, name in (({"source_type": record_type}, "source_id"), ({"target_type": record_type}, "target_id")):
            for statement, parameters in where_in(conn, table, f"DELETE FROM {table.name} WHERE ", equal, name, ids):
                driver.execute(conn, statement, parameters)
