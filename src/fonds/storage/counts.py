"""Record counts per (type, repository, block of 1024 ids), kept by triggers on every record table.

Page N of a listing starts in the block where the running sum passes (N-1) x size, at an offset
below 1024 within it: no COUNT(*) over the table and no OFFSET deep into it
(`fonds.records.pages`). The listing's total has a row of its own (block TOTAL), kept by the same
triggers: summing the blocks for it read every block of the repository for every page (a
thousand at a million records: 75 µs a page on SQLite), where the first and last pages
otherwise read a block or two.

Triggers, not code in the write paths: every insert and delete, whichever path makes it (single
writes, batch imports, cascades, bulk SQL), changes the counts in its own transaction. They are
installed at start for every record table of the registry (tables added by later migrations
included) and a table that gets them for the first time has its blocks counted from its rows in
the same transaction. (On SQLite, a write of many rows counts them itself, grouped, while the
insert triggers stand aside for its transaction alone: fonds.storage.deferred_counts.) On
PostgreSQL the triggers are per statement (one upsert per block a
statement touched) and take the change log's append lock first: every writer updating block
rows does so alone, so two transactions never wait for each other's block rows (no deadlock),
and the lock is one every record write takes anyway before it commits."""

from __future__ import annotations

from sqlalchemy import Connection

from fonds.storage import driver
from fonds.storage.change_log import APPEND_LOCK_KEY
from fonds.storage.db import Database
from fonds.storage.triggers import NOT_DEFERRED, has_trigger, triggers_named

# Blocks of 1024 ids: a page skips at most 1023 index entries within its block (on PostgreSQL
# each may cost a heap visit while the visibility map is not yet set after a bulk load), and a
# million records make about a thousand block rows for a page deep in a listing to walk.
BLOCK = 1024
# The block number of a (type, repository)'s total: ids are positive, blocks from 0.
TOTAL = -1
VERSION = 4
# Serialises installation when several workers start at once.
INSTALL_LOCK_KEY = 7_420_016


def _sqlite_trigger(head: str, *steps: str) -> str:
    return head + " BEGIN\n" + "".join(f"  {step}\n" for step in steps) + "END"


def _sqlite_add(row: str, bucket: str) -> str:
    """Count the record `row` (NEW) in `bucket` (its block or the total)."""
    return (
        f"INSERT INTO record_bucket (record_type, repo_id, bucket, n) VALUES ('{{table}}', COALESCE({row}.repo_id, 0), {bucket}, 1)"
        " ON CONFLICT (record_type, repo_id, bucket) DO UPDATE SET n = n + 1;"
    )


def _sqlite_remove(row: str, bucket: str) -> str:
    """Count the record `row` (OLD) out of `bucket`."""
    return f"UPDATE record_bucket SET n = n - 1 WHERE record_type = '{{table}}' AND repo_id = COALESCE({row}.repo_id, 0) AND bucket = {bucket};"


# Templates of `str.format` (name, table, block, total, deferred): each row's block and its total.
_SQLITE = [
    _sqlite_trigger(
        'CREATE TRIGGER "{name}_ins" AFTER INSERT ON "{table}" WHEN {deferred}',
        _sqlite_add("NEW", "NEW.id / {block}"),
        _sqlite_add("NEW", "{total}"),
    ),
    _sqlite_trigger(
        'CREATE TRIGGER "{name}_del" AFTER DELETE ON "{table}"',
        _sqlite_remove("OLD", "OLD.id / {block}"),
        _sqlite_remove("OLD", "{total}"),
    ),
    _sqlite_trigger(
        'CREATE TRIGGER "{name}_move" AFTER UPDATE OF repo_id ON "{table}"\nWHEN OLD.repo_id IS NOT NEW.repo_id',
        _sqlite_remove("OLD", "OLD.id / {block}"),
        _sqlite_remove("OLD", "{total}"),
        _sqlite_add("NEW", "NEW.id / {block}"),
        _sqlite_add("NEW", "{total}"),
    ),
]

_PG_FUNCTIONS = """
CREATE OR REPLACE FUNCTION fonds_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock({lock});
  INSERT INTO record_bucket (record_type, repo_id, bucket, n)
  SELECT TG_ARGV[0], COALESCE(repo_id, 0), id / {block}, count(*) FROM added GROUP BY 2, 3
  UNION ALL SELECT TG_ARGV[0], COALESCE(repo_id, 0), {total}, count(*) FROM added GROUP BY 2
  ORDER BY 2, 3
  ON CONFLICT (record_type, repo_id, bucket) DO UPDATE SET n = record_bucket.n + EXCLUDED.n;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION fonds_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock({lock});
  UPDATE record_bucket b SET n = b.n - gone.n
  FROM (
    SELECT COALESCE(repo_id, 0) AS repo_id, id / {block} AS bucket, count(*) AS n FROM removed GROUP BY 1, 2
    UNION ALL SELECT COALESCE(repo_id, 0), {total}, count(*) FROM removed GROUP BY 1
  ) gone
  WHERE b.record_type = TG_ARGV[0] AND b.repo_id = gone.repo_id AND b.bucket = gone.bucket;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION fonds_count_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock({lock});
  UPDATE record_bucket SET n = n - 1
  WHERE record_type = TG_ARGV[0] AND repo_id = COALESCE(OLD.repo_id, 0) AND bucket IN (OLD.id / {block}, {total});
  INSERT INTO record_bucket (record_type, repo_id, bucket, n)
  VALUES (TG_ARGV[0], COALESCE(NEW.repo_id, 0), {total}, 1), (TG_ARGV[0], COALESCE(NEW.repo_id, 0), NEW.id / {block}, 1)
  ON CONFLICT (record_type, repo_id, bucket) DO UPDATE SET n = record_bucket.n + 1;
  RETURN NULL;
END $$;
"""

