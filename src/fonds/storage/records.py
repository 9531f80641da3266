"""Row-level operations shared by every record table: insert, rewrite, fetch, delete, the link
table and the change log. Callers pass the open connection of their transaction."""

from __future__ import annotations

import datetime
import functools
import operator
import sqlite3
from collections.abc import Iterable
from itertools import chain

from sqlalchemy import Connection, LargeBinary, Row, Table, bindparam, delete, select, tuple_, update

from fonds.storage import driver
from fonds.storage.chunks import execute_in, in_chunks, select_in


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


def _few_rows_insert(conn: Connection, table: Table, names: tuple[str, ...], count: int, first: str | None) -> str:
    """PostgreSQL: `INSERT … VALUES` of `count` rows, built once per table, columns, count and
    `first`. With `first`, one statement running it, then inserting the rows: they come from a
    join with `first`'s materialised result, so none is made (nor its column defaults, a
    sequence's next value among them, computed) before `first` has run; each value is cast to its
    column's type, as a column of NULLs in a VALUES list would otherwise be text."""
    key = (table.name, names, count, first)
    if key not in _FEW_ROWS_INSERTS:
        quote = conn.dialect.identifier_preparer.quote
        columns = ", ".join(quote(name) for name in names)
        into = f"INSERT INTO {quote(table.name)} ({columns})"
        if first is None:
            row = "(" + ", ".join(["%s"] * len(names)) + ")"
            statement = f"{into} VALUES {', '.join([row] * count)}"
        else:
            row = "(" + ", ".join(f"CAST(%s AS {name})" for name in _column_type_names(conn, table, names)) + ")"
            statement = (
                f"WITH first AS MATERIALIZED ({first}) {into} SELECT v.* FROM first, (VALUES {', '.join([row] * count)}) AS v ({columns})"
            )
        _FEW_ROWS_INSERTS[key] = statement
    return _FEW_ROWS_INSERTS[key]


_FEW_ROWS_INSERTS: dict[tuple, str] = {}


def _column_types(conn: Connection, table: Table, names: tuple[str, ...]) -> list[int]:
    """PostgreSQL: the type (oid) of each of the columns `names`, as a binary COPY needs them
    (the JSON of a row goes as its bytes, not hex-escaped text for the server to decode)."""
    return [oid for oid, _ in _column_catalog(conn, table, names)]


def _column_type_names(conn: Connection, table: Table, names: tuple[str, ...]) -> list[str]:
    """PostgreSQL: the type of each of the columns `names`, as SQL names it in a cast."""
    return [name for _, name in _column_catalog(conn, table, names)]


def _column_catalog(conn: Connection, table: Table, names: tuple[str, ...]) -> list[tuple[int, str]]:
    """(type oid, type name) of each of the columns `names`, read from the catalog once per table and columns."""
    key = (table.name, names)
    if key not in _TYPES:
        found = {row[0]: row[1:] for row in driver.rows(conn, _COLUMN_TYPES, {"table": conn.dialect.identifier_preparer.quote(table.name)})}
        _TYPES[key] = [found[name] for name in names]
    return _TYPES[key]


_COLUMN_TYPES = """
SELECT attname, atttypid::int, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = to_regclass(%(table)s) AND attnum > 0 AND NOT attisdropped
"""
_TYPES: dict[tuple, list[tuple[int, str]]] = {}


def _bind_processors(conn: Connection, table: Table, names: tuple[str, ...]) -> list | None:
    """Each column's conversion of a Python value for the driver (SQLite stores datetimes as
    text), or None when no column needs one; worked out once per table, columns and dialect."""
    key = (conn.dialect.name, table.name, names)
    if key not in _PROCESSORS:
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
        _PROCESSORS[key] = found if any(found) else None
    return _PROCESSORS[key]


_PROCESSORS: dict[tuple, list | None] = {}


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
    holds one of `values`, through the driver. PostgreSQL: the values as one array (`= ANY`), a
    short statement converted once whatever their number (an IN list of 500 placeholders was
    parsed again at each call); SQLite: IN lists in bounded chunks."""
    quote, mark = conn.dialect.identifier_preparer.quote, "?" if conn.dialect.paramstyle == "qmark" else "%s"
    head = f"SELECT {', '.join(map(quote, columns))} FROM {quote(table.name)} WHERE " + "".join(f"{quote(c)} = {mark} AND " for c in equal)
    prefix = tuple(equal.values())
    if conn.dialect.name == "postgresql":
        return driver.rows(conn, f"{head}{quote(name)} = ANY(%s)", (*prefix, list(values)))
    found: list[tuple] = []
    for chunk in in_chunks(values):
        found += driver.rows(conn, f"{head}{quote(name)} IN ({', '.join([mark] * len(chunk))})", (*prefix, *chunk))
    return found


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
    """Write a record's JSON and columns; with `expect_lock_version` only if still unchanged."""
    expecting = expect_lock_version is not None
    parameters = {"b_id": record_id, "json": json, **values, **({"b_expect": expect_lock_version} if expecting else {})}
    return conn.execute(_store_statement(table, expecting), parameters).rowcount == 1


def fetch(conn: Connection, table: Table, record_id: int, *, repo_id: int | None = None, for_update: bool = False) -> Row | None:
    statement = _fetch_statement(table, repo_id is not None, for_update)
    parameters = {"b_id": record_id} if repo_id is None else {"b_id": record_id, "b_repo_id": repo_id}
    return conn.execute(statement, parameters).one_or_none()


