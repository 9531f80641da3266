"""One-statement reads beside SQLAlchemy, for the hottest requests (one record by id).

SQLAlchemy Core costs tens of microseconds per execute (statement caching, result metadata,
events, pool checkout) where SQLite itself answers a primary-key lookup in a few. These reads use
raw DBAPI connections with the driver's own prepared-statement cache. A single statement runs in
one implicit transaction (autocommit), so it sees one snapshot without BEGIN/COMMIT round trips.

On SQLite readers in WAL mode never wait for writers, so such a read does not block and may run
on the event loop itself. The connections have no busy timeout: in the rare moments SQLite
makes a reader wait (WAL recovery) the read raises `Busy` at once and the caller takes the
ordinary path in a thread. On PostgreSQL a read waits on the network (`blocking`): the caller
runs it in a thread, one round trip on an autocommit connection kept here."""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sqlalchemy.engine import make_url

# Idle connections kept: concurrent users are the event loop plus the odd request thread.
KEEP = 8


T = TypeVar("T")
Query = Callable[[str, tuple], list[tuple]]


class Busy(Exception):
    """The database would make this read wait: take the ordinary path."""


class QuickReads:
    def __init__(self, url: str):
        parsed = make_url(url)
        self.kind = parsed.get_backend_name()
        self.available = self.kind == "postgresql" or (
            self.kind == "sqlite" and bool(parsed.database) and parsed.database != ":memory:" and "mode=memory" not in url
        )
        # Whether a read waits on the network (PostgreSQL): the caller then runs it in a thread.
        self.blocking = self.kind == "postgresql"
        self._target = (
            parsed.database if self.kind == "sqlite" else parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        )
        self._idle: deque = deque()
        self._sql: dict[str, str] = {}
        # PostgreSQL reads run on these threads (a plain executor costs less per hop than
        # anyio's), which also bounds the connections kept here to KEEP.
        self.executor = ThreadPoolExecutor(KEEP, thread_name_prefix="fonds-quick") if self.blocking else None

    def _connect(self):
        if self.kind == "postgresql":
            import psycopg

            return psycopg.connect(self._target, autocommit=True)
        conn = sqlite3.connect(self._target, isolation_level=None, check_same_thread=False, cached_statements=512)
        conn.execute("PRAGMA query_only=1")
        conn.execute("PRAGMA busy_timeout=0")
        return conn

    def _dialect_sql(self, sql: str) -> str:
        if self.kind != "postgresql":
            return sql
        converted = self._sql.get(sql)
        if converted is None:
            converted = self._sql[sql] = sql.replace("?", "%s")
        return converted

    def row(self, sql: str, params: tuple) -> tuple | None:
        """The first row of one statement (a tuple), or None: one implicit transaction."""
        rows = self._with_connection(lambda conn: self._all(conn, sql, params))
        return rows[0] if rows else None

    def snapshot(self, work: Callable[[Query], T]) -> T:
        """`work(query)` where `query(sql, params)` returns all rows: its statements in one read
        transaction, so they see one state of the database."""

        def run(conn) -> T:
            if self.kind == "postgresql":
                with conn.transaction():
                    return work(lambda sql, params: self._all(conn, sql, params))
            conn.execute("BEGIN")
            try:
                return work(lambda sql, params: self._all(conn, sql, params))
            finally:
                conn.execute("COMMIT")

        return self._with_connection(run)

    def _all(self, conn, sql: str, params: tuple) -> list[tuple]:
        # fetchall, not fetchone: the statement runs to its end, so no snapshot stays open.
        return conn.execute(self._dialect_sql(sql), params).fetchall()

    def _with_connection(self, use: Callable[[object], T]) -> T:
        try:
            conn = self._idle.pop()
        except IndexError:
            conn = self._connect()
        try:
            result = use(conn)
        except sqlite3.OperationalError as exc:
            conn.close()
            if "locked" in str(exc) or "busy" in str(exc):
                raise Busy() from None
            raise
        except Exception as exc:
            conn.close()
            if _lost_connection(exc):
                raise Busy() from None
            raise
        if len(self._idle) < KEEP:
            self._idle.append(conn)
        else:
            conn.close()
        return result

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True)
        while self._idle:
            self._idle.pop().close()


def _lost_connection(exc: Exception) -> bool:
    """A PostgreSQL connection that broke (server restarted, network): the ordinary path, with
    its pool's pre-ping, answers instead."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    return isinstance(exc, psycopg.OperationalError)