_PG = [
    """CREATE TRIGGER "{name}_ins" AFTER INSERT ON "{table}" REFERENCING NEW TABLE AS added
FOR EACH STATEMENT EXECUTE FUNCTION fonds_count_added('{table}')""",
    """CREATE TRIGGER "{name}_del" AFTER DELETE ON "{table}" REFERENCING OLD TABLE AS removed
FOR EACH STATEMENT EXECUTE FUNCTION fonds_count_removed('{table}')""",
    """CREATE TRIGGER "{name}_move" AFTER UPDATE OF repo_id ON "{table}" FOR EACH ROW
WHEN (OLD.repo_id IS DISTINCT FROM NEW.repo_id) EXECUTE FUNCTION fonds_count_moved('{table}')""",
]


def trigger_name(table: str) -> str:
    return f"fonds_count_v{VERSION}_{table}"


def install(db: Database, tables: list[str]) -> None:
    """Give every table in `tables` its counting triggers (those that have them are left alone)."""
    with db.write() as conn:
        if db.kind == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({INSTALL_LOCK_KEY})")
        missing = [table for table in tables if not has_trigger(conn, table, f"{trigger_name(table)}_ins")]
        if not missing:
            return
        if db.kind == "postgresql":
            conn.exec_driver_sql(_PG_FUNCTIONS.format(lock=APPEND_LOCK_KEY, block=BLOCK, total=TOTAL))
        for table in missing:
            _install_one(conn, table)


def _install_one(conn: Connection, table: str) -> None:
    """Triggers for `table`, and its blocks counted from its rows (writers are kept out meanwhile:
    SQLite's write lock, PostgreSQL's table lock)."""
    postgres = conn.dialect.name == "postgresql"
    if postgres:
        conn.exec_driver_sql(f'LOCK TABLE "{table}" IN SHARE ROW EXCLUSIVE MODE')
    for old in triggers_named(conn, table, "fonds_count_"):
        conn.exec_driver_sql(f'DROP TRIGGER IF EXISTS "{old}"' + (f' ON "{table}"' if postgres else ""))
    for template in _PG if postgres else _SQLITE:
        conn.exec_driver_sql(template.format(name=trigger_name(table), table=table, block=BLOCK, total=TOTAL, deferred=NOT_DEFERRED))
    conn.exec_driver_sql(f"DELETE FROM record_bucket WHERE record_type = '{table}'")
    conn.exec_driver_sql(
        f"INSERT INTO record_bucket (record_type, repo_id, bucket, n) "
        f"SELECT '{table}', COALESCE(repo_id, 0), id / {BLOCK}, count(*) FROM \"{table}\" GROUP BY 2, 3 "
        f"UNION ALL SELECT '{table}', COALESCE(repo_id, 0), {TOTAL}, count(*) FROM \"{table}\" GROUP BY 2"
    )


def counted_rows(conn: Connection, table: str) -> int | None:
    """The rows of a record table as its blocks count them, in every repository; None for a
    table no trigger counts."""
    return conn.exec_driver_sql("SELECT sum(n) FROM record_bucket WHERE record_type = ? AND bucket = ?", (table, TOTAL)).scalar()


def add(conn: Connection, table: str, rows: list[tuple[int | None, int]]) -> None:
    """SQLite: count rows of `table` inserted uncounted (fonds.storage.deferred_counts), each
    given as (repo_id, id): one upsert per block and per repository's total."""
    blocks: dict[tuple[int, int], int] = {}
    for repo_id, record_id in rows:
        key = (repo_id or 0, record_id // BLOCK)
        blocks[key] = blocks.get(key, 0) + 1
    totals: dict[int, int] = {}
    for (repo_id, _), n in blocks.items():
        totals[repo_id] = totals.get(repo_id, 0) + n
    driver.execute_many(
        conn,
        "INSERT INTO record_bucket (record_type, repo_id, bucket, n) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (record_type, repo_id, bucket) DO UPDATE SET n = n + excluded.n",
        [(table, repo_id, block, n) for (repo_id, block), n in blocks.items()]
        + [(table, repo_id, TOTAL, n) for repo_id, n in totals.items()],
    )
