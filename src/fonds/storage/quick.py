"""One-statement reads beside SQLAlchemy, for the hottest requests (one record by id).

SQLAlchemy Core costs tens of microseconds per execute (statement caching, result metadata,
events, pool checkout) where SQLite itself answers a primary-key lookup in a few. These reads use
raw DBAPI connections with the driver's own prepared-statement cache. A single statement runs in
one implicit transaction (autocommit), so it sees one snapshot without BEGIN/COMMIT round trips.

On SQLite readers in WAL mode never wait for writers, so such a read does not block and may run
on the event loop itself. The connections have no busy timeout: in the rare moments SQLite
makes a reader wait (WAL recovery) the read raises `Busy` at once and the caller takes the
ordinary path in a thread. On PostgreSQL a read waits on the network (`blocking`): one statement
runs on the event loop over an asynchronous connection (`row_soon`: no thread hop, no handing
the GIL back and forth between threads), several in a thread; either way one round trip per
statement on an autocommit connection kept here."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sqlalchemy.engine import make_url

from fonds.storage.db import SQLITE_CACHE_KIB, pg_options, sqlite_file

# Idle connections kept: concurrent users are the event loop plus the odd request thread.
KEEP = 8
# PostgreSQL sessions of these connections. Their statements are few, fixed and run thousands
# of times: each is prepared at its first run and keeps one generic plan, as planning an
# archival object's page (its position and ancestors are subqueries) took 1–2 ms, more than
# running it. The statements are written so that one plan serves every parameter (a page reads
# the (repo_id, id) index in its order).
PG_PLANS = "-c plan_cache_mode=force_generic_plan"


T = TypeVar("T")
Query = Callable[[str, tuple], list[tuple]]


class Busy(Exception):
    """The database would make this read wait: take the ordinary path."""


class QuickReads:
    def __init__(self, url: str):
        parsed = make_url(url)
        self.kind = parsed.get_backend_name()
        self.available = self.kind == "postgresql" or sqlite_file(url) is not None
        # Whether a read waits on the network (PostgreSQL): the caller then runs it in a thread.
        self.blocking = self.kind == "postgresql"
        self._target = (
            parsed.database if self.kind == "sqlite" else parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        )
        self._pg_session = {"autocommit": True, "prepare_threshold": 0, "options": pg_options(url, PG_PLANS)}
        self._idle: deque = deque()
        # PostgreSQL's asynchronous connections, each with the event loop it serves; at most KEEP.
        self._idle_async: deque = deque()
        self._async_open = 0
        self._sql: dict[str, str] = {}
        # PostgreSQL reads run on these threads (a plain executor costs less per hop than
        # anyio's), which also bounds the connections kept here to KEEP.
        self.executor = ThreadPoolExecutor(KEEP, thread_name_prefix="fonds-quick") if self.blocking else None

    def _connect(self):
        if self.kind == "postgresql":
            import psycopg

            return psycopg.connect(self._target, **self._pg_session)
        conn = sqlite3.connect(self._target, isolation_level=None, check_same_thread=False, cached_statements=512)
        conn.execute("PRAGMA query_only=1")
        conn.execute("PRAGMA busy_timeout=0")
        conn.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
        return conn

    def _dialect_sql(self, sql: str) -> str:
        if self.kind != "postgresql":
            return sql
        converted = self._sql.get(sql)
        if converted is None:
            converted = self._sql[sql] = sql.replace("?", "%s")
        return converted

    def rows(self, sql: str, params: tuple) -> list[tuple]:
        """The rows of one statement (tuples): one implicit transaction."""
        return self._with_connection(lambda conn: self._all(conn, sql, params))

    async def row_soon(self, sql: str, params: tuple) -> tuple | None:
        """The first row of `rows_soon`, or None."""
        rows = await self.rows_soon(sql, params)
        return rows[0] if rows else None

    async def rows_soon(self, sql: str, params: tuple) -> list[tuple]:
        """`rows` without blocking the event loop: on it with SQLite, over an asynchronous
        connection with PostgreSQL (in a thread while KEEP of them are busy)."""
        if not self.blocking:
            return self.rows(sql, params)
        conn = await self._async_connection()
        if conn is None:
            return await asyncio.get_running_loop().run_in_executor(self.executor, self.rows, sql, params)
        try:
            rows = await (await conn.execute(self._dialect_sql(sql), params, binary=True)).fetchall()
        except BaseException as exc:  # cancelled mid-statement too: the connection's state is unknown
            self._async_open -= 1
            await conn.close()
            if _lost_connection(exc):
                raise Busy() from None
            raise
        self._idle_async.append((asyncio.get_running_loop(), conn))
        return rows

    async def _async_connection(self):
        """An idle asynchronous connection of this event loop, a new one, or None at KEEP."""
        import psycopg

        loop = asyncio.get_running_loop()
        while self._idle_async:
            made_for, conn = self._idle_async.pop()
            if made_for is loop:
                return conn
            # Another (finished) event loop's, as a test client's: its connections cannot serve this one.
            self._async_open -= 1
            await conn.close()
        if self._async_open >= KEEP:
            return None
        self._async_open += 1
        try:
            return await psycopg.AsyncConnection.connect(self._target, **self._pg_session)
        except BaseException:
            self._async_open -= 1
            raise

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
        if self.kind == "postgresql":
            return conn.execute(self._dialect_sql(sql), params, binary=True).fetchall()
        return conn.execute(sql, params).fetchall()

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
        while self._idle_async:
            _, conn = self._idle_async.pop()
            conn.pgconn.finish()  # what its (asynchronous) close does, without an event loop


def _lost_connection(exc: Exception) -> bool:
    """A PostgreSQL connection that broke (server restarted, network): the ordinary path, with
    its pool's pre-ping, answers instead."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    return isinstance(exc, psycopg.OperationalError)
