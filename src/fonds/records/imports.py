"""Batch import (ArchivesSpace's `batch_imports`): records that refer to each other by
temporary URIs (`/repositories/2/resources/import_1`), created in one transaction in an order
where every record comes after the records it refers to. All or none.

Each record's temporary refs are replaced by a stand-in URI as it is validated (normalisation
copies every ref object anyway), outside any transaction and, for a large import, in a process of
its own (records/import_validation.py); then every record's id is reserved (by the write of a
large import before it, records/id_leases.py, else in a short transaction of its own), and the
stand-ins are replaced by the URIs the records will have (a process validating a large import
with ids reserved ahead gives its records those URIs at once), so the ref checks and the batch
write path (records/writes.py) see ordinary URIs; the order of creation is worked out from the
validated records' refs. Only the write itself holds the write lock: another import's records
are validated meanwhile, and single writes wait for the write alone."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from queue import SimpleQueue

import orjson

from fonds.errors import Denied, Invalid, nested_under
from fonds.records import refs, value_lists
from fonds.records.id_leases import ids_in_order, type_counts
from fonds.records.import_entries import (
    FIELD,
    Entry,
    Prepared,
    creation_order,
    parse_entries,
    parse_records,
    scopes,
    stand_ins,
    taken_docs,
)
from fonds.records.import_validation import Refused
from fonds.records.registry import RecordType
from fonds.records.validation import check_structure
from fonds.records.writes import Batch, NewRecord, batch_members, plan_refs
from fonds.storage import records as store
from fonds.storage.db import BULK_IDLE_SECONDS


@dataclass
class Imported:
    """{temporary URI: [URI, id]}, and the record types and number of records imported."""

    saved: dict[str, list]
    types: set[str]
    count: int


class BulkImports:
    """The batch imports running in this process. While any runs, Python's cyclic garbage
    collector is off: a batch holds its records (millions of objects) until it is written, and
    each full collection walks them all (about a sixth of a large import's time, for records that
    hold no cycles). And the search indexer of the process waits (`wait_until_quiet`) rather than
    contend with the imports for the interpreter: it catches up once they are done."""

    # A bulk load is a stream of imports, the next sent as soon as the last is answered: the
    # indexer waits this long after one ends before it starts, or it would take the interpreter
    # from the next one at every gap between two.
    QUIET_SECONDS = 2.0
    # Longest the planner statistics of a load's tables wait for the imports to stop (statistics.py).
    ANALYSIS_WAIT_SECONDS = 300.0

    def __init__(self):
        self.changed = threading.Condition()
        self.running, self.collector_was_enabled = 0, False
        # The collector is to be turned back on once the last imports' records are freed.
        self.enable_pending = False
        self.finished_at = float("-inf")

    @contextmanager
    def one(self) -> Iterator[None]:
        with self.changed:
            if self.running == 0:
                self.collector_was_enabled = gc.isenabled() or self.enable_pending
                self.enable_pending = False
                gc.disable()
            self.running += 1
        try:
            yield
        finally:
            with self.changed:
                self.running -= 1
                self.finished_at = time.monotonic()
                if self.running == 0:
                    if self.collector_was_enabled:
                        # Not at once: its first collection would walk the records of the imports
                        # still being freed (DISPOSAL), a pause of milliseconds after each import
                        # of a client sending them one at a time.
                        self.enable_pending = True
                        DISPOSAL.then(self._enable_collector)
                    self.changed.notify_all()

    def _enable_collector(self) -> None:
        with self.changed:
            if self.enable_pending and self.running == 0:
                self.enable_pending = False
                gc.enable()

    def analysis_may_start(self) -> bool:
        """Wait until the imports stop (as the indexer does), or ANALYSIS_WAIT_SECONDS: a load
        lasting hours still has its tables' statistics brought up to date now and then."""
        return self.wait_until_quiet(self.ANALYSIS_WAIT_SECONDS)

    def wait_until_quiet(self, timeout: float, quiet: float = QUIET_SECONDS) -> bool:
        """Wait (at most `timeout` seconds) until no import has run for `quiet` seconds; True then."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                now = time.monotonic()
                if self.running == 0 and now - self.finished_at >= quiet:
                    return True
                if now >= deadline:
                    return False
                until_quiet = self.finished_at + quiet - now if self.running == 0 else deadline - now
                self.changed.wait(min(until_quiet, deadline - now))


BULK_IMPORTS = BulkImports()


def import_batch(
    service,
    records,
    *,
    repo_id: int,
    actor,
    may_create: Callable[[RecordType], bool],
    progress: Callable[[str, int], None] | None = None,
) -> Imported:
    """Create every record in one write transaction of its own: all or none. `records`: the
    request's body as it came (read here or, a large one, by the process validating imports),
    or its records, a list taken over (emptied as the import goes, `parse_entries`).
    `progress(step, done)`: how many records are done with each step, `validated` then `written`.

    The write lock is held only for the write, and for the short transaction reserving the
    records' ids once they are validated: validation goes on while other writes do (another
    import's included). A large body is imported by a process writing imports (a SQLite file, PostgreSQL), the
    same way (`ImportValidation.import_body`)."""
    if isinstance(records, bytes) and progress is None:
        imported = _written_elsewhere(service, records, repo_id, actor, may_create)
        if imported is not None:
            return imported
    try:
        with BULK_IMPORTS.one():
            # Its records are let go as `_import` returns, before the collector is back on.
            return _import(service, records, repo_id=repo_id, actor=actor, may_create=may_create, progress=progress)
    finally:
        _close_bulk_connection_when_idle(service.db)


def _written_elsewhere(service, body: bytes, repo_id: int, actor, may_create: Callable[[RecordType], bool]) -> Imported | None:
    creatable = frozenset(t.name for t in service.registry if "create" in t.actions and may_create(t))
    imported = service.import_validation.import_body(body, repo_id, actor, creatable)
    if imported is not None:
        service.db.wrote()
    return imported


def _close_bulk_connection_when_idle(db) -> None:
    """Close the database's bulk connection once imports stop (`Database.close_idle_bulk`): its
    cache and statements (tens of MB) are not kept past a bulk load. The last import's timer does it."""
    timer = threading.Timer(BULK_IDLE_SECONDS + 0.1, db.close_idle_bulk)
    timer.daemon = True
    timer.start()


