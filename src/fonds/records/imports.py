"""Batch import (ArchivesSpace's `batch_imports`): records that refer to each other by
temporary URIs (`/repositories/2/resources/import_1`), created in one transaction in an order
where every record comes after the records it refers to. All or none.

Every record's id is reserved first, in a short transaction of its own, and each record's
temporary refs are replaced by the URIs the records will have as it is validated (normalisation
copies every ref object anyway), so the ref checks and the batch write path (records/writes.py)
see ordinary URIs; the order of creation is worked out from the validated records' refs. Only
the write itself holds the write lock: another import's records are validated meanwhile (on
SQLite, while this one's rows are stored, which releases the interpreter), and single writes
wait for the write alone."""

from __future__ import annotations

import gc
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from fonds.errors import Denied, Invalid, nested_under
from fonds.records import value_lists
from fonds.records.registry import RecordType
from fonds.records.validation import check_structure, find_refs, structures_are_sound
from fonds.records.writes import Batch, NewRecord
from fonds.storage import records as store
from fonds.storage.db import bulk_page_cache

FIELD = "batch_import"


@dataclass
class Entry:
    index: int
    record_type: RecordType
    temporary_uri: str | None
    # The client's record, until it is validated (then only its clean copy is kept).
    doc: dict | None


@dataclass
class Imported:
    """{temporary URI: [URI, id]}, and the record types and number of records imported."""

    saved: dict[str, list]
    types: set[str]
    count: int


def parse_entries(registry, records) -> list[Entry]:
    """Each record's type and temporary URI, checked before anything is written. Empties
    `records` (the entries hold the records, each let go once validated)."""
    if not isinstance(records, list) or not records:
        raise Invalid({FIELD: ["Must be a non-empty JSON array of records"]})
    entries, seen = [], set()
    for index, doc in enumerate(records):
        where = f"{FIELD}/{index}"
        if not isinstance(doc, dict):
            raise Invalid({where: ["Must be a JSON object"]})
        name = doc.get("jsonmodel_type")
        if not isinstance(name, str) or name not in registry.types:
            raise Invalid({f"{where}/jsonmodel_type": [f"Unknown record type {name!r}"]})
        record_type = registry[name]
        if "create" not in record_type.actions:
            raise Invalid({f"{where}/jsonmodel_type": [f"Records of type {name!r} cannot be imported"]})
        uri = doc.get("uri")
        if uri is not None and not isinstance(uri, str):
            raise Invalid({f"{where}/uri": ["Must be a string"]})
        if uri in seen:
            raise Invalid({f"{where}/uri": [f"{uri} is used by two records of the batch"]})
        if uri:
            seen.add(uri)
        entries.append(Entry(index, record_type, uri or None, doc))
    if not structures_are_sound(records):
        for index, doc in enumerate(records):
            try:
                check_structure(doc)
            except Invalid as error:
                raise nested_under(error, f"{FIELD}/{index}") from None
    records.clear()
    return entries


def creation_order(items: list[NewRecord], member_at: dict[str, int]) -> list[NewRecord]:
    """Dependencies first, otherwise in the order given (Kahn's algorithm, stable). `member_at`:
    {URI a record of the batch is created at, for its temporary one: its place in `items`};
    each item's refs are known."""
    waiting_on = {}
    for index, item in enumerate(items):
        waiting_on[index] = {member_at[uri] for _, uri in item.refs if uri in member_at and member_at[uri] != index}
    dependants: dict[int, list[int]] = {}
    for index, needs in waiting_on.items():
        for need in needs:
            dependants.setdefault(need, []).append(index)
    # A deque: popping the front of a list of a million ready records moves the rest each time.
    ready = deque(index for index, needs in waiting_on.items() if not needs)
    order: list[int] = []
    while ready:
        index = ready.popleft()
        order.append(index)
        for dependant in dependants.get(index, ()):
            waiting_on[dependant].discard(index)
            if not waiting_on[dependant]:
                ready.append(dependant)
    if len(order) < len(items):
        stuck = sorted(set(waiting_on) - set(order))
        raise Invalid({FIELD: [f"Records {stuck[:10]} refer to each other in a cycle: none can be created first"]})
    return [items[i] for i in order]


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
        self.finished_at = float("-inf")

    @contextmanager
    def one(self) -> Iterator[None]:
        with self.changed:
            if self.running == 0:
                self.collector_was_enabled = gc.isenabled()
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
                        gc.enable()
                    self.changed.notify_all()

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
    """Create every record in one write transaction of its own: all or none. Takes `records`
    over: the list is emptied as the import goes (`parse_entries`). `progress(step, done)`:
    how many records are done with each step, `validated` then `written`.

    The write lock is held only for the write: the records' ids are reserved first (their own
    short transaction), so every temporary ref is replaced as its record is validated, outside
    any transaction, while other writes go on (another import's included)."""
    with BULK_IMPORTS.one():
        # Its records are let go as `_import` returns, before the collector is back on.
        return _import(service, records, repo_id=repo_id, actor=actor, may_create=may_create, progress=progress)


