"""What the counting triggers (storage/counts.py, storage/siblings.py) share: whether one is installed."""

from __future__ import annotations

from sqlalchemy import Connection


def has_trigger(conn: Connection, table: str, trigger: str) -> bool:
    """Whether `table` (this schema's, the search path's, not a namesake's elsewhere) has the trigger."""
    if conn.dialect.name == "postgresql":
        sql = "SELECT 1 FROM pg_trigger WHERE tgname = %(name)s AND tgrelid = to_regclass(%(table)s)"
        rows = conn.exec_driver_sql(sql, {"name": trigger, "table": f'"{table}"'})
    else:
        rows = conn.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?", (trigger,))
    return rows.first() is not None