def _import(service, records, *, repo_id: int, actor, may_create, progress) -> Imported:
    # No transaction is held open while they are validated (a long read would keep SQLite from
    # checkpointing its log, PostgreSQL from vacuuming): the lists' generation is checked again in the write.
    lists = service.value_lists.refresh()
    # Validated before their ids are reserved (which waits for the write before, on SQLite):
    # refs to the batch's records point at a stand-in URI meanwhile, then at their real one.
    # (Unless the process validating them had their ids already: `IdLeases`.)
    validated = _validated(service, records, repo_id, lists, may_create, progress=_step(progress, "validated"))
    entries, prepared, order, ids = validated.entries, validated.prepared, validated.order, validated.ids
    scope, counts = scopes(entries, repo_id), type_counts(entries)
    temporary = stand_ins(entries, scope) if ids is None else None
    if order is None:
        order = creation_order(entries, prepared, temporary)
    if ids is None:
        ids = _reserved(service, entries, counts)
    uris = [e.record_type.uri(ids[e.index], scope[e.index]) for e in entries]
    created = {e.temporary_uri: uris[e.index] for e in entries if e.temporary_uri}
    real = None if temporary is None else _RealUris({temporary[uri]: created_uri for uri, created_uri in created.items()})
    items = [_new_record(entries[i], prepared[i], scope[i], ids[i], uris[i], real) for i in order]
    # Before the write transaction too (on SQLite it holds the one write lock): only what needs the database is left to it.
    planned = plan_refs(service, items) if validated.linked is None else _planned_elsewhere(validated.linked, order, items)
    del validated
    with service.db.bulk_write() as conn:
        if value_lists.generation(conn) != lists.generation:
            _validated_again(service, conn, items)
        written: list = []
        Batch(service, conn, actor).create(items, progress=_step(progress, "written"), keep=written, planned_refs=planned, results=False)
        ahead = service.id_leases.reserve_ahead(conn, counts)
    service.id_leases.add_all(ahead)
    saved = {e.temporary_uri: [created[e.temporary_uri], ids[e.index]] for e in entries if e.temporary_uri}
    imported = Imported(saved, {e.record_type.name for e in entries}, len(entries))
    DISPOSAL.free((entries, prepared, items, written, planned))
    del entries, prepared, items, written, planned
    return imported


def _check_permissions(entries: list[Entry], may_create: Callable[[RecordType], bool]) -> None:
    # By name: a record type's hash is its fields' (a dataclass).
    for record_type in {entry.record_type.name: entry.record_type for entry in entries}.values():
        if not may_create(record_type):
            raise Denied()