def _import(service, records, *, repo_id: int, actor, may_create, progress) -> Imported:
    entries = parse_entries(service.registry, records)
    # By name: a record type's hash is its fields' (a dataclass).
    for record_type in {entry.record_type.name: entry.record_type for entry in entries}.values():
        if not may_create(record_type):
            raise Denied()
    ids = _reserved(service, entries)
    scope = {e.index: repo_id if e.record_type.repo_scoped else None for e in entries}
    created = {e.temporary_uri: e.record_type.uri(ids[e.index], scope[e.index]) for e in entries if e.temporary_uri}
    # No transaction is held open while they are validated (a long read would keep SQLite from
    # checkpointing its log, PostgreSQL from vacuuming): the lists' generation is checked again in the write.
    lists = service.value_lists.refresh()
    items = _validated(service, entries, created, ids, scope, progress=_step(progress, "validated"))
    # Items are in the entries' order: a record created for a temporary URI sits at its entry's index.
    member_at = {created[e.temporary_uri]: e.index for e in entries if e.temporary_uri}
    items = creation_order(items, member_at)
    with service.db.write() as conn, bulk_page_cache(conn):
        if value_lists.generation(conn) != lists.generation:
            _validated_again(service, conn, items)
        Batch(service, conn, actor).create(items, progress=_step(progress, "written"))
    saved = {e.temporary_uri: [created[e.temporary_uri], ids[e.index]] for e in entries if e.temporary_uri}
    return Imported(saved, {e.record_type.name for e in entries}, len(entries))


def _reserved(service, entries: list[Entry]) -> dict[int, int]:
    """{entry index: the id of the record it creates}, reserved in a transaction of its own."""
    by_type: dict[str, list[Entry]] = {}
    for entry in entries:
        by_type.setdefault(entry.record_type.name, []).append(entry)
    ids: dict[int, int] = {}
    with service.db.write() as conn:
        for name, members in by_type.items():
            ids.update(zip((e.index for e in members), store.reserve_ids(conn, conn.info["fonds_tables"][name], len(members))))
    return ids


def _step(progress: Callable[[str, int], None] | None, step: str) -> Callable[[int], None] | None:
    return None if progress is None else lambda done: progress(step, done)


def _validated(
    service, entries: list[Entry], created: dict[str, str], ids: dict[int, int], scope: dict, *, progress: Callable[[int], None] | None
) -> list[NewRecord]:
    """Each record, in the order given, validated as a new record of its type with its temporary
    refs replaced, and the refs it holds then (the caller refreshed the value lists)."""
    schemas = service.schemas
    items = []
    for done, entry in enumerate(entries, 1):
        doc, entry.doc = entry.doc, None
        doc.pop("uri", None)
        label = f"{FIELD}/{entry.index}"
        try:
            clean, warnings, _ = service.prepare_doc(entry.record_type, doc, creating=True, refresh=False, replace_refs=created)
        except Invalid as error:
            raise nested_under(error, label) from None
        refs = find_refs(schemas, schemas[entry.record_type.name], clean)
        items.append(NewRecord(entry.record_type, clean, warnings, scope[entry.index], label=label, record_id=ids[entry.index], refs=refs))
        if progress is not None:
            progress(done)
    return items


def _validated_again(service, conn, items: list[NewRecord]) -> None:
    """A value list changed while the records were validated: each is checked again against the
    lists as they are in the write transaction (a value they no longer hold is refused, or kept
    with a warning in an editable list, as in any create)."""
    service.value_lists.refresh(conn)
    for item in items:
        try:
            item.doc, _, _ = service.prepare_doc(item.record_type, item.doc, creating=True, refresh=False)
        except Invalid as error:
            raise nested_under(error, item.label) from None
