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
# A bulk load in many requests analyses a table again only once this share of its rows (and
# BULK_LOAD_RECORDS more) changed since it was last analysed (autovacuum's own default), or it
# was never analysed: PostgreSQL samples 30,000 rows a table whatever its size (a tenth of a
# second and more for a large one), and SQLite's limited ANALYZE of a load's three tables took
# about 7 ms, 2 % of a bulk load's time when done after every request of 2,000 records.
STALE_SHARE = 0.1

_STALE_ON_POSTGRESQL = """
SELECT t.name FROM unnest(%(names)s::text[]) AS t(name)
JOIN pg_stat_user_tables s ON s.relid = to_regclass(quote_ident(t.name))
JOIN pg_class c ON c.oid = s.relid
WHERE (s.last_analyze IS NULL AND s.last_autoanalyze IS NULL)
   OR s.n_mod_since_analyze >= %(share)s * greatest(c.reltuples, 0) + %(least)s
"""


def analyze(db, table_names: Iterable[str]) -> None:
    """Gather planner statistics for these tables (on PostgreSQL, those whose statistics are
    stale), outside any transaction of the load."""
    names = sorted(set(table_names))
    if not names:
        return
    quote = db.engine.dialect.identifier_preparer.quote
    if db.kind == "postgresql":
        with db.engine.connect() as conn:
            stale = conn.exec_driver_sql(_STALE_ON_POSTGRESQL, {"names": names, "share": STALE_SHARE, "least": BULK_LOAD_RECORDS})
            names = stale.scalars().all()
            if names:
                conn.exec_driver_sql("ANALYZE " + ", ".join(quote(name) for name in names))
            conn.commit()
        return
    # The write lock first: a transaction that read before it writes fails at once when another
    # writer committed in between.
    with db.write() as conn:
        conn.exec_driver_sql(f"PRAGMA analysis_limit={SQLITE_ANALYSIS_LIMIT}")
        for name in names:
            top = conn.exec_driver_sql(f"SELECT coalesce(max(rowid), 0) FROM {quote(name)}").scalar_one()
            last = _SQLITE_ANALYSED.get((db.url, name))
            if last is None or top >= last * (1 + STALE_SHARE) + BULK_LOAD_RECORDS:
                conn.exec_driver_sql(f"ANALYZE {quote(name)}")
                _SQLITE_ANALYSED[(db.url, name)] = top


# SQLite keeps no count of the rows changed since a table was analysed: the highest rowid when
# this process last analysed it stands in (tables grow by appending; after a restart a table is
# analysed at its next bulk load).
_SQLITE_ANALYSED: dict[tuple[str, str], int] = {}


def after_bulk_load(db, record_types: Iterable[str], count: int) -> None:
    """Analyse the tables a load of `count` records wrote to, if it was a bulk load."""
    if count >= BULK_LOAD_RECORDS:
        analyze(db, [*record_types, "record_link", "change_log"])