def _planned_elsewhere(linked: refs.Portable, order: list[int], items: list[NewRecord]) -> refs.PlannedRefs:
    """The plan of the refs of `items` (the entries in `order`) the process validating them made."""
    links, errors, targets = linked
    return refs.from_portable(([links[i] for i in order], [errors[i] for i in order], targets), batch_members(items))


def _read_and_validated_elsewhere(service, body: bytes, repo_id: int, lists, may_create) -> _Validated | None:
    """A large import's body read and validated by the process validating imports (the server
    never parses its records): its entries, each record's `Prepared`, the records'
    `creation_order` and, if that process had them, their ids and their refs planned. None:
    read it here (a small body, one that is not a well-formed batch, the process not ready or
    gone, or an actor who may not create every type: a 403 then comes before any 400, as here)."""
    registry = service.registry
    if not all(may_create(record_type) for record_type in registry if "create" in record_type.actions):
        return None
    try:
        found = service.import_validation.read_and_validate(body, repo_id, lists, service.id_leases)
    except Refused as refused:
        raise nested_under(refused.error, f"{FIELD}/{refused.index}") from None
    if found is None:
        return None
    entries = [Entry(index, registry[name], uri, None) for index, (name, uri) in enumerate(found.kinds)]
    return _Validated(entries, found.records, found.order, found.ids, found.linked)


class Disposal:
    """Frees what finished imports held (a batch's records, hundreds of thousands of objects) on
    a thread of its own, while the next imports wait for the database or the validating process.
    Freed where they were let go, the written rows went inside the write transaction (on SQLite,
    holding the one write lock) and the rest on the request's way out: a million records loaded
    over 88-90 s on PostgreSQL with it, 100-125 s without; on SQLite 97-107 s, 110-119 s."""

    def __init__(self):
        self.queue: SimpleQueue = SimpleQueue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def free(self, garbage) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="fonds-disposal", daemon=True)
                self.thread.start()
        self.queue.put(garbage)

    def then(self, action: Callable[[], None]) -> None:
        """Run `action` on the disposal thread once what was given to `free` before is freed."""
        self.free(_After(action))

    def _run(self) -> None:
        while True:
            garbage = self.queue.get()
            if garbage.__class__ is _After:
                garbage.action()
            del garbage


@dataclass(slots=True)
class _After:
    action: Callable[[], None]


DISPOSAL = Disposal()


def _reserved(service, entries: list[Entry], counts: dict[str, int]) -> list[int]:
    """The id of the record each entry creates (by `Entry.index`): reserved ahead by the import
    before (`IdLeases`), else reserved in a transaction of its own."""
    reserved = service.id_leases.take(counts)
    if reserved is None:
        with service.db.bulk_write() as conn:
            tables = conn.info["fonds_tables"]
            reserved = {name: store.reserve_ids(conn, tables[name], count) for name, count in counts.items()}
    return ids_in_order(entries, reserved)


def _step(progress: Callable[[str, int], None] | None, step: str) -> Callable[[int], None] | None:
    return None if progress is None else lambda done: progress(step, done)


@dataclass
class _Validated:
    """An import's entries and each record's `Prepared`, in the order given."""

    entries: list[Entry]
    prepared: list[Prepared]
    # Their `creation_order`, if it was worked out with them.
    order: list[int] | None = None
    # If they were validated with their ids (`IdLeases`): the ids, each record's refs to the
    # batch's records pointing at the URIs they get, and every record's refs planned.
    ids: list[int] | None = None
    linked: refs.Portable | None = None


def _validated(service, records, repo_id: int, lists, may_create, *, progress: Callable[[int], None] | None) -> _Validated:
    """The import's records validated, each as a new record of its type against `lists` (the
    caller refreshed them), its refs to the batch's records pointing at their stand-ins
    (`import_entries.stand_ins`) unless the ids were known. A large body is read and validated,
    and its records ordered, by the process that validates imports (records/import_validation.py);
    else the records are read here, and validated there (in chunks) or here."""
    if isinstance(records, bytes):
        found = _read_and_validated_elsewhere(service, records, repo_id, lists, may_create)
        if found is not None:
            return found
        records = parse_records(records)
    entries = parse_entries(service.registry, records)
    _check_permissions(entries, may_create)
    stand_in_uris = stand_ins(entries, scopes(entries, repo_id))
    names, docs = taken_docs(entries)
    try:
        prepared = service.import_validation.validate(names, docs, stand_in_uris, lists, progress)
    except Refused as refused:
        raise nested_under(refused.error, f"{FIELD}/{entries[refused.index].index}") from None
    return _Validated(entries, _prepared_here(service, entries, docs, stand_in_uris, progress) if prepared is None else prepared)


