"""The search engine of one process: the index directory, the indexer (when this process holds
the writer lock) and the readers searches use, with the wait that gives read-your-writes."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import tantivy

from fonds.config import Settings
from fonds.records.registry import Registry
from fonds.search.fields import build_catalog
from fonds.search.index import IndexDirectory, IndexUnavailable, WriterLock
from fonds.search.indexer import DocumentBuilder, Indexer, IndexerThread
from fonds.search.service import SearchParams, SearchScope, run_search
from fonds.storage import change_log
from fonds.storage.db import Database

FOLLOWER_POLL_SECONDS = 0.01
# For crash-recovery tests only: `index-stalled` opens the index but applies no change.
FAULT_ENV = "FONDS_FAULT"


@dataclass(frozen=True)
class Status:
    applied: int
    head: int
    generation: str | None
    size_bytes: int
    documents: int
    writer: bool

    @property
    def lag(self) -> int:
        return max(0, self.head - self.applied)


class SearchEngine:
    def __init__(self, settings: Settings, db: Database, registry: Registry, render: Callable):
        self.settings, self.db, self.registry = settings, db, registry
        self.catalog = build_catalog(registry)
        self.directory = IndexDirectory(settings.effective_index_dir, self.catalog)
        self.builder = DocumentBuilder(registry, render, self.catalog)
        self.indexer = Indexer(self.directory, db, self.builder)
        self._applied = threading.Condition()
        # Beside the index directory, not in it: deleting the directory must not free the lock.
        lock = WriterLock(self.directory.path.with_name(self.directory.path.name + ".writer.lock"))
        self.thread = IndexerThread(self.indexer, lock, self._notify, stalled=os.environ.get(FAULT_ENV) == "index-stalled")
        self._reader: tuple[str, tantivy.Index, int] | None = None
        self._reader_lock = threading.Lock()

    # -- life cycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self.db.after_write.append(self.thread.wake.set)
        self.thread.start()

    def stop(self) -> None:
        if self.thread.wake.set in self.db.after_write:
            self.db.after_write.remove(self.thread.wake.set)
        self.thread.stop()

    @property
    def is_writer(self) -> bool:
        return self.thread.lock.held and self.indexer.index is not None

    def _notify(self) -> None:
        with self._applied:
            self._applied.notify_all()

    # -- reading ----------------------------------------------------------------------------------

    def head(self) -> int:
        with self.db.read() as conn:
            return change_log.head(conn)

    def applied(self) -> int:
        if self.is_writer:
            return self.indexer.applied
        name = self.directory.current_name()
        return self.directory.applied(name) if name else 0

    def wait_for(self, seq: int, timeout: float) -> bool:
        """Wait until the index has applied change `seq`, at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.applied() < seq:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self.is_writer:
                self.thread.hurry()
                with self._applied:
                    self._applied.wait(min(remaining, 0.05))
            else:
                time.sleep(min(remaining, FOLLOWER_POLL_SECONDS))
        return True

    def index(self) -> tantivy.Index:
        """The live generation to search (IndexUnavailable while there is none yet)."""
        if self.is_writer:
            return self.indexer.index
        with self._reader_lock:
            name = self.directory.current_name()
            if name is None:
                raise IndexUnavailable("the search index is being built")
            applied = self.directory.applied(name)
            if self._reader is None or self._reader[0] != name:
                self._reader = (name, self.directory.open(name), applied)
            elif self._reader[2] != applied:
                self._reader[1].reload()
                self._reader = (name, self._reader[1], applied)
            return self._reader[1]

    def status(self) -> Status:
        name = self.directory.current_name()
        try:
            documents = self.index().searcher().num_docs
        except IndexUnavailable:
            documents = 0
        return Status(self.applied(), self.head(), name, self.directory.size_bytes(name), documents, self.is_writer)

    # -- searching ----------------------------------------------------------------------------------

    def search(self, params: SearchParams, scope: SearchScope) -> tuple[dict, int]:
        """The envelope, and how many changes committed before the search began the index had
        not applied when it answered (0: it saw them all)."""
        seq = self.head()
        deadline = time.monotonic() + self.settings.search_wait_seconds
        caught_up = self.wait_for(seq, self.settings.search_wait_seconds)
        index = self._index_by(deadline)
        behind = 0 if caught_up and index is not None else max(1, seq - self.applied())
        return run_search(index, self.catalog, params, scope), behind

    def _index_by(self, deadline: float) -> tantivy.Index | None:
        """The live generation, waiting (until `deadline`) while it is being built or replaced."""
        while True:
            try:
                return self.index()
            except IndexUnavailable:
                if time.monotonic() >= deadline:
                    return None
                time.sleep(FOLLOWER_POLL_SECONDS)
