"""A large batch import's records validated in a process of their own.

Validation (normalising, the schema, the type's checks, defaults, finding the refs) is Python
from end to end: in the server it holds the interpreter, which the write of the import before it
needs as well, so a bulk load used one core of two (a 2,000-record import: ~38 µs a record to
validate, ~73 µs to write). Here the records of an import of at least `min_records` go, in
chunks, to one process that validates them while the server writes the import before; they come
back as JSON (orjson's, a few µs a record both ways).

The process is spawned (the server has threads) when the first large import comes, which
validates in the server meanwhile; it is stopped once no import has used it for
`IDLE_SECONDS` (`stop_if_idle`), and its memory is the server's while it runs. It validates
against the value lists the import read (sent along); should it fail to start or die, imports
validate in the server, as smaller ones always do."""

from __future__ import annotations

import gc
import importlib
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import resource_tracker

import orjson

from fonds.errors import Invalid

log = logging.getLogger("fonds.records")


class Refused(Exception):
    """A record the process refused: its place among the records sent, and why (as `prepare_doc` says)."""

    def __init__(self, index: int, error: Invalid):
        super().__init__(index, error)
        self.index, self.error = index, error


# Records a task sends at once: the import's progress moves on by this many, and the first
# invalid record stops the chunks after it.
CHUNK = 1000


class ImportValidation:
    # A stream of imports follows one another within a second; past this the ~90 MB go back.
    IDLE_SECONDS = 10.0

    def __init__(self, registry_source: str | None, *, strict: bool, min_records: int):
        self.registry_source, self.strict, self.min_records = registry_source, strict, min_records
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._started: Future | None = None
        self._in_use = 0
        self._last_used = float("-inf")
        self._closed = registry_source is None  # nowhere to import the record types from

    def validate(
        self, names: list[str], docs: list[dict], created: dict[str, str], lists, progress: Callable[[int], None] | None
    ) -> list[tuple[dict, dict, list]] | None:
        """Each record's (clean record, warnings, refs) in order, validated in the process (the
        records of type `names[i]`, temporary refs replaced by `created`, against `lists`); or
        None: validate them here (a small import, or the process not ready, or gone). A record
        `prepare_doc` refuses is `Refused`, with its place."""
        if not self.min_records or len(docs) < self.min_records:
            return None
        pool = self._acquire()
        if pool is None:
            return None
        futures: list[Future] = []
        try:
            results = self._results(pool, futures, names, docs, created, lists, progress)
        except BaseException:
            self._release(pool)
            raise
        finally:
            for future in futures:
                future.cancel()
        self._release(pool, broken=results is None)
        return results

    def _results(self, pool, futures: list[Future], names, docs, created, lists, progress) -> list[tuple[dict, dict, list]] | None:
        """The chunks' answers in order; None if the process died or was stopped meanwhile."""
        try:
            for start in range(0, len(docs), CHUNK):
                chunk = orjson.dumps(docs[start : start + CHUNK])
                futures.append(
                    pool.submit(_validate, self.registry_source, names[start : start + CHUNK], chunk, created, lists, self.strict)
                )
        except RuntimeError:  # BrokenProcessPool, or the pool shut down
            return None
        results: list[tuple[dict, dict, list]] = []
        for future in futures:
            try:
                answer = orjson.loads(future.result())
            except (BrokenProcessPool, CancelledError):
                return None
            if "invalid" in answer:
                raise Refused(len(results) + answer["invalid"], Invalid(answer["error"], answer["warning"]))
            results += answer["records"]
            if progress is not None:
                progress(len(results))
        return results

    def start(self) -> Future | None:
        """Start the process unless it runs; its start-up's future (None once closed)."""
        with self._lock:
            if not self._closed and self._pool is None:
                self._start()
            return self._started

    def _acquire(self) -> ProcessPoolExecutor | None:
        with self._lock:
            if self._closed:
                return None
            if self._pool is None:
                self._start()
                return None
            if not self._started.done():
                return None
            if self._started.exception() is not None:
                return None  # stays so until the pool is stopped as idle, then is tried again
            self._in_use += 1
            return self._pool

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        try:
            self._pool = ProcessPoolExecutor(1, mp_context=context, initializer=_prepare_process)
            self._started = self._pool.submit(_ready, self.registry_source, self.strict)
            self._started.add_done_callback(_log_failed_start)
        except OSError:
            log.exception("could not start the process validating large imports; they validate in the server")
            self._pool, self._started = None, None
        self._last_used = time.monotonic()

    def _release(self, pool: ProcessPoolExecutor, *, broken: bool = False) -> None:
        with self._lock:
            self._in_use -= 1
            self._last_used = time.monotonic()
            if broken and self._pool is pool:
                log.error("the process validating large imports stopped; imports validate in the server until it starts again")
                self._pool, self._started = None, None
        if broken:
            self._shut(pool)

    def stop_if_idle(self, idle_seconds: float = IDLE_SECONDS) -> bool:
        """Stop the process if no import has used it for `idle_seconds`; True if it was stopped."""
        with self._lock:
            if self._pool is None or self._in_use or time.monotonic() - self._last_used < idle_seconds:
                return False
            pool, self._pool, self._started = self._pool, None, None
            _stop_with_tracker(pool)
        return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool, self._started = self._pool, None, None
            if pool is not None:
                _stop_with_tracker(pool)

    @property
    def running(self) -> bool:
        return self._pool is not None

    @staticmethod
    def _shut(pool: ProcessPoolExecutor) -> None:
        pool.shutdown(wait=False, cancel_futures=True)


