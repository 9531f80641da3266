"""A large batch import's records validated in a process of their own.

Validation (normalising, the schema, the type's checks, defaults, finding the refs) is Python
from end to end: in the server it holds the interpreter, which the write of the import before it
needs as well, so a bulk load used one core of two (a 2,000-record import: ~38 µs a record to
validate, ~73 µs to write). Here an import of at least `min_records` records goes to one process
that validates them while the server writes the import before: its body as it came, read there
too (`read_and_validate`, up to BODY_BYTES), or the records the server read, in chunks
(`validate`). A record whose type derives it alone (`Hooks.derive_new`: an archival object, an
accession) is derived there too and comes back as the JSON the server stores, but for the
stand-in ids of its refs to the batch's records and what the write adds: the server neither
builds nor frees its dicts (a third of its work on such a record).

On a SQLite file or PostgreSQL (`writer`), two processes take such imports instead, and each
reads, validates and writes the imports it is sent (`import_body`), through the same import path
as the server's (records/imports.py); on SQLite they take turns for the writes
(`storage.db.WriteTurns`), on PostgreSQL they write side by side. The server only passes bodies
and answers. With one process validating and the server writing, the server's interpreter, which
the write, the next import's preparation and the answers all held, bounded a bulk load at ~0.85
of a core (on PostgreSQL, medium archive: 9,683-12,048 records/s, against 11,101-13,528 with
the two writing processes, three loads each). Each writing process on SQLite reserves ids ahead
for the imports it writes next (records/id_leases.py).

The processes are spawned (the server has threads) when the first large import comes, which is
imported in the server meanwhile; they are stopped once no import has used them for
`IDLE_SECONDS` (`stop_if_idle`), and their memory is the server's while they run. A validating
process validates against the value lists the import read (sent along); a writing one reads
them in its own transactions. Should one fail to start or die, imports are validated and
written in the server, as smaller ones always are."""

from __future__ import annotations

import gc
import importlib
import io
import logging
import multiprocessing
import pickle
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import resource_tracker

import orjson

from fonds.errors import BadRequest, FondsError, Invalid
from fonds.records import refs
from fonds.records.id_leases import IdLeases
from fonds.records.import_entries import (
    Entry,
    Prepared,
    creation_order,
    parse_entries,
    parse_records,
    scopes,
    stand_in_count,
    stand_ins,
    taken_docs,
)
from fonds.records.preparation import WRITTEN_FIELDS
from fonds.records.registry import RecordType
from fonds.records.validation import check_structure, may_hold_nul

log = logging.getLogger("fonds.records")


@dataclass
class ReadAndValidated:
    """A batch import's body as the process read and validated it (`read_and_validate`)."""

    # Each record's (type name, temporary URI).
    kinds: list[tuple[str, str | None]]
    records: list[Prepared]
    order: list[int]
    # When the process had ids reserved ahead for them all (`IdLeases`): each record's, its refs
    # to the batch's records pointing at the URIs they get, and every record's refs planned.
    ids: list[int] | None = None
    linked: refs.Portable | None = None

    @classmethod
    def from_answer(cls, answer: dict) -> ReadAndValidated:
        """What the process's answer (`_read_and_validate`) holds, once it read and ordered every record."""
        return cls(answer["entries"], answer["records"], answer["order"], answer.get("ids"), answer.get("linked"))


class ImportInterrupted(FondsError):
    """503 without Retry-After: the process writing an import stopped before it answered, and
    the import may have been written (all of it) before it did."""

    status = 503

    def __init__(self):
        super().__init__("The process writing this import stopped before it answered: look for its records before sending it again")


class Refused(Exception):
    """A record the process refused: its place among the records sent, and why (as `prepare_doc` says)."""

    def __init__(self, index: int, error: Invalid):
        super().__init__(index, error)
        self.index, self.error = index, error


# Records a task sends at once: the import's progress moves on by this many, and the first
# invalid record stops the chunks after it.
CHUNK = 1000
# Largest body the process reads on the server's behalf, in one task (a larger one is read in the
# server and sent in chunks): the process holds its records and their answer at once.
BODY_BYTES = 64 * 1024 * 1024


