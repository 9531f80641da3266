"""Batch import (ArchivesSpace's `batch_imports`): records that refer to each other by
temporary URIs (`/repositories/2/resources/import_1`), created in one transaction in an order
where every record comes after the records it refers to. All or none.

Every record's id is allocated first and temporary refs are replaced by the URIs the records
will have before any record is validated, so validation and ref checks see ordinary URIs; then
the whole set goes through the batch write path (records/writes.py)."""

from __future__ import annotations

import gc
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import orjson

from fonds.errors import Denied, Invalid, nested_under
from fonds.records.registry import RecordType
from fonds.records.writes import Batch, NewRecord
from fonds.storage.db import bulk_page_cache

FIELD = "batch_import"


@dataclass
class Entry:
    index: int
    record_type: RecordType
    temporary_uri: str | None
    # The record serialised once: its refs are found and replaced on these bytes, and it is
    # parsed again from them (the client's parsed record is not kept).
    raw: bytes = b""
    # Its ref values as they stand in `raw` (JSON-escaped, without the quotes).
    found: list[bytes] = field(default_factory=list)


@dataclass
class Imported:
    """{temporary URI: [URI, id]}, and the record types and number of records imported."""

    saved: dict[str, list]
    types: set[str]
    count: int


# A ref in a record serialised by orjson (compact): `"ref":"<uri>"`. Inside a JSON string every
# quote is escaped, so this matches only real `ref` keys with string values.
_REF = re.compile(rb'"ref":"((?:[^"\\]|\\.)*)"')


def _escaped(uri: str) -> bytes:
    """A URI as it stands in serialised JSON, without its quotes (how `Entry.found` holds refs)."""
    return orjson.dumps(uri)[1:-1]


def _substituted(entry: Entry, created: dict[bytes, bytes]) -> dict:
    """The record with its temporary refs replaced (`created`: escaped temporary URI -> escaped
    URI), on its serialised form (no walk): each in one `bytes.replace`."""
    replacements = {found: created[found] for found in entry.found if found in created}
    raw = entry.raw
    if not replacements.keys() & replacements.values():
        for found, uri in replacements.items():
            raw = raw.replace(b'"ref":"' + found + b'"', b'"ref":"' + uri + b'"')
        return orjson.loads(raw)

    # A created URI that is also a temporary one of this record (a client may name them alike):
    # one pass, so no ref is replaced twice.
    def replace(match: re.Match) -> bytes:
        uri = replacements.get(match.group(1))
        return match.group(0) if uri is None else b'"ref":"' + uri + b'"'

    return orjson.loads(_REF.sub(replace, raw))


def parse_entries(registry, records) -> list[Entry]:
    """Each record's type and temporary URI, checked before anything is written. Empties
    `records` once each is serialised: a parsed record is several times its JSON's size, and a
    batch's would otherwise be held until the batch is written, beside its validated copies."""
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
        raw = orjson.dumps(doc)
        entries.append(Entry(index, record_type, uri or None, raw, _REF.findall(raw)))
    records.clear()
    return entries


def creation_order(entries: list[Entry]) -> list[Entry]:
    """Dependencies first, otherwise in the order given (Kahn's algorithm, stable)."""
    by_uri = {_escaped(e.temporary_uri): e.index for e in entries if e.temporary_uri}
    waiting_on = {e.index: {by_uri[r] for r in e.found if r in by_uri and by_uri[r] != e.index} for e in entries}
    dependants: dict[int, list[int]] = {}
    for index, needs in waiting_on.items():
        for need in needs:
            dependants.setdefault(need, []).append(index)
    # A deque: popping the front of a list of a million ready records moves the rest each time.
    ready = deque(e.index for e in entries if not waiting_on[e.index])
    order: list[int] = []
    while ready:
        index = ready.popleft()
        order.append(index)
        for dependant in dependants.get(index, ()):
            waiting_on[dependant].discard(index)
            if not waiting_on[dependant]:
                ready.append(dependant)
    if len(order) < len(entries):
        stuck = sorted(set(waiting_on) - set(order))
        raise Invalid({FIELD: [f"Records {stuck[:10]} refer to each other in a cycle: none can be created first"]})
    return [entries[i] for i in order]


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
    service, records, *, repo_id: int, actor, may_create: Callable[[RecordType], bool], progress: Callable[[int], None] | None = None
) -> Imported:
    """Create every record in one write transaction of its own: all or none. Takes `records`
    over: the list is emptied as the import goes (`parse_entries`).

    Only the write holds the write lock: the records are read, checked against the actor's
    permissions and put in order before it begins, and let go after it commits, so an import
    sent while another writes is read meanwhile (SQLite's statements run without the
    interpreter's lock). Ids are allocated first in the write, so every temporary ref is
    replaced before any record is validated."""
    with BULK_IMPORTS.one():
        # Its records are let go as `_import` returns, before the collector is back on.
        return _import(service, records, repo_id=repo_id, actor=actor, may_create=may_create, progress=progress)


def _import(service, records, *, repo_id: int, actor, may_create, progress) -> Imported:
    entries = parse_entries(service.registry, records)
    # By name: a record type's hash is its fields' (a dataclass).
    for record_type in {entry.record_type.name: entry.record_type for entry in entries}.values():
        if not may_create(record_type):
            raise Denied()
    ordered = creation_order(entries)
    with service.db.write() as conn, bulk_page_cache(conn):
        batch = Batch(service, conn, actor)
        ids = _allocated(batch, entries)
        scope = {e.index: repo_id if e.record_type.repo_scoped else None for e in entries}
        created = {e.temporary_uri: e.record_type.uri(ids[e.index], scope[e.index]) for e in entries if e.temporary_uri}
        items = _validated(service, conn, ordered, created, ids, scope)
        batch.create(items, progress=progress)
    saved = {e.temporary_uri: [created[e.temporary_uri], ids[e.index]] for e in entries if e.temporary_uri}
    return Imported(saved, {e.record_type.name for e in entries}, len(entries))


def _allocated(batch: Batch, entries: list[Entry]) -> dict[int, int]:
    """{entry index: the id of the record it creates}."""
    by_type: dict[str, list[Entry]] = {}
    for entry in entries:
        by_type.setdefault(entry.record_type.name, []).append(entry)
    ids: dict[int, int] = {}
    for members in by_type.values():
        ids.update(zip((e.index for e in members), batch.allocate(members[0].record_type, len(members))))
    return ids


def _validated(service, conn, ordered: list[Entry], created: dict[str, str], ids: dict[int, int], scope: dict) -> list[NewRecord]:
    """Each record, its temporary refs replaced, validated as a new record of its type."""
    escaped = {_escaped(temporary): _escaped(uri) for temporary, uri in created.items()}
    service.value_lists.refresh(conn)
    items = []
    for entry in ordered:
        doc = _substituted(entry, escaped)
        doc.pop("uri", None)
        label = f"{FIELD}/{entry.index}"
        try:
            clean, warnings, _ = service.prepare_doc(entry.record_type, doc, creating=True, refresh=False)
        except Invalid as error:
            raise nested_under(error, label) from None
        items.append(NewRecord(entry.record_type, clean, warnings, scope[entry.index], label=label, record_id=ids[entry.index]))
    return items
