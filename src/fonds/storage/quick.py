"""One-statement reads beside SQLAlchemy, for the hottest requests (one record by id).

SQLAlchemy Core costs tens of microseconds per execute (statement caching, result metadata,
events, pool checkout) where SQLite itself answers a primary-key lookup in a few. These reads use
raw DBAPI connections with the driver's own prepared-statement cache. A single statement runs in
one implicit transaction (autocommit), so it sees one snapshot without BEGIN/COMMIT round trips.

SQLite only: readers in WAL mode never wait for writers, so such a read does not block and may run
on the event loop itself. The connections have no busy timeout: in the rare moments SQLite
makes a reader wait (WAL recovery) the read raises `Busy` at once and the caller takes the
ordinary path in a thread. For other databases `available` is False (each read is a network
round trip, done by the ordinary path in a request thread)."""

from __future__ import annotations

import sqlite3
from collections import deque

from sqlalchemy.engine import make_url

# Idle connections kept: concurrent users are the event loop plus the odd request thread.
KEEP = 8


class Busy(Exception):
    """The database would make this read wait: take the ordinary path."""


class QuickReads:
    def __init__(self, url: str):
        parsed = make_url(url)
        path = parsed.database
        self.available = parsed.get_backend_name() == "sqlite" and bool(path) and path != ":memory:" and "mode=memory" not in url
        self._path = path
        self._idle: deque[sqlite3.Connection] = deque()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, cached_statements=512)
        conn.execute("PRAGMA query_only=1")
        conn.execute("PRAGMA busy_timeout=0")
        return conn

    def row(self, sql: str, params: tuple) -> tuple | None:
        """The first row of one statement (a tuple), or None."""
        try:
            conn = self._idle.pop()
        except IndexError:
            conn = self._connect()
        try:
            # fetchall, not fetchone: the statement runs to its end, so no snapshot stays open.
            rows = conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            conn.close()
            if "locked" in str(exc) or "busy" in str(exc):
                raise Busy() from None
            raise
        if len(self._idle) < KEEP:
            self._idle.append(conn)
        else:
            conn.close()
        return rows[0] if rows else None

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()
