"""Planner statistics after a bulk load.

A freshly loaded table has no statistics until something gathers them, and a planner without
them can choose plans that grow with the table (PostgreSQL with autovacuum off, or before its
autovacuum reaches the table; SQLite never gathers them by itself). After a bulk load Fonds
analyses the tables it wrote, so plans are sane whatever the operator's autovacuum settings."""

from __future__ import annotations

from collections.abc import Iterable

# Loads smaller than this leave statistics as they were (analysing costs more than it helps).
BULK_LOAD_RECORDS = 1000
# SQLite: rows examined per index when analysing (PRAGMA analysis_limit): approximate statistics
# in milliseconds even for a table of millions of rows.
SQLITE_ANALYSIS_LIMIT = 1000


def analyze(db, table_names: Iterable[str]) -> None:
    """Gather planner statistics for these tables, outside any transaction of the load."""
    names = sorted(set(table_names))
    if not names:
        return
    quote = db.engine.dialect.identifier_preparer.quote
    with db.engine.connect() as conn:
        if db.kind == "postgresql":
            conn.exec_driver_sql("ANALYZE " + ", ".join(quote(name) for name in names))
        else:
            conn.exec_driver_sql(f"PRAGMA analysis_limit={SQLITE_ANALYSIS_LIMIT}")
            for name in names:
                conn.exec_driver_sql(f"ANALYZE {quote(name)}")
        conn.commit()


def after_bulk_load(db, record_types: Iterable[str], count: int) -> None:
    """Analyse the tables a load of `count` records wrote to, if it was a bulk load."""
    if count >= BULK_LOAD_RECORDS:
        analyze(db, [*record_types, "record_link", "change_log"])