def exists(conn: Connection, table: Table, record_id: int) -> bool:
    return conn.execute(_exists_statement(table), {"b_id": record_id}).first() is not None


# The statements of a single record's update, built once per table and shape with bound
# parameters: building one per call (and its cache key) cost more than SQLite spends running it.
# An update's SET columns are the keys of the parameters it is executed with.
@functools.lru_cache(maxsize=512)
def _store_statement(table: Table, expecting: bool):
    statement = update(table).where(table.c.id == bindparam("b_id"))
    return statement.where(table.c.lock_version == bindparam("b_expect")) if expecting else statement


@functools.lru_cache(maxsize=512)
def _exists_statement(table: Table):
    return select(table.c.id).where(table.c.id == bindparam("b_id"))


@functools.lru_cache(maxsize=512)
def _fetch_statement(table: Table, in_repository: bool, for_update: bool):
    statement = select(table).where(table.c.id == bindparam("b_id"))
    if in_repository:
        statement = statement.where(table.c.repo_id == bindparam("b_repo_id"))
    return statement.with_for_update() if for_update else statement


# Ids per IN list: far below PostgreSQL's 65,535 parameters per statement, big enough that a
# 100,000-record cascade is a few dozen statements.
CHUNK = 5000


def chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def fetch_many(conn: Connection, table: Table, ids: Iterable[int], columns=None) -> list[Row]:
    """The rows with these ids (all columns, or only `columns`), by id, in bounded statements."""
    found: list[Row] = []
    statement = _fetch_many_statement(table, tuple(columns) if columns else None)
    for chunk in chunks(sorted(set(ids))):
        found += conn.execute(statement, {"b_ids": chunk}).all()
    return found


@functools.lru_cache(maxsize=512)
def _fetch_many_statement(table: Table, columns: tuple[str, ...] | None):
    selected = [table.c[name] for name in columns] if columns else [table]
    return select(*selected).where(table.c.id.in_(bindparam("b_ids", expanding=True))).order_by(table.c.id)


def find_duplicate(conn: Connection, table: Table, values: dict, *, exclude_id: int) -> int | None:
    """The id of another row holding the same values, if any (NULLs never collide, as in SQL)."""
    if any(value is None for value in values.values()):
        return None
    statement = _duplicate_statement(table, tuple(values))
    parameters = {f"b_{name}": value for name, value in values.items()}
    return conn.execute(statement, {**parameters, "b_exclude": exclude_id}).scalar_one_or_none()


@functools.lru_cache(maxsize=512)
def _duplicate_statement(table: Table, names: tuple[str, ...]):
    where = [table.c[name] == bindparam(f"b_{name}") for name in names]
    return select(table.c.id).where(*where, table.c.id != bindparam("b_exclude")).limit(1)


def replace_links(
    conn: Connection, tables, *, source_type: str, source_id: int, links: list[tuple[str, str, str, int]], fresh: bool = False
) -> None:
    """Record the refs a record holds: (field pattern, concrete path, target type, target id).
    `fresh`: the record was just created, so it holds no links yet."""
    table = tables["record_link"]
    if not fresh:
        conn.execute(_unlink_statement(table), {"b_type": source_type, "b_id": source_id})
    insert_links(conn, tables, [(source_type, source_id, link) for link in links])


@functools.lru_cache(maxsize=512)
def _unlink_statement(table: Table):
    return delete(table).where(table.c.source_type == bindparam("b_type"), table.c.source_id == bindparam("b_id"))


LINK_COLUMNS = ("source_type", "source_id", "field", "path", "target_type", "target_id")


def insert_links(conn: Connection, tables, links: list[tuple[str, int, tuple[str, str, str, int]]]) -> None:
    """Record refs of many records: (source type, source id, (field pattern, path, target type, target id))."""
    values = [(s, i, f, p, t, target) for s, i, (f, p, t, target) in links]
    insert_values(conn, tables["record_link"], LINK_COLUMNS, values)


def links_to(conn: Connection, tables, targets: Iterable[tuple[str, int]]) -> list[Row]:
    """Every link pointing at one of `targets` ((type, id) pairs)."""
    table = tables["record_link"]
    statement = _links_to_statement(table)
    return select_in(conn, lambda chunk: (statement, {"b_targets": chunk}), targets)


@functools.lru_cache(maxsize=512)
def _links_to_statement(table: Table):
    return select(table).where(tuple_(table.c.target_type, table.c.target_id).in_(bindparam("b_targets", expanding=True)))


def delete_rows(conn: Connection, tables, record_type: str, ids: list[int]) -> None:
    table, links = tables[record_type], tables["record_link"]
    rows, sources, targets = _delete_statements(table, links)
    execute_in(conn, lambda chunk: (rows, {"b_ids": chunk}), ids)
    execute_in(conn, lambda chunk: (sources, {"b_type": record_type, "b_ids": chunk}), ids)
    execute_in(conn, lambda chunk: (targets, {"b_type": record_type, "b_ids": chunk}), ids)


@functools.lru_cache(maxsize=512)
def _delete_statements(table: Table, links: Table) -> tuple:
    ids = bindparam("b_ids", expanding=True)
    return (
        delete(table).where(table.c.id.in_(ids)),
        delete(links).where(links.c.source_type == bindparam("b_type"), links.c.source_id.in_(ids)),
        delete(links).where(links.c.target_type == bindparam("b_type"), links.c.target_id.in_(ids)),
    )
