"""Statements that bind a list of values (`IN (...)`) run in bounded chunks.

PostgreSQL takes at most 65,535 bound parameters in one statement and SQLite (before 3.32)
999; a record with tens of thousands of refs, or a group with as many members, must not reach
either limit. Every statement binding a caller's list of ids goes through these helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from sqlalchemy import ARRAY, Connection, Executable, Row, any_, bindparam
from sqlalchemy.sql import ColumnElement

# What a chunk's statement is: a statement, or a statement built once (an expanding `bindparam`
# for the list) with the parameters of this chunk.
Chunked = Executable | tuple[Executable, dict]

# Small enough for any backend's parameter limit even with a few other parameters beside.
CHUNK = 500
# The lengths an IN list is padded to (its last value repeated, which selects nothing more). Each
# length is a statement of its own to the database: SQLite keeps up to 128 prepared statements a
# connection (about 16 KB for 100 values, 30 KB for 200), and lists of every length from 1 to 500
# filled those caches with one-off statements: after a 100,000-record load and its indexing,
# emptying them gave back 9 MB. A few lengths are prepared once and found again.
IN_LENGTHS = (1, 2, 4, 8, 16, 32, 64, 128, 256, CHUNK)


def chunked(items: Iterable, size: int | None = None) -> Iterator[list]:
    """The items in lists of at most `size` (default `CHUNK`), in order (an empty input gives no chunk)."""
    size = size or CHUNK
    batch: list = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def padded(values: list) -> list:
    """`values` (not empty, at most `CHUNK`) lengthened to the next of `IN_LENGTHS` by repeating the last."""
    length = next(n for n in IN_LENGTHS if n >= len(values))
    return values + [values[-1]] * (length - len(values))


def in_chunks(items: Iterable) -> Iterator[list]:
    """The items in chunks for `IN (...)` lists: `chunked`, each chunk `padded`."""
    return (padded(chunk) for chunk in chunked(items))


def select_in(conn: Connection, statement_for: Callable[[list], Chunked], items: Iterable) -> list[Row]:
    """Every row of `statement_for(chunk)` over the chunks of `items` (rows of one chunk after another)."""
    rows: list[Row] = []
    for chunk in in_chunks(items):
        rows += conn.execute(*_with_parameters(statement_for(chunk))).all()
    return rows


class AllAtOnce(list):
    """The values `select_any` gives its statement on PostgreSQL: all of them, for `is_in` to bind
    as one array."""


def is_in(column, values: list) -> ColumnElement:
    """`column IN values` in a statement of `select_any`: on PostgreSQL `column = ANY(array)` of
    all of them, one short statement whatever their number."""
    if isinstance(values, AllAtOnce):
        return column == any_(bindparam(None, list(values), type_=ARRAY(column.type)))
    return column.in_(values)


def select_any(conn: Connection, statement_for: Callable[[list], Chunked], items: Iterable) -> list[Row]:
    """`select_in` for a statement that selects by `is_in(column, values)`: on PostgreSQL it runs
    once, with the values as one array. An IN list of 500 placeholders is a statement too long
    for psycopg to keep converted, so it was parsed at each call, after SQLAlchemy expanded its
    parameters one by one: a third of a reindex's CPU on PostgreSQL."""
    if conn.dialect.name != "postgresql":
        return select_in(conn, statement_for, items)
    values = AllAtOnce(items)
    return conn.execute(*_with_parameters(statement_for(values))).all() if values else []


def execute_in(conn: Connection, statement_for: Callable[[list], Chunked], items: Iterable) -> int:
    """Run `statement_for(chunk)` (an UPDATE or DELETE) for each chunk of `items`; returns the rows affected."""
    return sum(conn.execute(*_with_parameters(statement_for(chunk))).rowcount for chunk in in_chunks(items))


def _with_parameters(found: Chunked) -> tuple[Executable, dict | None]:
    return found if isinstance(found, tuple) else (found, None)