class ImportValidation:
    # A stream of imports follows one another within a second; past this the ~90 MB go back.
    IDLE_SECONDS = 10.0

    def __init__(self, registry_source: str | None, *, strict: bool, min_records: int, writer: Callable[[], object] | None = None):
        """`writer`: builds, in a process of its own, the record service large imports are
        written with there (SQLite; None: they are only validated there, and written here)."""
        self.registry_source, self.strict, self.min_records, self.writer = registry_source, strict, min_records, writer
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._started: Future | None = None
        self._in_use = 0
        self._last_used = float("-inf")
        self._closed = registry_source is None  # nowhere to import the record types from
        # The ids reserved ahead that the process was last said to hold go with it (`IdLeases`).
        self._leases: IdLeases | None = None

    def validate(
        self, names: list[str], docs: list[dict], created: dict[str, str], lists, progress: Callable[[int], None] | None
    ) -> list[Prepared] | None:
        """Each record's `Prepared` in order, validated in the process (the
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

    def read_and_validate(self, body: bytes, repo_id: int, lists, leases: IdLeases) -> ReadAndValidated | None:
        """A batch import's body read (`import_entries`) and its records validated in the process,
        in one task: each record's (type name, temporary URI), its `Prepared`, the records'
        `creation_order`, and the ids of the records, if the process had enough of them reserved
        ahead (`leases`, handed over with each task): their refs to one another then point at the
        URIs the records get, not at stand-ins, and their refs are planned there too.
        None: read it in the server (a small body or one past BODY_BYTES, one that is not a
        well-formed batch, whose error the server words, or the process not ready, or gone). A
        record `prepare_doc` refuses is `Refused`, with its place in the batch."""
        pool = self._acquire() if self._takes(body) else None
        if pool is None:
            return None
        try:
            future = pool.submit(_read_and_validate, self.registry_source, body, repo_id, lists, self.strict, leases.take_all())
            answer = pickle.loads(future.result())
        except (RuntimeError, CancelledError):  # BrokenProcessPool, or the pool shut down
            self._release(pool, broken=True)
            return None
        except BaseException:
            self._release(pool)
            raise
        self._release(pool)
        if "read_here" not in answer:
            self._leases = leases
            leases.held_elsewhere(answer["ids_left"])
        return _read(answer)

    def import_body(self, body: bytes, repo_id: int, actor, creatable: frozenset[str]):
        """A large batch import's body imported by one of the processes writing imports (SQLite,
        `writer`): its `imports.Imported`, or an error it raised as it would be raised here
        (`creatable`: the names of the types `actor` may create). None: import it here (no
        writing processes, a small body or one past BODY_BYTES, or the processes not ready)."""
        pool = self._acquire() if self.writer is not None and self._takes(body) else None
        if pool is None:
            return None
        try:
            future = pool.submit(_import, self.writer, body, repo_id, actor, creatable)
        except RuntimeError:  # BrokenProcessPool, or the pool shut down: nothing was sent
            self._release(pool, broken=True)
            return None
        try:
            answer = pickle.loads(future.result())
        except (BrokenProcessPool, CancelledError):
            self._release(pool, broken=True)
            # It may have committed before it stopped: importing it here could create it twice.
            raise ImportInterrupted() from None
        except BaseException:
            self._release(pool)
            raise
        self._release(pool)
        if "error" in answer:
            raise answer["error"]
        return answer.get("imported")  # None: the process could not open the database (import here)

    def _takes(self, body: bytes) -> bool:
        """Whether a batch import's body goes to the processes as it came: a large one, up to BODY_BYTES."""
        return bool(self.min_records) and len(body) <= BODY_BYTES and body.count(b'"jsonmodel_type"') >= self.min_records

    def _results(self, pool, futures: list[Future], names, docs, created, lists, progress) -> list[Prepared] | None:
        """The chunks' answers in order; None if the process died or was stopped meanwhile."""
        try:
            for start in range(0, len(docs), CHUNK):
                chunk = _serialised(docs, start)
                futures.append(
                    pool.submit(_validate, self.registry_source, names[start : start + CHUNK], chunk, created, lists, self.strict)
                )
        except RuntimeError:  # BrokenProcessPool, or the pool shut down
            return None
        results: list[Prepared] = []
        for future in futures:
            try:
                answer = pickle.loads(future.result())
            except (BrokenProcessPool, CancelledError):
                return None
            _raise_refused(answer, len(results))
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
            if self.writer is None:
                self._pool = ProcessPoolExecutor(1, mp_context=context, initializer=_prepare_process)
                self._started = self._pool.submit(_ready, self.registry_source, self.strict)
            else:
                # One process is started; the pool starts the second once two imports come at once
                # (for a task no process is idle for). Both at once, a client sending its imports
                # one after another paid for starting a process it never used, beside the imports
                # the server took while they started: 20,000 records in imports of 5,000, 8,268 and
                # 8,470 records/s against 10,932 and 11,579 with one validating process.
                self._pool = ProcessPoolExecutor(WRITERS, mp_context=context, initializer=_prepare_process)
                self._started = self._pool.submit(_ready_to_write, self.writer)
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
                self._forget_ids()
        if broken:
            self._shut(pool)

    def stop_if_idle(self, idle_seconds: float = IDLE_SECONDS) -> bool:
        """Stop the process if no import has used it for `idle_seconds`; True if it was stopped."""
        with self._lock:
            if self._pool is None or self._in_use or time.monotonic() - self._last_used < idle_seconds:
                return False
            pool, self._pool, self._started = self._pool, None, None
            _stop_with_tracker(pool)
            self._forget_ids()
        return True

    def _forget_ids(self) -> None:
        """The process is gone, and the ids reserved ahead it held with it."""
        if self._leases is not None:
            self._leases.held_elsewhere({})

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