class _Created:
    """The URI a record of the batch is created at, for its stand-in's: as text, and as the JSON
    string replacing the stand-in's in a record's JSON (made once, for every ref to it)."""

    __slots__ = ("json", "stand_in_json", "uri")

    def __init__(self, uri: str, stand_in: str):
        self.uri, self.stand_in_json, self.json = uri, orjson.dumps(stand_in), orjson.dumps(uri)


class _RealUris(dict):
    """{stand-in URI: its `_Created`}, each made the first time a ref to it is met: most records
    of a batch (the leaves of its trees) are referred to by none of the others. A ref to a record
    outside the batch (most refs: subjects, agents, containers, each met again and again) finds None."""

    def __init__(self, uris: dict[str, str]):
        super().__init__()
        self.uris = uris

    def __missing__(self, uri: str) -> _Created | None:
        real = self.uris.get(uri)
        found = self[uri] = None if real is None else _Created(real, uri)
        return found


def _new_record(entry: Entry, prepared: Prepared, repo_id: int | None, record_id: int, uri: str, real: _RealUris | None) -> NewRecord:
    """The record of `entry` to write (created at `uri`), its refs to stand-in URIs pointed at the
    URIs the batch's records get (`real`; None: they point there already), in its refs, its
    record and its JSON (of a record derived where it was validated, whose record holds only what
    placing it reads)."""
    doc, warnings, refs, ready = prepared
    label = f"{FIELD}/{entry.index}"
    if real is None:
        return NewRecord(entry.record_type, doc, warnings, repo_id, label=label, record_id=record_id, refs=refs, ready=ready, uri=uri)
    body = ready[0] if ready is not None else None
    for index, (path, target) in enumerate(refs):
        found = real[target]
        if found is None:
            continue
        refs[index] = (path, found.uri)
        if path.split("/", 1)[0] in doc:
            _set_ref(doc, path, found.uri)
        if body is not None:
            # Every string of its JSON that is a stand-in URI is a ref (`import_entries.stand_in_count`).
            body = body.replace(found.stand_in_json, found.json)
    if body is not None:
        ready = (body, *ready[1:])
    return NewRecord(entry.record_type, doc, warnings, repo_id, label=label, record_id=record_id, refs=refs, ready=ready, uri=uri)


def _set_ref(doc: dict, path: str, uri: str) -> None:
    node, key = doc, path  # most refs to records of the batch are top-level: a resource, a parent
    if "/" in path:
        *above, last = path.split("/")
        for part in above:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key = int(last) if isinstance(node, list) else last
    if isinstance(node[key], dict):
        node[key]["ref"] = uri
    else:
        node[key] = uri


def _prepared_here(service, entries: list[Entry], docs: list[dict], created: dict[str, str], progress) -> list[Prepared]:
    prepared = []
    for done, (entry, doc) in enumerate(zip(entries, docs), 1):
        refs: list[tuple[str, str]] = []
        try:
            check_structure(doc)
            clean, warnings, _ = service.prepare_doc(entry.record_type, doc, creating=True, refresh=False, replace_refs=created, refs=refs)
        except Invalid as error:
            raise nested_under(error, f"{FIELD}/{entry.index}") from None
        prepared.append((clean, warnings, refs, None))
        if progress is not None:
            progress(done)
    return prepared


def _validated_again(service, conn, items: list[NewRecord]) -> None:
    """A value list changed while the records were validated: each is checked again against the
    lists as they are in the write transaction (a value they no longer hold is refused, or kept
    with a warning in an editable list, as in any create)."""
    service.value_lists.refresh(conn)
    for item in items:
        if item.ready is not None:  # derived where it was validated: derived again, in the write
            body, item.ready = item.ready[0], None
            if body is not None:
                item.doc = orjson.loads(body) | item.doc
        try:
            item.doc, _, _ = service.prepare_doc(item.record_type, item.doc, creating=True, refresh=False)
        except Invalid as error:
            raise nested_under(error, item.label) from None
