"""The database handle: engine set-up per backend and the read/write transaction scopes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, MetaData, create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DisconnectionError, OperationalError

from fonds.storage import driver, links
from fonds.storage.checkpoints import Checkpoints

SQLITE_BUSY_TIMEOUT_MS = 30_000
# Each SQLite connection's page cache (the default is 2,000 KiB): with a connection per busy
# request thread and fast-lane reader, at a million records the caches filled and held ~25 MB
# more than this. The pages also sit in the operating system's cache, so a page a connection
# no longer holds costs a read from memory; the b-trees' interior pages, read by every lookup,
# stay.
SQLITE_CACHE_KIB = 512
# The write-ahead log is copied back into the database (a checkpoint, run by the write that
# passes this many pages, with an fsync) less often than SQLite's default of every 1,000 pages:
# pages written again and again (b-tree interiors, counts) are copied once per checkpoint, and a
# bulk load's commits took 40 % less time (checkpoints included). The log grows to ~64 MB. Bulk
# writes leave theirs to a thread, outside the write turn (storage/checkpoints.py).
SQLITE_WAL_CHECKPOINT_PAGES = 16_000
# Bulk writes' checkpoints, beside them (storage/checkpoints.py), start once the log holds this
# many pages not yet copied back: fewer checkpoints, each of which ends holding the write turn
# for ~80 ms, and fewer copies of pages written again and again (an index's). A 1M-record bench
# load on SQLite, each pair run one after the other: 17,198 / 16,618 records/s at 16,000 pages,
# 17,928 / 17,269 at 32,000 (3 % less CPU a record, 3 % less written); 18,020 at 32,000 against
# 17,557 at 64,000 (a larger log costs each read of a page more, looking it up in the log's index).
SQLITE_BULK_CHECKPOINT_PAGES = 32_000
# Threads serving requests (the app sets anyio's thread limiter to this) and the pool kept open
# for them: with fewer pooled connections than threads, the pool closes and reopens a connection
# (PRAGMAs and all) for a share of requests under load. Overflow is for work outside requests.
# The pool hands out the connection returned last (LIFO): the few in use stay warm, and the rest
# keep their page caches (SQLite: up to SQLITE_CACHE_KIB each, filled at scale) empty instead of
# all 16 filling.
REQUEST_THREADS = 16
# PostgreSQL sessions run without JIT: Fonds' statements are short lookups, and a plan whose row
# estimates pass JIT's cost threshold (a prepared statement's generic plan) spent 170 ms compiling
# a page of 10 records read in 1 ms. An operator's own sessions keep the server's setting.
PG_OPTIONS = "-c jit=off"


def pg_options(url: str, extra: str = "") -> str:
    """The `options` of a PostgreSQL connection to `url`: the URL's own (a search_path, say) then
    Fonds' session settings (a connect argument replaces the URL's, so they are joined here)."""
    return " ".join(part for part in (make_url(url).query.get("options"), PG_OPTIONS, extra) if part)


def normalise_url(url: str) -> str:
    """Accept plain `postgresql://` URLs and use psycopg 3 for them."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def backend_name(url: str) -> str:
    """`sqlite` or `postgresql`."""
    return make_url(normalise_url(url)).get_backend_name()


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # Let us issue BEGIN ourselves (pysqlite's implicit transactions defeat BEGIN IMMEDIATE).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
        cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_WAL_CHECKPOINT_PAGES}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection):
        # A write takes the lock up front: a deferred transaction upgrading later fails at once
        # with "database is locked" when another process wrote in between.
        immediate = conn.get_execution_options().get("fonds_write", False)
        driver.rows(conn, "BEGIN IMMEDIATE" if immediate else "BEGIN")


