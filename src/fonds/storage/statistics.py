"""Planner statistics after a bulk load.

A freshly loaded table has no statistics until something gathers them, and a planner without
them can choose plans that grow with the table (PostgreSQL with autovacuum off, or before its
autovacuum reaches the table; SQLite never gathers them by itself). After a bulk load Fonds
analyses the tables it wrote (on PostgreSQL, vacuums them too), so plans are sane whatever the
operator's autovacuum settings.

A request's load is analysed in the background (`after_bulk_load(..., background=True)`), by
one thread per database that takes the tables as loads name them: the response does not wait
for PostgreSQL's ANALYZE of a large table (a tenth of a second and more; 12 % of the time of a
bulk load in requests of 2,000 records, client waiting), and two loads never analyse at once.
The thread first waits (`until_quiet`) until the loads stop coming: a bulk load is a stream of
requests, and analysing a growing table after every tenth it grew by took 40 % of PostgreSQL's
CPU during one (100,000 records), beside the load's own writes, for statistics the next
analysis replaced.

On SQLite that thread first merges the links the loads left apart (storage/links.py), any load,
large or small: their statistics are gathered with the rest."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterable

from fonds.storage import counts, links

log = logging.getLogger("fonds.storage")

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
    stale), outside any transaction of the load. PostgreSQL's are vacuumed as well: a page
    loaded in bulk is not yet marked all-visible, so an index-only scan (`all_ids`, a listing's
    page of ids) read every row of it from the table too, and the first reads of each row wrote
    its hint bits (a million-record archive: `all_ids` over 105,000 accessions took 142-148 ms
    before, 28 after). Only the pages not yet all-visible are read, so the load's new pages."""
    names = sorted(set(table_names))
    if not names:
        return
    quote = db.engine.dialect.identifier_preparer.quote
    if db.kind == "postgresql":
        # VACUUM runs outside any transaction block.
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            stale = conn.exec_driver_sql(_STALE_ON_POSTGRESQL, {"names": names, "share": STALE_SHARE, "least": BULK_LOAD_RECORDS})
            names = stale.scalars().all()
            if names:
                conn.exec_driver_sql("VACUUM (ANALYZE) " + ", ".join(quote(name) for name in names))
        return
    # The write lock first: a transaction that read before it writes fails at once when another
    # writer committed in between.
    with db.write() as conn:
        links.merge_recent(conn)  # analysed with the links the load left apart
        conn.exec_driver_sql(f"PRAGMA analysis_limit={SQLITE_ANALYSIS_LIMIT}")
        for name in names:
            rows = _sqlite_rows(conn, name)
            last = _SQLITE_ANALYSED.get((db.url, name))
            if last is None or rows >= last * (1 + STALE_SHARE) + BULK_LOAD_RECORDS:
                conn.exec_driver_sql(f"ANALYZE {quote(name)}")
                _SQLITE_ANALYSED[(db.url, name)] = rows


# SQLite keeps no count of the rows changed since a table was analysed: its rows when this process
# last analysed it stand in (tables grow by appending; after a restart a table is analysed at its
# next bulk load).
_SQLITE_ANALYSED: dict[tuple[str, str], int] = {}


def _sqlite_rows(conn, name: str) -> int:
    """A record table's rows as counted (storage/counts.py); another's highest rowid (the link and
    change tables, which grow by appending). Not a record table's highest id: ids reserved ahead
    for imports and never used (records/id_leases.py) leave gaps."""
    counted = counts.counted_rows(conn, name)
    if counted is not None:
        return counted
    return conn.exec_driver_sql(f"SELECT coalesce(max(rowid), 0) FROM {conn.dialect.identifier_preparer.quote(name)}").scalar_one()


def after_bulk_load(
    db, record_types: Iterable[str], count: int, *, background: bool = False, until_quiet: Callable[[], object] | None = None
) -> None:
    """Analyse the tables a load of `count` records wrote to, if it was a bulk load: now, or
    (`background`) soon, in this process's analysing thread for `db`, once `until_quiet`
    (which blocks until no other load is under way, or long enough) returns. On SQLite, the
    links any load left apart are merged first (storage/links.py)."""
    if count >= BULK_LOAD_RECORDS:
        tables = [*record_types, "record_link", "change_log"]
    elif db.kind == "sqlite":
        tables = ["record_link"]  # analysed only if it grew enough since (`analyze`)
    else:
        return
    if background:
        _analyser(db).add(tables, until_quiet)
    else:
        analyze(db, tables)


def wait_until_analysed(db, timeout: float) -> bool:
    """Wait (at most `timeout` seconds) until the tables given to the background are analysed; True then."""
    return _analyser(db).idle.wait(timeout)


class _Analyser:
    """The tables of `db` waiting to be analysed, and the thread analysing them while any are."""

    def __init__(self, db):
        self.db = weakref.ref(db)  # the registry's key: a strong reference would keep it forever
        self.pending: set[str] = set()
        self.lock = threading.Lock()
        self.running = False
        self.idle = threading.Event()
        self.idle.set()
        self.until_quiet: Callable[[], object] | None = None

    def add(self, tables: Iterable[str], until_quiet: Callable[[], object] | None = None) -> None:
        with self.lock:
            self.pending.update(tables)
            self.until_quiet = until_quiet
            self.idle.clear()
            if not self.running:
                self.running = True
                threading.Thread(target=self._run, name="fonds-analyse", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self.lock:
                if not self.pending:
                    self.running = False
                    self.idle.set()
                    return
                until_quiet = self.until_quiet
            if until_quiet is not None:
                until_quiet()  # tables named meanwhile are taken too
            with self.lock:
                tables, self.pending = self.pending, set()
            db = self.db()
            if db is None:
                continue
            try:
                analyze(db, tables)
            except Exception as exc:  # statistics are an optimisation: a failure must not end the thread
                log.warning("statistics of %s not gathered: %s", ", ".join(sorted(tables)), exc)


_ANALYSERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ANALYSERS_LOCK = threading.Lock()


def _analyser(db) -> _Analyser:
    with _ANALYSERS_LOCK:
        if db not in _ANALYSERS:
            _ANALYSERS[db] = _Analyser(db)
        return _ANALYSERS[db]