class InProcessValidation:
    """A process writing imports reads and validates the bodies it is sent itself, as the
    process validating imports for a server does (`read_and_validate`: the server sends only
    large ones), taking the ids reserved ahead by its own writes."""

    running = False

    def __init__(self, settings_of: ImportValidation):
        self.registry_source, self.strict = settings_of.registry_source, settings_of.strict

    def read_and_validate(self, body: bytes, repo_id: int, lists, leases: IdLeases) -> ReadAndValidated | None:
        return _read(_read_and_validated(self.registry_source, body, repo_id, lists, self.strict, leases))

    def validate(self, *_args, **_kwargs) -> None:
        return None

    def import_body(self, *_args, **_kwargs) -> None:
        return None

    def stop_if_idle(self, idle_seconds: float = 0.0) -> bool:
        return False

    def close(self) -> None:
        pass


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


def _read(answer: dict) -> ReadAndValidated | None:
    """What `_read_and_validated` answered: None if the server is to read the body itself; a
    record refused or a cycle among them raised, as it is raised in the server."""
    if "read_here" in answer:
        return None
    _raise_refused(answer, 0)
    if "cycle" in answer:
        raise Invalid(answer["cycle"])
    return ReadAndValidated.from_answer(answer)


def _raise_refused(answer: dict, start: int) -> None:
    """Raise the process's refusal of a record, if it refused one (its place: `start` plus its place in the task)."""
    if "invalid" in answer:
        raise Refused(start + answer["invalid"], Invalid(answer["error"], answer["warning"]))


def _serialised(docs: list[dict], start: int) -> bytes:
    """The chunk of `docs` from `start`, as JSON; one nested too deep for orjson (past MAX_DEPTH,
    so the process would refuse it) is `Refused` here."""
    chunk = docs[start : start + CHUNK]
    try:
        return orjson.dumps(chunk)
    except orjson.JSONEncodeError:
        for index, doc in enumerate(chunk):
            try:
                check_structure(doc)
            except Invalid as error:
                raise Refused(start + index, error) from None
        raise


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
    # Stopped by the server (`close`: once the imports it runs are answered), not by the signals
    # that stop the server: Ctrl-C and a service manager signal the whole group of processes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


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


