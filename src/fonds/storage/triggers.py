"""What the counting triggers (storage/counts.py, storage/siblings.py) share: whether one is
installed, the versions before, and the condition their SQLite insert triggers run under."""

from __future__ import annotations

from sqlalchemy import Connection

# SQLite: the insert triggers count a row unless the transaction inserting it counts its rows
# itself (a row in counting_deferred, fonds.storage.deferred_counts).
NOT_DEFERRED = "NOT EXISTS (SELECT 1 FROM counting_deferred)"


def has_trigger(conn: Connection, table: str, trigger: str) -> bool:
    """Whether `table` (this schema's, the search path's, not a namesake's elsewhere) has the trigger."""
    if conn.dialect.name == "postgresql":
        sql = "SELECT 1 FROM pg_trigger WHERE tgname = %(name)s AND tgrelid = to_regclass(%(table)s)"
        rows = conn.exec_driver_sql(sql, {"name": trigger, "table": f'"{table}"'})
    else:
        rows = conn.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?", (trigger,))
    return rows.first() is not None


def triggers_named(conn: Connection, table: str, prefix: str) -> list[str]:
    """The triggers of `table` whose names start with `prefix` (a family's, of every version)."""
    pattern = prefix.replace("_", r"\_") + "%"
    if conn.dialect.name == "postgresql":
        sql = r"SELECT tgname FROM pg_trigger WHERE tgrelid = %(table)s::regclass AND tgname LIKE %(pattern)s ESCAPE '\'"
        rows = conn.exec_driver_sql(sql, {"table": f'"{table}"', "pattern": pattern})
    else:
        sql = r"SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? AND name LIKE ? ESCAPE '\'"
        rows = conn.exec_driver_sql(sql, (table, pattern))
    return [row[0] for row in rows]
