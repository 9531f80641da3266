"""Row-level operations shared by every record table: insert, rewrite, fetch, delete (the link
table's: storage/links.py). Callers pass the open connection of their transaction."""

from __future__ import annotations

import collections
import datetime
import functools
import operator
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from itertools import chain

from sqlalchemy import Connection, LargeBinary, Table
from sqlalchemy.sql import sqltypes

from fonds.storage import driver
from fonds.storage.chunks import in_chunks


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0, tzinfo=None)


def iso(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def allocate_ids(conn: Connection, table: Table, count: int) -> list[int]:
    """`count` fresh ids for new rows of `table`, taken before the rows are written (a record's
    URI, part of its JSON, needs its id). PostgreSQL: from the id sequence, so concurrent writers
    never collide. SQLite: past the highest id ever handed out (AUTOINCREMENT's counter), which is
    safe because a write transaction holds the database's only write lock from its BEGIN
    IMMEDIATE; rows inserted with these ids move the counter on."""
    if count <= 0:
        return []
    name = conn.dialect.identifier_preparer.quote(table.name)
    if conn.dialect.name == "postgresql":
        rows = driver.rows(conn, "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", (name, count))
        return sorted(row[0] for row in rows)
    last = driver.scalar(
        conn,
        f"SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), coalesce((SELECT max(id) FROM {name}), 0))",
        (table.name,),
    )
    return list(range(last + 1, last + 1 + count))


def reserve_ids(conn: Connection, table: Table, count: int) -> list[int]:
    """`allocate_ids`, for rows written by a later transaction: once this one commits, no other
    writer is handed these ids (SQLite: AUTOINCREMENT's counter is moved past them; PostgreSQL's
    sequence never hands an id out twice). Ids of rows never written are skipped, as a rolled
    back insert's are."""
    ids = allocate_ids(conn, table, count)
    if ids and conn.dialect.name == "sqlite":
        params = (ids[-1], table.name)
        if driver.execute(conn, "UPDATE sqlite_sequence SET seq = ? WHERE name = ?", params) == 0:
            driver.execute(conn, "INSERT INTO sqlite_sequence (seq, name) VALUES (?, ?)", params)
    return ids


def insert_rows(conn: Connection, table: Table, rows: list[dict], *, first: tuple[str, tuple] | None = None) -> None:
    """Insert complete rows (ids included; every row holds the keys of the first): `insert_values`."""
    if not rows:
        return
    names = tuple(rows[0])
    if len(names) == 1:
        values = [(row[names[0]],) for row in rows]
    else:
        values = list(map(operator.itemgetter(*names), rows))
    insert_values(conn, table, names, values, first=first)


# PostgreSQL: a COPY takes two round trips (the statement, then its rows), an INSERT one; fewer
# rows than this (a group of creates, its change rows) go as one INSERT … VALUES. Measured on
# this host, 5 columns with an 800-byte bytea: 1 row COPY 202 / INSERT 104 µs, 4 rows 207 / 111,
# 16 rows 234 / 284 (binding each value costs more than COPY's binary rows).
COPY_LEAST_ROWS = 9


def insert_values(
    conn: Connection, table: Table, names: tuple[str, ...], values: list[tuple], *, first: tuple[str, tuple] | None = None
) -> None:
    """Insert rows given as tuples of the values of columns `names`, through the driver's cursor:
    SQLAlchemy's executemany spends more per row (parameter processing, execution context) than
    SQLite spends storing it. PostgreSQL: one statement per call (COPY, or INSERT for a few
    rows), so the statement-level counting triggers (storage/counts.py) run once, not once per
    row. Refusals come as SQLAlchemy's errors (`IntegrityError` for a unique key), as from `execute`.

    `first`: (statement, parameters) of a statement that must run before any row is inserted
    (a lock): on PostgreSQL, a few rows are inserted by the statement that runs it."""
    if not values:
        return
    values = _converted(_bind_processors(conn, table, names), values)
    if conn.dialect.name == "postgresql" and len(values) < COPY_LEAST_ROWS:
        first_sql, first_parameters = first or (None, ())
        statement = _few_rows_insert(conn, table, names, len(values), first_sql)
        driver.execute(conn, statement, (*first_parameters, *(value for row in values for value in row)))
        return
    if first is not None:
        driver.rows(conn, *first)
    quote = conn.dialect.identifier_preparer.quote
    columns = ", ".join(quote(name) for name in names)
    if conn.dialect.name == "postgresql":
        statement = f"COPY {quote(table.name)} ({columns}) FROM STDIN (FORMAT BINARY)"
        types = _column_types(conn, table, names)  # before the COPY: the connection is busy with it then
        with driver.cursor(conn, statement) as cursor, cursor.copy(statement) as copy:
            copy.set_types(types)
            for value in values:
                copy.write_row(value)
    else:
        into = f"INSERT INTO {quote(table.name)} ({columns})"
        with driver.cursor(conn, into) as cursor:
            most = _sqlite_rows_per_insert(cursor.connection, len(names))
            start = 0
            while start < len(values):
                size = most
                while size > len(values) - start:
                    size //= 2
                cursor.execute(_sqlite_insert(into, len(names), size), tuple(chain.from_iterable(values[start : start + size])))
                start += size


# SQLite: rows one INSERT carries at most. Many rows a statement, not executemany's one: the
# driver lets go of the interpreter while SQLite stores a statement's rows and takes it back for
# the next, and with one row a statement a writer waited for the interpreter after each row while
# another thread ran Python (up to its 5 ms switch interval; two threads, one spinning: 4,200 µs
# a row, against 38 with 250 rows a statement and 6-7 alone). A bulk load with 4 clients reading
# meanwhile: 4,638/4,674 records/s with one row a statement, 6,933/7,039 with 256 (alone: the
# same). Statements of 2^k rows only, so a table has few shapes to prepare (and cache).
SQLITE_ROWS_PER_INSERT = 256


def _sqlite_rows_per_insert(connection, columns: int) -> int:
    """The largest power of two up to SQLITE_ROWS_PER_INSERT whose rows' parameters the
    connection's SQLite takes in one statement."""
    limit = connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    size = SQLITE_ROWS_PER_INSERT
    while size > 1 and size * columns > limit:
        size //= 2
    return size


@functools.lru_cache(maxsize=256)
def _sqlite_insert(into: str, columns: int, rows: int) -> str:
    row = "(" + ",".join("?" * columns) + ")"
    return f"{into} VALUES {','.join([row] * rows)}"


def _once_per_table(make: Callable) -> Callable:
    """`make(conn, table, *shape)` worked out once per dialect, table and shape (each hashable):
    the statements, conversions and readers it makes depend on nothing else, and building one
    cost more than the database spends running it."""
    made: dict[tuple, object] = {}

    @functools.wraps(make)
    def once(conn: Connection, table: Table, *shape):
        key = (conn.dialect.name, table.name, *shape)
        try:
            return made[key]
        except KeyError:
            found = made[key] = make(conn, table, *shape)
            return found

    return once


@_once_per_table
def _few_rows_insert(conn: Connection, table: Table, names: tuple[str, ...], count: int, first: str | None) -> str:
    """PostgreSQL: `INSERT … VALUES` of `count` rows, built once per table, columns, count and
    `first`. With `first`, one statement running it, then inserting the rows: they come from a
    join with `first`'s materialised result, so none is made (nor its column defaults, a
    sequence's next value among them, computed) before `first` has run; each value is cast to its
    column's type, as a column of NULLs in a VALUES list would otherwise be text."""
    quote = conn.dialect.identifier_preparer.quote
    columns = ", ".join(quote(name) for name in names)
    into = f"INSERT INTO {quote(table.name)} ({columns})"
    if first is None:
        row = "(" + ", ".join(["%s"] * len(names)) + ")"
        return f"{into} VALUES {', '.join([row] * count)}"
    row = "(" + ", ".join(f"CAST(%s AS {name})" for name in _column_type_names(conn, table, names)) + ")"
    return f"WITH first AS MATERIALIZED ({first}) {into} SELECT v.* FROM first, (VALUES {', '.join([row] * count)}) AS v ({columns})"


def _column_types(conn: Connection, table: Table, names: tuple[str, ...]) -> list[int]:
    """PostgreSQL: the type (oid) of each of the columns `names`, as a binary COPY needs them
    (the JSON of a row goes as its bytes, not hex-escaped text for the server to decode)."""
    return [oid for oid, _ in _column_catalog(conn, table, names)]


def _column_type_names(conn: Connection, table: Table, names: tuple[str, ...]) -> list[str]:
    """PostgreSQL: the type of each of the columns `names`, as SQL names it in a cast."""
    return [name for _, name in _column_catalog(conn, table, names)]


@_once_per_table
def _column_catalog(conn: Connection, table: Table, names: tuple[str, ...]) -> list[tuple[int, str]]:
    """(type oid, type name) of each of the columns `names`, read from the catalog once per table and columns."""
    found = {row[0]: row[1:] for row in driver.rows(conn, _COLUMN_TYPES, {"table": conn.dialect.identifier_preparer.quote(table.name)})}
    return [found[name] for name in names]


_COLUMN_TYPES = """
SELECT attname, atttypid::int, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = to_regclass(%(table)s) AND attnum > 0 AND NOT attisdropped
"""


@_once_per_table
def _bind_processors(conn: Connection, table: Table, names: tuple[str, ...]) -> list | None:
    """Each column's conversion of a Python value for the driver (SQLite stores datetimes as
    text), or None when no column needs one; worked out once per table, columns and dialect."""
    # Columns of the same type share one processor: a value they share (a record's
    # timestamps) is converted once for all of them (`_converted`).
    shared: dict[tuple, object] = {}
    found = []
    for name in names:
        impl = table.c[name].type.dialect_impl(conn.dialect)
        kind = (impl.__class__, repr(impl))
        if kind not in shared:
            shared[kind] = (
                _sqlite_blob if conn.dialect.name == "sqlite" and isinstance(impl, LargeBinary) else impl.bind_processor(conn.dialect)
            )
        found.append(shared[kind])
    return found if any(found) else None


def _sqlite_blob(value: bytes | None) -> bytearray | None:
    """A blob as the SQLite driver binds it straight away: any other bytes-like value (SQLAlchemy
    gives it a memoryview) is first looked up among its adapters, a failed attribute lookup that
    words an error (~3,000 instructions a record's JSON); the copy costs a tenth of that."""
    return None if value is None else bytearray(value)


def _converted(processors: list | None, values: list[tuple]) -> list:
    """`values` (rows of column values) with each value converted by its column's processor, a
    column at a time. A batch's rows mostly share their timestamps: a value that is the row
    before's (the same object) is not converted again. Not looked up among the values converted
    so far: each record's JSON (a processor's too, on SQLite) was hashed for it."""
    if not processors or not values:
        return values
    columns: list = list(zip(*values))
    last: dict[int, tuple] = {}  # each processor's last value, and what it made of it
    for index, process in enumerate(processors):
        if process is not None:
            columns[index] = _column_converted(process, columns[index], last)
    return list(zip(*columns))


def _column_converted(process, column: tuple, last: dict[int, tuple]) -> list:
    converted = []
    before, after = last.get(id(process), _NOTHING_YET)
    for value in column:
        if value is not before:
            before, after = value, process(value)
        converted.append(after)
    last[id(process)] = before, after
    return converted


_NOTHING_YET = (object(), None)


def advance_sequence(conn: Connection, table: Table) -> None:
    """After rows were inserted with ids chosen by the caller (a record the system keeps at a
    fixed id), move PostgreSQL's id sequence past them."""
    if conn.dialect.name == "postgresql":
        _advance_sequence(conn, table)


def taken(conn: Connection, table: Table, columns: tuple[str, ...], values: list[tuple]) -> dict[tuple, int]:
    """{values: id} of the stored rows holding any of `values` in `columns`. Grouped by the
    leading columns (`repo_id = ? AND identifier IN (…)`), which lets SQLite search the unique
    index on both; it scans the first column's range for a row-value IN list. A batch checks
    a group per tree at each of its writes, so the statements go straight to the driver."""
    *leading, last = columns
    groups: dict[tuple, list] = {}
    for value in values:
        groups.setdefault(tuple(value[:-1]), []).append(value[-1])
    found: dict[tuple, int] = {}
    for prefix, lasts in groups.items():
        rows = rows_where_in(conn, table, ("id", last), dict(zip(leading, prefix, strict=True)), last, lasts)
        found.update(((*prefix, row[1]), row[0]) for row in rows)
    return found


def repositories_of(conn: Connection, table: Table, ids: list[int]) -> dict[int, int | None]:
    """{id: repo_id} of the stored records of `table` among `ids`."""
    return dict(rows_where_in(conn, table, ("id", "repo_id"), {}, "id", ids))


def rows_where_in(conn: Connection, table: Table, columns: tuple[str, ...], equal: dict, name: str, values: list) -> list[tuple]:
    """`columns` of the rows whose `equal` columns hold those values and whose column `name`
    holds one of `values`, through the driver (`where_in`)."""
    quote = conn.dialect.identifier_preparer.quote
    head = f"SELECT {', '.join(map(quote, columns))} FROM {quote(table.name)} WHERE "
    found: list[tuple] = []
    for statement, parameters in where_in(conn, table, head, equal, name, values):
        found += driver.rows(conn, statement, parameters)
    return found


def where_in(
    conn: Connection, table: Table, head: str, equal: dict, name: str, values: list, tail: str = ""
) -> Iterator[tuple[str, tuple]]:
    """(statement, parameters): `head` (up to its WHERE) for the rows of `table` whose `equal`
    columns hold those values and whose column `name` holds one of `values`, then `tail`. PostgreSQL: one,
    the values as one array (`= ANY`), a short statement converted once whatever their number
    (an IN list of 500 placeholders was parsed again at each call); SQLite: IN lists in bounded
    chunks (`in_chunks`), in order."""
    prefix = tuple(equal.values())
    if conn.dialect.name == "postgresql":
        if values:
            yield _where_in_sql(conn, table, head, tuple(equal), name, None, tail), (*prefix, list(values))
        return
    for chunk in in_chunks(values):
        yield _where_in_sql(conn, table, head, tuple(equal), name, len(chunk), tail), (*prefix, *chunk)


@_once_per_table
def _where_in_sql(conn: Connection, table: Table, head: str, equal: tuple[str, ...], name: str, count: int | None, tail: str) -> str:
    """A statement of `where_in` (`count` values in its IN list; None: PostgreSQL's array)."""
    quote = conn.dialect.identifier_preparer.quote
    found = head + "".join(f"{quote(column)} = {placeholder(conn, table, column)} AND " for column in equal)
    if count is None:
        return found + f"{quote(name)} = ANY({placeholder(conn, table, name, array=True)}){tail}"
    return found + f"{quote(name)} IN ({', '.join('?' * count)}){tail}"


def _advance_sequence(conn: Connection, table: Table) -> None:
    """After a row was inserted with an explicit id, move PostgreSQL's id sequence past it (never
    back: ids of deleted records are not handed out again). SQLite's AUTOINCREMENT does this itself."""
    conn.exec_driver_sql(
        "SELECT setval(s, GREATEST(COALESCE(pg_sequence_last_value(s::regclass), 0), (SELECT max(id) FROM "
        + conn.dialect.identifier_preparer.quote(table.name)
        + "))) FROM pg_get_serial_sequence(%(name)s, 'id') AS s",
        {"name": conn.dialect.identifier_preparer.quote(table.name)},
    )


def store(conn: Connection, table: Table, record_id: int, *, json: bytes, values: dict, expect_lock_version: int | None = None) -> bool:
    """Write a record's JSON and columns; with `expect_lock_version` only if still unchanged.
    Through the driver, as the reads and writes of a record's update all go: SQLAlchemy's
    execution (~50–90 µs a statement) was a quarter of an update's CPU."""
    names = ("json", *values)
    expecting = expect_lock_version is not None
    given = _bound(conn, table, names, (json, *values.values()))
    parameters = (*given, record_id, expect_lock_version) if expecting else (*given, record_id)
    return driver.execute(conn, _store_sql(conn, table, names, expecting), parameters) == 1


def fetch(conn: Connection, table: Table, record_id: int, *, repo_id: int | None = None, for_update: bool = False) -> tuple | None:
    """The row of record `record_id` (in repository `repo_id`, if given), its columns by name
    as SQLAlchemy reads them (`StoredRow`); `for_update`: locked till the transaction ends
    (PostgreSQL). Through the driver (`store`)."""
    statement, reader = _fetch_sql(conn, table, repo_id is not None, for_update)
    found = driver.rows(conn, statement, (record_id,) if repo_id is None else (record_id, repo_id))
    return reader(found[0]) if found else None


@_once_per_table
def _store_sql(conn: Connection, table: Table, names: tuple[str, ...], expecting: bool) -> str:
    quote = conn.dialect.identifier_preparer.quote
    assignments = ", ".join(f"{quote(name)} = {placeholder(conn, table, name)}" for name in names)
    statement = f"UPDATE {quote(table.name)} SET {assignments} WHERE id = {placeholder(conn, table, 'id')}"
    return statement + f" AND lock_version = {placeholder(conn, table, 'lock_version')}" if expecting else statement


@_once_per_table
def _fetch_sql(conn: Connection, table: Table, in_repository: bool, for_update: bool) -> tuple[str, Callable]:
    """(statement, the row it reads as a `StoredRow`)."""
    quote = conn.dialect.identifier_preparer.quote
    columns = ", ".join(quote(column.name) for column in table.columns)
    statement = f"SELECT {columns} FROM {quote(table.name)} WHERE id = {placeholder(conn, table, 'id')}"
    if in_repository:
        statement += f" AND repo_id = {placeholder(conn, table, 'repo_id')}"
    if for_update and conn.dialect.name == "postgresql":
        statement += " FOR UPDATE"
    return statement, row_reader(conn, table, tuple(column.name for column in table.columns))


def _bound(conn: Connection, table: Table, names: tuple[str, ...], values: tuple) -> tuple:
    """The values of `table`'s columns `names` as the driver binds them (`_bind_processors`)."""
    processors = _bind_processors(conn, table, names)
    if processors is None:
        return values
    return tuple(value if process is None else process(value) for process, value in zip(processors, values, strict=True))


def placeholder(conn: Connection, table: Table, name: str, *, array: bool = False) -> str:
    """The placeholder of a value of `table`'s column `name` (`array`: of a list of them). On
    PostgreSQL cast to the column's type where SQLAlchemy casts it (`render_bind_cast`): an id
    past the integer range is then refused (DataError, a 400), not compared as a numeric and
    found nowhere."""
    return "?" if conn.dialect.paramstyle == "qmark" else _cast_placeholder(conn, table, name, array)


@_once_per_table
def _cast_placeholder(conn: Connection, table: Table, name: str, array: bool) -> str:
    impl = table.c[name].type.dialect_impl(conn.dialect)
    if not getattr(impl, "render_bind_cast", False):
        return "%s"
    # As SQLAlchemy's compiler: a VARCHAR's length is not cast to (it would cut the value).
    cast = sqltypes.STRINGTYPE if impl._type_affinity is sqltypes.String and getattr(impl, "length", None) else impl
    found = "%s::" + conn.dialect.type_compiler_instance.process(cast, identifier_preparer=conn.dialect.identifier_preparer)
    return found + "[]" if array else found


@_once_per_table
def row_reader(conn: Connection, table: Table, names: tuple[str, ...]) -> Callable[[tuple], tuple]:
    """What turns a row of `table`'s columns `names`, as the driver gives it, into a `StoredRow`:
    each value converted as SQLAlchemy converts it (SQLite's datetimes are text, its booleans
    integers)."""
    row_type = _stored_row_type(table, names)
    processors = [table.c[name].type.dialect_impl(conn.dialect).result_processor(conn.dialect, None) for name in names]
    converting = [(index, process) for index, process in enumerate(processors) if process is not None]
    if not converting:
        return row_type._make

    def read(raw: tuple) -> tuple:
        values = list(raw)
        for index, process in converting:
            values[index] = process(values[index])
        return row_type._make(values)

    return read


@functools.lru_cache(maxsize=512)
def _stored_row_type(table: Table, names: tuple[str, ...]) -> type:
    """A stored row of `table` (`StoredRow`): the values of its columns `names`, by name and by
    position, as SQLAlchemy's `Row` holds them."""
    base = collections.namedtuple(f"{table.name}_row", names)
    return type(base.__name__, (base,), {"__slots__": (), "_mapping": property(lambda row: row._asdict())})


def exists(conn: Connection, table: Table, record_id: int) -> bool:
    quote = conn.dialect.identifier_preparer.quote
    return bool(driver.rows(conn, f"SELECT 1 FROM {quote(table.name)} WHERE id = {placeholder(conn, table, 'id')}", (record_id,)))


# Ids per IN list: far below PostgreSQL's 65,535 parameters per statement, big enough that a
# 100,000-record cascade is a few dozen statements.
CHUNK = 5000


def chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def fetch_many(conn: Connection, table: Table, ids: Iterable[int], columns=None) -> list[tuple]:
    """The rows with these ids (all columns, or only `columns`) as `StoredRow`s, by id, in
    bounded statements, through the driver."""
    names = tuple(columns) if columns else tuple(column.name for column in table.columns)
    read = row_reader(conn, table, names)
    quote = conn.dialect.identifier_preparer.quote
    head = f"SELECT {', '.join(map(quote, names))} FROM {quote(table.name)} WHERE "
    found: list[tuple] = []
    for statement, parameters in where_in(conn, table, head, {}, "id", sorted(set(ids)), " ORDER BY id"):
        found += map(read, driver.rows(conn, statement, parameters))
    return found


def find_duplicate(conn: Connection, table: Table, values: dict, *, exclude_id: int) -> int | None:
    """The id of another row holding the same values, if any (NULLs never collide, as in SQL);
    through the driver, as an update's other statements (`store`)."""
    if any(value is None for value in values.values()):
        return None
    names = tuple(values)
    given = _bound(conn, table, names, tuple(values.values()))
    found = driver.rows(conn, _duplicate_sql(conn, table, names), (*given, exclude_id))
    return found[0][0] if found else None


@_once_per_table
def _duplicate_sql(conn: Connection, table: Table, names: tuple[str, ...]) -> str:
    quote = conn.dialect.identifier_preparer.quote
    equal = " AND ".join(f"{quote(name)} = {placeholder(conn, table, name)}" for name in names)
    return f"SELECT id FROM {quote(table.name)} WHERE {equal} AND id != {placeholder(conn, table, 'id')} LIMIT 1"


def delete_rows(conn: Connection, table: Table, ids: list[int]) -> None:
    """Delete the rows `ids` of `table` (their links: `links.delete_links_of`)."""
    quote = conn.dialect.identifier_preparer.quote
    for statement, parameters in where_in(conn, table, f"DELETE FROM {quote(table.name)} WHERE ", {}, "id", ids):
        driver.execute(conn, statement, parameters)
