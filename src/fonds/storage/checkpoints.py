"""SQLite: the checkpoints of bulk writes, run beside the writes rather than inside them.

The write-ahead log is copied back into the database file (a checkpoint) once it holds
SQLITE_WAL_CHECKPOINT_PAGES pages. SQLite runs that checkpoint in the commit that passes the
mark, so the bulk write committing held the write turn (`db.WriteTurns`) through the copy and its
fsyncs too, while the other process writing imports waited for the turn: importing 100,000
records into a million-record database, a checkpoint every dozen imports took 150-250 ms, and
checkpoints were a fifth of the time the turn was held (bench's import path, one process:
49-56 µs a record in the turn with them, 36-44 without, the same CPU in all).

So a bulk connection checkpoints nothing itself (`wal_autocheckpoint=0`). After each bulk
write, once `db.SQLITE_BULK_CHECKPOINT_PAGES` pages of the log are not yet copied back, a
thread copies them back on a connection of its own (PASSIVE: the writes go on meanwhile, into
the log after them), again for what the writes added during that copy, and then, taking the
write turn, for the little left.
The log starts again from its beginning only when a write begins with all of it copied back,
which the last copy leaves it; without it the log would grow through a whole load. (A read
under way as that write begins, a search indexer catching up say, keeps it from starting
again then, as it kept SQLite's own checkpoints from it.)

How much of the log is copied back is read from the header of its index, the `-shm` file, whose
format SQLite documents (https://www.sqlite.org/walformat.html). Where it cannot be read, the bulk
connection checkpoints as every other connection does."""

from __future__ import annotations

import logging
import os
import sqlite3
import struct
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

log = logging.getLogger("fonds.storage")

# The wal-index header's version; where it holds the pages in the log (WalIndexHdr.iVersion at
# 0, mxFrame at 16) and the pages of it copied back (WalCkptInfo.nBackfill at 96).
WAL_INDEX_VERSION = 3007000
_VERSION_AND_PAGES = struct.Struct("=I12xI")
_COPIED = struct.Struct("=I")
_COPIED_AT = 96
# Copies beside the writes, at most, before the last in the write turn: each copies back what
# the writes added during the one before (a few hundred pages after the first).
ROUNDS = 8


class Checkpoints:
    """The checkpoints of one SQLite file's bulk writes, in this process. `turn`: the write
    turn of the file's writers (the last copy of each checkpoint holds it)."""

    def __init__(self, path: str, pages: int, turn: Callable[[], AbstractContextManager]):
        self.path, self.pages, self.turn = path, pages, turn
        self._lock = threading.Lock()
        self._running: threading.Thread | None = None

    def log_pages(self) -> tuple[int, int] | None:
        """(pages in the log, pages of them copied back), or None if the log's index cannot be read."""
        index = _log_index(f"{self.path}-shm")
        if index is None:
            return None
        try:
            header = os.pread(index, _COPIED_AT + _COPIED.size, 0)
        except OSError:
            return None
        if len(header) < _COPIED_AT + _COPIED.size:
            return None
        version, pages = _VERSION_AND_PAGES.unpack_from(header)
        if version != WAL_INDEX_VERSION:
            return None
        return pages, _COPIED.unpack_from(header, _COPIED_AT)[0]

    def take_over(self, dbapi_connection: sqlite3.Connection) -> None:
        """Leave a new bulk connection's checkpoints to this, if the log's index can be read."""
        if self.log_pages() is not None:
            dbapi_connection.execute("PRAGMA wal_autocheckpoint=0")

    def after_write(self) -> None:
        """After a bulk write's turn: start copying the log back if it is due and no copy runs."""
        found = self.log_pages()
        if found is None or found[0] - found[1] < self.pages:
            return
        with self._lock:
            if self._running is None:
                self._running = threading.Thread(target=self._checkpoint, name="fonds-checkpoint", daemon=True)
                self._running.start()

    def _checkpoint(self) -> None:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA synchronous=NORMAL")  # as the writers': the copy is synced, not each commit
                for _ in range(ROUNDS):
                    busy, pages, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if busy or pages - copied < self.pages // 16:
                        break
                if not busy:  # else another process copies it back
                    with self.turn():
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            finally:
                conn.close()
        except sqlite3.Error:
            # The log is copied back by the next bulk write's checkpoint, or another connection's.
            log.warning("a checkpoint of %s beside its bulk writes failed", self.path, exc_info=True)
        finally:
            with self._lock:
                self._running = None

    def wait(self) -> None:
        """Wait for the checkpoint under way, if any."""
        with self._lock:
            running = self._running
        if running is not None:
            running.join()


# The log index file of each database this process read, open: {path: (descriptor, inode)}.
# Never closed while it is the file SQLite uses: closing any descriptor of a file lets go of every
# POSIX lock this process holds on it, SQLite's own locks of the log included (a server closing
# one after each read crashed within a minute of a bulk load). SQLite removes the file when the
# last connection to the database closes and makes a new one later: the descriptor of the file
# removed, which no connection uses any more, is then closed and the new one opened.
_LOG_INDEXES: dict[str, tuple[int, int]] = {}
_LOG_INDEXES_LOCK = threading.Lock()


def _log_index(path: str) -> int | None:
    try:
        inode = os.stat(path).st_ino
    except OSError:
        return None
    with _LOG_INDEXES_LOCK:
        found = _LOG_INDEXES.get(path)
        if found is not None and found[1] == inode:
            return found[0]
        try:
            index = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        _LOG_INDEXES[path] = (index, os.fstat(index).st_ino)
        if found is not None:
            os.close(found[0])
        return index
