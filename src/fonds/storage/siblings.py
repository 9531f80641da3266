"""Tree nodes per (sibling list, band of 2**18 physical positions), kept by triggers on the node
tables: a node's logical position (the count of its siblings before it) is the sum of the bands
below its own plus a count within its band, whatever the length of the list.

Appended siblings are STEP (1024) apart (records/trees/positions.py), so a band holds about 256
of them, and positions stay within ±2**30: at most 8192 bands per list, a few hundred for a list
of 100,000 appended nodes. A count of the siblings before the last of such a list walked 100,000
index entries (about 9 ms on SQLite); the bands make it a few hundred rows and entries.

As with the record counts (fonds.storage.counts), triggers, not code in the write paths, so that
appends, moves, shifts, renumbering, cascades and bulk SQL all keep the bands exact in their own
transaction (a bulk write on SQLite counts its own rows: fonds.storage.deferred_counts);
installed at start, a node table getting them for the first time (or those of an earlier
version) has its bands counted from its rows then. Top-level nodes (no parent) count under parent 0. On PostgreSQL the
triggers are per statement, and one that changes bands takes the change log's append lock first
(as the record counts do): writers never wait for each other's band rows in opposite orders."""

from __future__ import annotations

from sqlalchemy import Connection

from fonds.storage import driver
from fonds.storage.change_log import APPEND_LOCK_KEY
from fonds.storage.db import Database
from fonds.storage.triggers import NOT_DEFERRED, has_trigger, triggers_named

# A band is `position >> SHIFT` (a floor, negative positions included, on both databases).
SHIFT = 18
VERSION = 2
# Serialises installation when several workers start at once.
INSTALL_LOCK_KEY = 7_420_017

_SQLITE = [
    """CREATE TRIGGER "{name}_ins" AFTER INSERT ON "{table}" WHEN NEW.position IS NOT NULL AND {deferred} BEGIN
  INSERT INTO sibling_bucket (node_type, root_id, parent_id, bucket, n)
  VALUES ('{table}', COALESCE(NEW.{root}, 0), COALESCE(NEW.parent_id, 0), NEW.position >> {shift}, 1)
  ON CONFLICT (node_type, root_id, parent_id, bucket) DO UPDATE SET n = n + 1;
END""",
    """CREATE TRIGGER "{name}_del" AFTER DELETE ON "{table}" WHEN OLD.position IS NOT NULL BEGIN
  UPDATE sibling_bucket SET n = n - 1 WHERE node_type = '{table}' AND root_id = COALESCE(OLD.{root}, 0)
  AND parent_id = COALESCE(OLD.parent_id, 0) AND bucket = OLD.position >> {shift};
END""",
    """CREATE TRIGGER "{name}_move" AFTER UPDATE OF {root}, parent_id, position ON "{table}"
WHEN OLD.{root} IS NOT NEW.{root} OR OLD.parent_id IS NOT NEW.parent_id OR (OLD.position >> {shift}) IS NOT (NEW.position >> {shift})
BEGIN
  UPDATE sibling_bucket SET n = n - 1 WHERE OLD.position IS NOT NULL AND node_type = '{table}'
  AND root_id = COALESCE(OLD.{root}, 0) AND parent_id = COALESCE(OLD.parent_id, 0) AND bucket = OLD.position >> {shift};
  INSERT INTO sibling_bucket (node_type, root_id, parent_id, bucket, n)
  SELECT '{table}', COALESCE(NEW.{root}, 0), COALESCE(NEW.parent_id, 0), NEW.position >> {shift}, 1 WHERE NEW.position IS NOT NULL
  ON CONFLICT (node_type, root_id, parent_id, bucket) DO UPDATE SET n = n + 1;
END""",
]

# Per table (its root column is in the statements): added, removed, and moved rows' bands.
_PG_FUNCTIONS = """
CREATE OR REPLACE FUNCTION "{name}_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM added WHERE position IS NOT NULL) THEN
    PERFORM pg_advisory_xact_lock({lock});
    INSERT INTO sibling_bucket (node_type, root_id, parent_id, bucket, n)
    SELECT '{table}', COALESCE({root}, 0), COALESCE(parent_id, 0), position >> {shift}, count(*) FROM added
    WHERE position IS NOT NULL GROUP BY 2, 3, 4 ORDER BY 2, 3, 4
    ON CONFLICT (node_type, root_id, parent_id, bucket) DO UPDATE SET n = sibling_bucket.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION "{name}_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM removed WHERE position IS NOT NULL) THEN
    PERFORM pg_advisory_xact_lock({lock});
    UPDATE sibling_bucket b SET n = b.n - gone.n
    FROM (SELECT COALESCE({root}, 0) AS root_id, COALESCE(parent_id, 0) AS parent_id, position >> {shift} AS bucket, count(*) AS n
          FROM removed WHERE position IS NOT NULL GROUP BY 1, 2, 3) gone
    WHERE b.node_type = '{table}' AND b.root_id = gone.root_id AND b.parent_id = gone.parent_id AND b.bucket = gone.bucket;
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION "{name}_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM old_rows o JOIN new_rows w ON w.id = o.id
    WHERE (o.{root}, o.parent_id, o.position >> {shift}) IS DISTINCT FROM (w.{root}, w.parent_id, w.position >> {shift})
  ) THEN
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock({lock});
  UPDATE sibling_bucket b SET n = b.n - gone.n
  FROM (SELECT COALESCE(o.{root}, 0) AS root_id, COALESCE(o.parent_id, 0) AS parent_id, o.position >> {shift} AS bucket, count(*) AS n
        FROM old_rows o JOIN new_rows w ON w.id = o.id
        WHERE o.position IS NOT NULL
          AND (o.{root}, o.parent_id, o.position >> {shift}) IS DISTINCT FROM (w.{root}, w.parent_id, w.position >> {shift})
        GROUP BY 1, 2, 3) gone
  WHERE b.node_type = '{table}' AND b.root_id = gone.root_id AND b.parent_id = gone.parent_id AND b.bucket = gone.bucket;
  INSERT INTO sibling_bucket (node_type, root_id, parent_id, bucket, n)
  SELECT '{table}', COALESCE(w.{root}, 0), COALESCE(w.parent_id, 0), w.position >> {shift}, count(*)
  FROM old_rows o JOIN new_rows w ON w.id = o.id
  WHERE w.position IS NOT NULL
    AND (o.{root}, o.parent_id, o.position >> {shift}) IS DISTINCT FROM (w.{root}, w.parent_id, w.position >> {shift})
  GROUP BY 2, 3, 4 ORDER BY 2, 3, 4
  ON CONFLICT (node_type, root_id, parent_id, bucket) DO UPDATE SET n = sibling_bucket.n + EXCLUDED.n;
  RETURN NULL;
END $$;
"""

