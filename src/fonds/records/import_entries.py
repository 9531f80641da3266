"""A batch import's body read as entries: each record's type and temporary URI, checked before
anything is validated or written, the stand-in URIs refs to the batch's records point at
while they are validated, and the order they are created in. Shared by the server and the
process that validates large imports (records/import_validation.py), which may read a body on
the server's behalf."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import orjson

from fonds.errors import BadRequest, Invalid
from fonds.records.registry import RecordType

FIELD = "batch_import"
# The ids of the stand-in URIs a batch's records are known by while they are validated (the n-th
# record's is this plus n): past any id a database hands out (SQLite's and PostgreSQL's are 64-bit).
STAND_IN_IDS = 2**63
# How every stand-in id begins, past the path before it (2**63 + n, for any n below 7.9 * 10**12).
_STAND_IN_START = b"/922337"

# A record validated for the batch: (its clean record, warnings, refs, and, if it was derived
# where it was validated, what `writes.NewRecord.ready` holds; its clean record then holds only
# what placing it reads, unless its JSON could not be made there).
Prepared = tuple[dict, dict, list[tuple[str, str]], tuple | None]


@dataclass(slots=True)
class Entry:
    index: int
    record_type: RecordType
    temporary_uri: str | None
    # The client's record, until it is validated (then only its clean copy is kept).
    doc: dict | None


def parse_records(body: bytes) -> list:
    """The body's JSON (what it holds is for `parse_entries` to check)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"Had some trouble parsing your request: {exc}") from None


def parse_entries(registry, records) -> list[Entry]:
    """Each record's type and temporary URI, checked before anything is written. Empties
    `records` (the entries hold the records, each let go once validated). Each record's nesting
    and characters are checked where it is validated."""
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
    records.clear()
    return entries


def taken_docs(entries: list[Entry]) -> tuple[list[str], list[dict]]:
    """Each entry's type name and record, taken from it to be validated (without its temporary URI)."""
    docs = []
    for entry in entries:
        doc, entry.doc = entry.doc, None
        doc.pop("uri", None)
        docs.append(doc)
    return [entry.record_type.name for entry in entries], docs


def scopes(entries: list[Entry], repo_id: int) -> dict[int, int | None]:
    """{entry index: the repository its record is created in} (None: a global record)."""
    return {e.index: repo_id if e.record_type.repo_scoped else None for e in entries}


def stand_ins(entries: list[Entry], scope: dict[int, int | None]) -> dict[str, str]:
    """{temporary URI: the stand-in URI refs to it point at while the records are validated}."""
    return {e.temporary_uri: e.record_type.uri(STAND_IN_IDS + e.index, scope[e.index]) for e in entries if e.temporary_uri}


def stand_in_count(body: bytes) -> int:
    """How many times a record's JSON holds the start of a stand-in id: once for each of its refs
    to a stand-in, and more if other text holds it. Equal to the number of those refs, no string
    but theirs is a stand-in URI, so replacing the stand-ins' JSON strings in its bytes changes
    nothing else (imports._new_record). Counted rather than matched: 0.5 µs a record against 1.5."""
    return body.count(_STAND_IN_START)


def creation_order(entries: list[Entry], prepared: list[Prepared], stand_in: dict[str, str]) -> list[int]:
    """The entries' places in an order where each record comes after the records of the batch it
    refers to, otherwise in the order given (Kahn's algorithm, stable), from their validated
    records' refs, which point at the batch's records by their stand-ins (`stand_ins`): the same
    order as by the URIs they stand for."""
    member_at = {stand_in[e.temporary_uri]: e.index for e in entries if e.temporary_uri}
    refs = [found[2] for found in prepared]
    # How many records of the batch each waits for, and who waits for each: a count a record, not
    # a set (most wait for none, or for one: their parent).
    waiting = [0] * len(refs)
    dependants: dict[int, list[int]] = {}
    for index, found in enumerate(refs):
        needs: list[int] | None = None
        for _, uri in found:
            need = member_at.get(uri)
            if need is None or need == index:
                continue
            if needs is None:
                needs = [need]
            elif need not in needs:
                needs.append(need)
        if needs:
            waiting[index] = len(needs)
            for need in needs:
                dependants.setdefault(need, []).append(index)
    # A deque: popping the front of a list of a million ready records moves the rest each time.
    ready = deque(index for index, count in enumerate(waiting) if not count)
    order: list[int] = []
    while ready:
        index = ready.popleft()
        order.append(index)
        for dependant in dependants.get(index, ()):
            waiting[dependant] -= 1
            if not waiting[dependant]:
                ready.append(dependant)
    if len(order) < len(refs):
        stuck = sorted(set(range(len(refs))) - set(order))
        raise Invalid({FIELD: [f"Records {stuck[:10]} refer to each other in a cycle: none can be created first"]})
    return order