def _replace_dropped_connections(engine: Engine) -> None:
    """PostgreSQL: a pooled connection the server has closed (a restart, `pg_terminate_backend`,
    an idle-session timeout) is replaced before it is used. An idle connection has nothing to
    read unless the server said goodbye and closed it, so looking at its socket tells, without
    the round trip of SQLAlchemy's `pool_pre_ping` (a one-statement read transaction: 371 µs of
    CPU with it, 289 with this)."""

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection, _record, _proxy):
        if _closed_by_server(dbapi_connection):
            # The pool drops it and checks out another (or opens one).
            raise DisconnectionError("the database server closed this connection")


def _closed_by_server(dbapi_connection) -> bool:
    if dbapi_connection.closed or dbapi_connection.broken:
        return True
    try:
        # poll, not select: select refuses descriptors past 1,023, which a busy process reaches.
        waiting = select.poll()
        waiting.register(dbapi_connection.fileno(), select.POLLIN)
        return bool(waiting.poll(0))
    except (OSError, ValueError):
        return True


# A bulk write's page cache (a connection's is SQLITE_CACHE_KIB): a transaction whose changed
# pages outgrow the cache writes them out and reads them back as it goes, which about doubled the
# time a large insert took.
BULK_CACHE_KIB = 64 * 1024
# A bulk load is a stream of imports a few ms apart; past this its connection is closed.
BULK_IDLE_SECONDS = 2.0


def writers_take_turns(conn: Connection) -> bool:
    """Whether a write transaction holds the database's one write lock from its start (SQLite's
    BEGIN IMMEDIATE, `Database.write`): no other writer's change can come between what it reads
    and what it writes, so row locks and checks against concurrent writers are not needed."""
    return conn.dialect.name == "sqlite"


def _begun_at_once(conn: Connection):
    """`conn.begin()` (SQLite: BEGIN IMMEDIATE), or None if another connection holds the write
    lock, without waiting for it (the busy timeout set aside meanwhile)."""
    raw = conn.connection.dbapi_connection
    raw.execute("PRAGMA busy_timeout=0")
    try:
        return conn.begin()
    except OperationalError as error:
        if getattr(error.orig, "sqlite_errorcode", None) != sqlite3.SQLITE_BUSY:
            raise
        conn.rollback()
        return None
    finally:
        raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")