def _pickled(answer: dict) -> bytes:
    """A task's answer as the server unpickles it. Pickled here, without the memo that lets
    pickle share objects (which the answer never does): pickling it with the memo took the
    process ~4 µs a record of ~1 KB, without it under 1."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, pickle.HIGHEST_PROTOCOL)
    pickler.fast = True
    pickler.dump(answer)
    return out.getvalue()


def _collect_leftovers() -> None:
    """What an exception's traceback left in cycles, in the task before (the rest is frozen, or
    freed as its answer was sent), collected as a task starts: before it reads its records, as a
    collection walks every object still held (after reading 2,000 records: 1.9 ms, before: 0.03)."""
    gc.collect()


def _validate(registry_source: str, names: list[str], payload: bytes, created: dict[str, str], lists, strict: bool) -> bytes:
    _collect_leftovers()
    return _pickled(_validated(registry_source, strict, lists, names, orjson.loads(payload), created, payload))


# Ids reserved ahead for the imports this process reads (`IdLeases`), handed over with its tasks.
_IDS_AHEAD = IdLeases()


def _read_and_validate(registry_source: str, body: bytes, repo_id: int, lists, strict: bool, ids_ahead: dict[str, list[range]]) -> bytes:
    """`ImportValidation.read_and_validate` in the process."""
    _collect_leftovers()
    _IDS_AHEAD.add_all(ids_ahead)
    return _pickled(_read_and_validated(registry_source, body, repo_id, lists, strict, _IDS_AHEAD))


def _read_and_validated(registry_source: str, body: bytes, repo_id: int, lists, strict: bool, leases: IdLeases) -> dict:
    """`_validated`'s answer, with each record's (type name, temporary URI) as `entries` and,
    taken from the ids reserved ahead (`leases`), their `ids`; or `read_here`."""
    registry, _ = _preparer(registry_source, strict)
    try:
        entries = parse_entries(registry, parse_records(body))
    except BadRequest:  # the server words it, reading the body itself
        return {"read_here": True}
    names, docs = taken_docs(entries)
    scope = scopes(entries, repo_id)
    ids = leases.take_for(entries)
    if ids is None:
        temporary, final = stand_ins(entries, scope), False
    else:
        temporary, final = {e.temporary_uri: e.record_type.uri(ids[e.index], scope[e.index]) for e in entries if e.temporary_uri}, True
    answer = _validated(registry_source, strict, lists, names, docs, temporary, body, final=final)
    answer["entries"] = [(entry.record_type.name, entry.temporary_uri) for entry in entries]
    if "records" in answer:
        # Here rather than in the server, which holds the interpreter for the write of the import before.
        try:
            answer["order"] = creation_order(entries, answer["records"], temporary)
        except Invalid as error:
            answer["cycle"] = error.error
    if ids is not None and "order" in answer:
        answer["ids"] = ids
        answer["linked"] = _linked(registry, entries, answer["records"], scope, ids)
    elif ids is not None:  # refused: its ids go to the next import
        leases.give_back(entries, ids)
    answer["ids_left"] = leases.left()
    return answer


# -- in a process writing imports ----------------------------------------------------------------

# Processes writing large imports, at most (on SQLite in turn): while one writes an import, the
# other reads and validates the next. The server then only passes bodies and answers; with one process
# validating for a server writing them, the server's interpreter (0.85 of a core, whatever the
# imports in flight) bounded a load.
WRITERS = 2

# The record service this process writes imports with (`ImportValidation.writer`).
_WRITER = None


def _writer_service(writer: Callable[[], object]):
    global _WRITER
    if _WRITER is None:
        service = writer()
        service.import_validation = InProcessValidation(service.import_validation)
        _WRITER = service
        gc.freeze()  # never garbage: not walked by each task's collection
    return _WRITER


def _ready_to_write(writer: Callable[[], object]) -> bool:
    _writer_service(writer)
    return True


def _import(writer: Callable[[], object], body: bytes, repo_id: int, actor, creatable: frozenset[str]) -> bytes:
    """`ImportValidation.import_body` in the process: `imported`, or the `error` raised."""
    from fonds.records.imports import import_batch  # which imports this module

    _collect_leftovers()
    try:
        service = _writer_service(writer)
    except Exception:  # nothing of the import was done: the server imports it
        log.exception("a process writing large imports could not open the database; imports are written in the server")
        return _pickled({})
    try:
        imported = import_batch(service, body, repo_id=repo_id, actor=actor, may_create=lambda record_type: record_type.name in creatable)
    except FondsError as error:
        return _pickled({"error": error})
    return _pickled({"imported": imported})


def _linked(registry, entries: list[Entry], records: list[Prepared], scope: dict, ids: list[int]) -> refs.Portable | None:
    """The records' refs planned (`refs.plan`), given their ids; None: a record holds more refs
    than a write takes, which the server words."""
    requests = [(record[2], scope[entry.index]) for entry, record in zip(entries, records)]
    members = {(entry.record_type.name, ids[entry.index]): scope[entry.index] for entry in entries}
    try:
        return refs.portable(refs.plan(registry, requests, members))
    except BadRequest:
        return None


def _validated(
    registry_source: str,
    strict: bool,
    lists,
    names: list[str],
    docs: list[dict],
    created: dict[str, str],
    json: bytes,
    *,
    final: bool = False,
) -> dict:
    """Each record's `Prepared` as `records`, or the first one refused as `invalid` (`json`: what
    `docs` were read from; `final`: `created` gives the URIs the records get, not stand-ins)."""
    registry, preparer = _preparer(registry_source, strict)
    preparer.validator.value_lists.snapshot = lists
    stand_in_uris = None if final else set(created.values())
    out = []
    # Normalising a record refuses it if nested too deep, as `check_structure` would.
    nul = may_hold_nul(json)
    for index, (name, doc) in enumerate(zip(names, docs)):
        record_type, record_refs = registry[name], []
        try:
            if nul:
                check_structure(doc)
            clean, warnings, _ = preparer.prepare_doc(
                record_type, doc, creating=True, refresh=False, replace_refs=created, refs=record_refs
            )
        except Invalid as error:
            return {"invalid": index, "error": error.error, "warning": error.extra.get("warning") or {}}
        out.append(_derived(preparer, record_type, clean, warnings, record_refs, stand_in_uris))
    return {"records": out}


def _derived(
    preparer, record_type: RecordType, clean: dict, warnings: dict, refs: list[tuple[str, str]], stand_in_uris: set[str] | None
) -> Prepared:
    """A validated record derived here if its type derives it alone (`Hooks.derive_new`): the
    server then writes its JSON as it is, once the stand-in URIs in it (`stand_in_uris`; None: it
    refers to the batch's records by the URIs they get) are replaced by the URIs the batch's
    records get (`imports._new_record`). Not a tree node whose root is
    taken from its parent (placing it changes the record), nor the ones of a type that derives
    in the write."""
    tree = record_type.tree if record_type.is_tree_node else None
    if tree is not None and clean.get("parent") and not clean.get(tree.root_field):
        return clean, warnings, refs, None
    derived = preparer.derived_alone(record_type, clean, warnings)
    if derived is None:
        return clean, warnings, refs, None
    for field in WRITTEN_FIELDS:
        clean.pop(field, None)
    placing = {}
    if tree is not None:
        placing = {field: clean[field] for field in (tree.root_field, "parent") if field in clean}
        position = clean.pop("position", None)
        if position is not None:
            placing["position"] = position
    body = orjson.dumps(clean)
    if stand_in_uris is not None and stand_in_count(body) != sum(1 for _, uri in refs if uri in stand_in_uris):
        # Text that reads like a stand-in URI: the record's refs are pointed at in the record itself.
        clean.update(placing)
        return clean, warnings, refs, (None, *derived)
    return placing, warnings, refs, (body, *derived)