def _stop_with_tracker(pool: ProcessPoolExecutor) -> None:
    """Stop the pool, then the resource tracker multiprocessing started with it (a process of
    ~15 MB, 8 of them its own, that would otherwise stay for the server's lifetime; the next
    pool starts it again). Under the caller's lock, so no pool starts meanwhile, and once the
    pool has given back what the tracker tracks (its queues' semaphores)."""
    pool.shutdown(wait=True, cancel_futures=True)
    stop = getattr(resource_tracker._resource_tracker, "_stop", None)  # not public API: skipped if gone
    if stop is not None:
        stop()


def _log_failed_start(started: Future) -> None:
    if not started.cancelled() and started.exception() is not None:
        log.error("the process validating large imports did not start; they validate in the server", exc_info=started.exception())


# -- in the validating process -------------------------------------------------------------------

_PREPARERS: dict = {}


class _SentLists:
    """The value lists an import read, as the validator asks for them."""

    snapshot = None

    def refresh(self, conn=None):
        return self.snapshot


def _prepare_process() -> None:
    # The records of a chunk hold no cycles and are let go at its end: the collector would walk
    # them again and again as they are made.
    gc.disable()


def _ready(registry_source: str, strict: bool) -> bool:
    _preparer(registry_source, strict)
    # What the process holds from now on is never garbage: not walked by each collection.
    gc.freeze()
    return True


def _preparer(registry_source: str, strict: bool):
    key = (registry_source, strict)
    found = _PREPARERS.get(key)
    if found is None:
        from fonds.records.preparation import RecordPreparer
        from fonds.records.schemas import SchemaSet, load_schema_files

        module, name = registry_source.split(":")
        registry = getattr(importlib.import_module(module), name)
        schemas = SchemaSet(load_schema_files(), {t.name for t in registry})
        found = _PREPARERS[key] = (registry, RecordPreparer(schemas, registry, _SentLists(), strict=strict))
    return found


def _validate(registry_source: str, names: list[str], payload: bytes, created: dict[str, str], lists, strict: bool) -> bytes:
    from fonds.records.validation import find_refs

    registry, preparer = _preparer(registry_source, strict)
    preparer.validator.value_lists.snapshot = lists
    schemas, out = preparer.schemas, []
    for index, (name, doc) in enumerate(zip(names, orjson.loads(payload))):
        record_type = registry[name]
        try:
            clean, warnings, _ = preparer.prepare_doc(record_type, doc, creating=True, refresh=False, replace_refs=created)
        except Invalid as error:
            return orjson.dumps({"invalid": index, "error": error.error, "warning": error.extra.get("warning") or {}})
        out.append((clean, warnings, find_refs(schemas, schemas[name], clean)))
    answer = orjson.dumps({"records": out})
    del out
    gc.collect()  # what an exception's traceback left in cycles; the rest is frozen or freed
    return answer