def sqlite_file(url: str) -> str | None:
    """The file of a SQLite database on disk; None for another database or one in memory."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:" or "mode=memory" in url:
        return None
    return parsed.database


class WriteTurns:
    """The lock the processes writing to one SQLite file take turns with, before SQLite's own:
    `flock` on a file beside it (`<file>-write.lock`). One waiting for SQLite's lock polls it,
    with sleeps of up to 100 ms (its busy handler): while two processes wrote large imports in
    turn, a process polling for it found it free only between their writes, if at all. One
    waiting for this lock is woken as it is released, and the kernel releases it if its holder
    dies. Within a process, writers queue on the database's own lock first. `path` None (a
    database in memory, which no other process writes): no lock."""

    def __init__(self, path: str | None):
        self.path = path
        self._fd: int | None = None
        self._pid: int | None = None

    def acquire(self, *, blocking: bool = True) -> bool:
        if self.path is None:
            return True
        try:
            fcntl.flock(self._file(), fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def release(self) -> None:
        if self.path is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    def _file(self) -> int:
        # Opened by each process: a process forked from this one would share its lock.
        if self._pid != os.getpid():
            self._fd, self._pid = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600), os.getpid()
        return self._fd

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = self._pid = None


def leave_pool(conn: Connection) -> None:
    """SQLite: close `conn` when it is released instead of pooling it, for a connection that ran
    bulk work. SQLite keeps up to 128 prepared statements a connection, and those of bulk work
    (lists of hundreds of values) are the largest: a connection that had written or indexed
    100,000 records kept ~6 MB of them for as long as it stayed in the pool. PostgreSQL prepares
    statements in the server, not in this process: nothing."""
    if conn.dialect.name == "sqlite":
        conn.detach()


def _start(conn: Connection, tables) -> None:
    conn.info["fonds_tables"] = tables
    # Row locks taken in this transaction (connection info outlives it: reset for each).
    conn.info["fonds_locked"] = set()


class Database:
    def __init__(self, url: str, metadata: MetaData):
        self.url = normalise_url(url)
        self.metadata = metadata
        self.kind = backend_name(self.url)
        if self.kind == "sqlite":
            self.engine = create_engine(
                self.url, pool_size=REQUEST_THREADS, max_overflow=REQUEST_THREADS, pool_use_lifo=True, hide_parameters=True
            )
            _configure_sqlite(self.engine)
        else:
            self.engine = create_engine(
                self.url,
                pool_size=REQUEST_THREADS,
                max_overflow=REQUEST_THREADS,
                pool_use_lifo=True,
                hide_parameters=True,
                connect_args={"options": pg_options(self.url)},
            )
            _replace_dropped_connections(self.engine)
        # hide_parameters: a logged database error must not carry a password hash or token hash.
        # SQLite has one writer: queue writers of this process here instead of on the file lock.
        self._write_lock = threading.Lock() if self.kind == "sqlite" else None
        self._bulk: Connection | None = None  # SQLite: `bulk_write`'s connection, under the write lock
        self._writer: Connection | None = None  # SQLite: `write`'s connection, under the write lock
        self._bulk_used = float("-inf")
        self.tables = metadata.tables
        self._open_read = threading.local()
        # Called after every committed write (the search indexer wakes up to apply the change).
        self.after_write: list[Callable[[], None]] = []
        path = sqlite_file(self.url)
        self._turns = WriteTurns(f"{path}-write.lock" if path is not None else None)
        # SQLite on a file: bulk writes' checkpoints, run beside them (storage/checkpoints.py).
        self.checkpoints = Checkpoints(path, SQLITE_BULK_CHECKPOINT_PAGES, self._turn) if path is not None else None

    @contextmanager
    def _turn(self) -> Iterator[None]:
        """The write turn (SQLite): this process's writers queue on its lock, then take the file's turn."""
        with self._write_lock, self._turns:
            yield

    @contextmanager
    def write(self) -> Iterator[Connection]:
        with self._transaction() as conn:
            yield conn
        self.wrote()

    def wrote(self) -> None:
        """Tell the listeners a write committed (in this process, or one it asked to write)."""
        for listener in self.after_write:
            listener()

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        if self._write_lock is None:
            with self.engine.connect() as conn, conn.begin():
                _start(conn, self.tables)
                yield conn
            return
        with self._turn(), self._kept_transaction(self._writer or self._open_writer(), self._close_writer) as conn:
            yield conn

    @contextmanager
    def _kept_transaction(self, conn: Connection, close: Callable[[], None]) -> Iterator[Connection]:
        """A write transaction on a connection this process keeps (SQLite: the writer's, the bulk
        writes'). A refused write leaves it as it was; whatever state a failed commit or rollback
        left it in goes with it (`close`)."""
        try:
            with conn.begin():
                _start(conn, self.tables)
                yield conn
        finally:
            if conn.invalidated or conn.closed or conn.in_transaction() or conn.connection.dbapi_connection.in_transaction:
                close()

    @contextmanager
    def bulk_write(self) -> Iterator[Connection]:
        """A write transaction for bulk work (a batch import: reserving its ids, then writing it).
        SQLite: on a connection of its own, with a page cache of up to BULK_CACHE_KIB, kept between
        bulk writes for its prepared statements and closed once none has run for BULK_IDLE_SECONDS
        (`close_idle_bulk`). Opened for each, a connection prepared every statement again (a
        256-row INSERT is a large one: about 6 % of a batch import's work in the server). Its
        pages stay cached from one import to the next (the b-trees' interiors, the index pages
        new rows go to): let go after each write, the server's part of a 100,000-record load took
        6-8 % more CPU a record, reading them back. They go with it once the imports stop. Not
        pooled: its statements are the largest, and go when it is closed. PostgreSQL: `write`."""
        if self._write_lock is None:
            with self.write() as conn:
                yield conn
            return
        with self._turn():
            try:
                with self._kept_transaction(self._bulk or self._open_bulk(), self._close_bulk) as conn:
                    yield conn
            except BaseException:
                self._close_bulk()  # a refused import's connection goes too, rolled back or not
                raise
            finally:
                self._bulk_used = time.monotonic()
        if self.checkpoints is not None:
            self.checkpoints.after_write()
        self.wrote()

    def _open_writer(self) -> Connection:
        """SQLite: the connection this process's writes take turns on, kept from one to the next.
        Taken from the pool for each, a write spent ~45 µs checking it out and back (a third of
        an empty write's cost), more while threads queued for it."""
        self._writer = self._kept_connection()
        return self._writer

    def _close_writer(self) -> None:
        conn, self._writer = self._writer, None
        if conn is not None:
            conn.close()

    def _open_bulk(self) -> Connection:
        conn = self._kept_connection()  # its prepared statements and cache go when it is closed
        conn.connection.dbapi_connection.execute(f"PRAGMA cache_size=-{BULK_CACHE_KIB}")
        conn.info[links.BULK] = True  # its links wait apart, to be merged in bulk
        if self.checkpoints is not None:
            self.checkpoints.take_over(conn.connection.dbapi_connection)
        self._bulk = conn
        return conn

    def _kept_connection(self) -> Connection:
        """A write connection of its own, closed by the one keeping it, never returned to the pool."""
        conn = self.engine.connect().execution_options(fonds_write=True)
        leave_pool(conn)
        return conn

    def _close_bulk(self) -> None:
        conn, self._bulk = self._bulk, None
        if conn is not None:
            conn.close()

    @property
    def bulk_connection_open(self) -> bool:
        return self._bulk is not None

    def close_idle_bulk(self, idle_seconds: float = BULK_IDLE_SECONDS) -> bool:
        """Close the bulk connection if no bulk write has used it for `idle_seconds` (waiting for
        the write that runs, if any); True if it was closed."""
        if self._write_lock is None:
            return False
        with self._write_lock:
            if self._bulk is None or time.monotonic() - self._bulk_used < idle_seconds:
                return False
            self._close_bulk()
            return True

    @contextmanager
    def write_if_free(self) -> Iterator[Connection | None]:
        """A write transaction, or None at once if another write holds the SQLite lock (of this
        process, or of another: a process writing a large import): for bookkeeping (a session's
        last use) that must not wait behind a long write."""
        if self._write_lock is None:
            with self.write() as conn:
                yield conn
            return
        if not self._write_lock.acquire(blocking=False):
            yield None
            return
        with contextlib.ExitStack() as held:
            held.callback(self._write_lock.release)
            if not self._turns.acquire(blocking=False):
                yield None
                return
            held.callback(self._turns.release)
            conn = held.enter_context(self.engine.connect().execution_options(fonds_write=True))
            transaction = _begun_at_once(conn)  # another program may write without taking turns
            if transaction is None:
                yield None
                return
            with transaction:
                _start(conn, self.tables)
                yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction; inside one already open on this thread, that same one (so a
        request's session check, permission check and record read share one transaction)."""
        current = getattr(self._open_read, "conn", None)
        if current is not None:
            yield current
            return
        with self.engine.connect() as conn, conn.begin():
            _start(conn, self.tables)
            self._open_read.conn = conn
            try:
                yield conn
            finally:
                self._open_read.conn = None

    @property
    def version(self) -> str:
        with self.engine.connect() as conn:
            return str(conn.dialect.server_version_info and ".".join(map(str, conn.dialect.server_version_info)))

    def dispose(self) -> None:
        if self.checkpoints is not None:
            self.checkpoints.wait()
        if self._write_lock is not None:
            with self._write_lock:
                self._close_bulk()
                self._close_writer()
        self._turns.close()
        self.engine.dispose()