_PG = [
    """CREATE TRIGGER "{name}_ins" AFTER INSERT ON "{table}" REFERENCING NEW TABLE AS added
FOR EACH STATEMENT EXECUTE FUNCTION "{name}_added"()""",
    """CREATE TRIGGER "{name}_del" AFTER DELETE ON "{table}" REFERENCING OLD TABLE AS removed
FOR EACH STATEMENT EXECUTE FUNCTION "{name}_removed"()""",
    # Transition tables allow no column list: every UPDATE statement runs it, changing bands
    # (and locking) only when a row changed list or band.
    """CREATE TRIGGER "{name}_move" AFTER UPDATE ON "{table}" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION "{name}_moved"()""",
]


def trigger_name(table: str) -> str:
    return f"fonds_siblings_v{VERSION}_{table}"


def install(db: Database, roots: dict[str, str]) -> None:
    """Give every node table in `roots` (node table -> its root column) its band triggers."""
    with db.write() as conn:
        if db.kind == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({INSTALL_LOCK_KEY})")
        for table, root in roots.items():
            if not has_trigger(conn, table, f"{trigger_name(table)}_ins"):
                _install_one(conn, table, root)


def _install_one(conn: Connection, table: str, root: str) -> None:
    """Triggers for `table` (those of earlier versions dropped), and its bands counted from its
    rows (writers kept out meanwhile)."""
    postgres = conn.dialect.name == "postgresql"
    values = dict(name=trigger_name(table), table=table, root=root, shift=SHIFT, lock=APPEND_LOCK_KEY, deferred=NOT_DEFERRED)
    if postgres:
        conn.exec_driver_sql(f'LOCK TABLE "{table}" IN SHARE ROW EXCLUSIVE MODE')
    earlier = triggers_named(conn, table, "fonds_siblings_")
    for old in earlier:
        conn.exec_driver_sql(f'DROP TRIGGER IF EXISTS "{old}"' + (f' ON "{table}"' if postgres else ""))
    if postgres:
        for old in earlier:
            if old.endswith("_ins"):  # its functions, once no trigger runs them
                for step in ("added", "removed", "moved"):
                    conn.exec_driver_sql(f'DROP FUNCTION IF EXISTS "{old[:-4]}_{step}"()')
        conn.exec_driver_sql(_PG_FUNCTIONS.format(**values))
    for template in _PG if postgres else _SQLITE:
        conn.exec_driver_sql(template.format(**values))
    conn.exec_driver_sql(f"DELETE FROM sibling_bucket WHERE node_type = '{table}'")
    conn.exec_driver_sql(
        f"INSERT INTO sibling_bucket (node_type, root_id, parent_id, bucket, n) "
        f"SELECT '{table}', COALESCE({root}, 0), COALESCE(parent_id, 0), position >> {SHIFT}, count(*) "
        f'FROM "{table}" WHERE position IS NOT NULL GROUP BY 2, 3, 4'
    )


def add(conn: Connection, table: str, nodes: list[tuple[int | None, int | None, int | None]]) -> None:
    """SQLite: count nodes of `table` inserted uncounted (fonds.storage.deferred_counts), each
    given as (root id, parent id, position): one upsert per band."""
    bands: dict[tuple[int, int, int], int] = {}
    for root_id, parent_id, position in nodes:
        if position is not None:
            key = (root_id or 0, parent_id or 0, position >> SHIFT)
            bands[key] = bands.get(key, 0) + 1
    driver.execute_many(
        conn,
        "INSERT INTO sibling_bucket (node_type, root_id, parent_id, bucket, n) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (node_type, root_id, parent_id, bucket) DO UPDATE SET n = n + excluded.n",
        [(table, *key, n) for key, n in bands.items()],
    )
