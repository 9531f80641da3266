"""References between records: checking them on write, recording them in the link table, and
attaching `_resolved` copies on read (`resolve[]`)."""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import orjson
from sqlalchemy import select

from fonds.errors import BadRequest
from fonds.records.registry import RecordType, Registry
from fonds.storage import records as store
from fonds.storage.chunks import is_in, select_any

_INDEX = re.compile(r"(^|/)\d+(?=/|$)")
Link = tuple[str, str, str, int]
# More refs than any real record holds (a resource with thousands of subjects is already rare);
# past it a write is refused rather than left to the database's limits.
MAX_REFS = 10_000
# `resolve[]=a::b::c`: ArchivesSpace clients nest two or three levels; each level is a query.
MAX_RESOLVE_DEPTH = 5


@functools.lru_cache(maxsize=4096)
def field_pattern(path: str) -> str:
    # Records repeat their paths (`subjects/0`, `instances/0/sub_container/top_container`): cached.
    return _INDEX.sub(lambda m: f"{m.group(1)}*", path)


def stored_links(record_type: RecordType, links: list[Link]) -> list[Link]:
    """The links of a record of `record_type` kept as record_link rows: all but a tree node's
    refs to its root and parent, which its columns hold (a bulk load wrote half its link rows
    for them, three index entries each)."""
    fields = record_type.tree_fields
    return [link for link in links if link[0] not in fields] if fields else links


def check_refs(conn, registry: Registry, refs: list[tuple[str, str]], *, repo_id: int | None) -> list[Link]:
    """Refuse refs to records that do not exist or live in another repository; return the links."""
    links, errors = check_many(conn, registry, [(refs, repo_id)])
    if errors[0]:
        raise BadRequest(errors[0])
    return links[0]


def check_many(
    conn,
    registry: Registry,
    requests: list[tuple[list[tuple[str, str]], int | None]],
    pending: dict[tuple[str, int], int | None] | None = None,
) -> tuple[list[list[Link]], list[dict[str, list[str]]]]:
    """Check the refs of many records at once, one query per target type: `requests` holds each
    record's (path, uri) refs and repository; `pending` the (type, id) -> repository of records
    being written in the same batch, which count as existing. Returns each record's links and errors."""
    return check_planned(conn, plan(registry, requests, pending))


# What `plan` takes a global record's repository to be: any (only scoped refs name one).
ANYWHERE = object()


@dataclass
class PlannedRefs:
    """The refs of many records parsed, and their links and errors worked out as they are if every
    record they name exists where its URI says (`plan`): all the write transaction then does is
    one query per target type to confirm it (`check_planned`). Parsing and looking up each ref
    held SQLite's one write lock ~90 % of the time its ref checks took."""

    # Each record's refs and repository; None in a plan made elsewhere (`from_portable`).
    requests: list[tuple[list[tuple[str, str]], int | None]] | None
    # Each record's refs: (path, uri, type name, id, the URI's repository, its type's scoped).
    parsed: list[list[tuple]] | None
    pending: dict[tuple[str, int], int | None]
    wanted: dict[str, set[int]]
    # What was taken to exist: `pending` and every wanted target, where its URI says.
    assumed: dict[tuple[str, int], object]
    links: list[list[Link]]
    errors: list[dict[str, list[str]]]


def plan(
    registry: Registry,
    requests: list[tuple[list[tuple[str, str]], int | None]],
    pending: dict[tuple[str, int], int | None] | None = None,
) -> PlannedRefs:
    """`check_many`'s work that needs no database, done before the write transaction."""
    for refs, _ in requests:
        _check_ref_count(refs)
    pending = pending or {}
    assumed = dict(pending)
    parse = registry.parse_uri
    parsed = []
    wanted: dict[str, set[int]] = defaultdict(set)
    for refs, _ in requests:
        record_refs = []
        for path, uri in refs:
            target = parse(uri)
            record_type = target.record_type
            name, record_id = record_type.name, target.record_id
            if (name, record_id) not in pending:
                wanted[name].add(record_id)
                # A global record's repository is not in its URI: that it exists is enough.
                assumed.setdefault((name, record_id), target.repo_id if record_type.repo_scoped else ANYWHERE)
            record_refs.append((path, uri, name, record_id, target.repo_id, record_type.repo_scoped))
        parsed.append(record_refs)
    links, errors = _links_and_errors(parsed, requests, assumed)
    return PlannedRefs(requests, parsed, pending, wanted, assumed, links, errors)


# A plan as another process sends it (`portable`): each record's links and errors, and the
# targets taken to exist, each with the repository its URI says (None: a global record's).
Portable = tuple[list[list[Link]], list[dict[str, list[str]]], dict[tuple[str, int], int | None]]


def portable(planned: PlannedRefs) -> Portable:
    """What checking `planned` needs, to be sent to another process (`from_portable`)."""
    targets = {}
    for name, ids in planned.wanted.items():
        for record_id in ids:
            repo_id = planned.assumed[name, record_id]
            targets[name, record_id] = None if repo_id is ANYWHERE else repo_id
    return planned.links, planned.errors, targets


def from_portable(sent: Portable, pending: dict[tuple[str, int], int | None]) -> PlannedRefs:
    """The plan another process made (`portable`) of the refs of records being written together
    (`pending`, as `plan` takes it); `check_planned` confirms it, but cannot word its errors."""
    links, errors, targets = sent
    wanted: dict[str, set[int]] = defaultdict(set)
    assumed = dict(pending)
    for (name, record_id), repo_id in targets.items():
        wanted[name].add(record_id)
        assumed[name, record_id] = ANYWHERE if repo_id is None else repo_id
    return PlannedRefs(None, None, pending, wanted, assumed, links, errors)


class NotAsPlanned(Exception):
    """A target is not as a plan made elsewhere (`from_portable`) took it to be: the errors are
    for the whole plan (`plan`) to word."""


def check_planned(conn, planned: PlannedRefs) -> tuple[list[list[Link]], list[dict[str, list[str]]]]:
    """Each record's links and errors (`check_many`), its targets read in the caller's transaction."""
    tables = conn.info["fonds_tables"]
    existing = {}
    for name, ids in planned.wanted.items():
        existing.update(
            ((name, record_id), repo_id) for record_id, repo_id in store.repositories_of(conn, tables[name], sorted(ids)).items()
        )
    if all(_as_assumed(existing, planned.assumed, (name, i)) for name, ids in planned.wanted.items() for i in ids):
        return planned.links, planned.errors
    if planned.parsed is None:
        raise NotAsPlanned()
    # A target missing or elsewhere than its URI says: the errors say which.
    return _links_and_errors(planned.parsed, planned.requests, planned.pending | existing)


def _as_assumed(existing: dict, assumed: dict, key: tuple[str, int]) -> bool:
    expected = assumed[key]
    return key in existing and (expected is ANYWHERE or existing[key] == expected)


def _links_and_errors(
    parsed: list[list[tuple]], requests: list, existing: dict[tuple[str, int], object]
) -> tuple[list[list[Link]], list[dict[str, list[str]]]]:
    """Each record's links, and errors for refs to records not in `existing` ((type, id) -> repository)."""
    all_links, all_errors = [], []
    missing = object()
    for record_refs, (_, repo_id) in zip(parsed, requests):
        links: list[Link] = []
        errors: dict[str, list[str]] = {}
        for path, uri, name, record_id, target_repo, scoped in record_refs:
            if scoped and target_repo != repo_id:
                errors.setdefault(path, []).append(f"Invalid URI reference for this ({repo_id}) repo: '{uri}'")
                continue
            found = existing.get((name, record_id), missing)
            if found is missing or (scoped and found != target_repo):
                errors.setdefault(path, []).append(f"Can't relate to non-existent record: {uri}")
            else:
                links.append((field_pattern(path), path, name, record_id))
        all_links.append(links)
        all_errors.append(errors)
    return all_links, all_errors


def _check_ref_count(refs: list[tuple[str, str]]) -> None:
    if len(refs) > MAX_REFS:
        counts = defaultdict(int)
        for path, _ in refs:
            counts[field_pattern(path).split("/")[0]] += 1
        field = max(counts, key=counts.get)
        raise BadRequest({field: [f"Too many references in one record: {len(refs)} (the limit is {MAX_REFS})"]})


def parse_resolve(keys: list[str]) -> dict[str, dict]:
    """`["subjects", "top_container::container_locations"]` -> nested dict of keys to resolve."""
    tree: dict[str, dict] = {}
    for key in keys:
        parts = key.split("::")
        if len(parts) > MAX_RESOLVE_DEPTH:
            raise BadRequest({"resolve[]": [f"Nested {len(parts)} levels deep (the limit is {MAX_RESOLVE_DEPTH})"]})
        node = tree
        for part in parts:
            if part:
                node = node.setdefault(part, {})
    return tree


def _matches(node, wanted: dict[str, dict], found: list[tuple[dict, dict]]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in wanted:
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, dict) and isinstance(item.get("ref"), str):
                        found.append((item, wanted[key]))
            if key != "_resolved":
                _matches(value, wanted, found)
    elif isinstance(node, list):
        for item in node:
            _matches(item, wanted, found)


# Loads the answers of records of one type by id: (uri, answer bytes) of those found.
Loader = Callable[[RecordType, list[int]], Iterable[tuple[str, bytes]]]


def attach_resolved(conn, registry: Registry, render, docs: list[dict], wanted: dict[str, dict]) -> None:
    """Add `_resolved` (the target's full JSON as its GET returns it) beside every matching ref.

    `render(conn, record_type, rows)` turns rows into record JSON bytes."""
    attach_loaded(registry, rendering_loader(conn, render), docs, wanted)


def rendering_loader(conn, render) -> Loader:
    """Targets read with SQLAlchemy and rendered by `render(conn, record_type, rows)`."""
    tables = conn.info["fonds_tables"]

    def load(record_type: RecordType, ids: list[int]) -> list[tuple[str, bytes]]:
        table = tables[record_type.name]
        rows = select_any(conn, lambda chunk: select(table).where(is_in(table.c.id, chunk)), ids)
        return [(record_type.uri(row.id, row.repo_id), body) for row, body in zip(rows, render(conn, record_type, rows))]

    return load


def resolved_bodies(registry: Registry, load: Loader, bodies: list[bytes], wanted: dict[str, dict]) -> list[bytes]:
    """The answers `bodies` with `_resolved` attached as `wanted` (`parse_resolve`) asks."""
    if not wanted or not bodies:
        return bodies
    docs = [orjson.loads(body) for body in bodies]
    attach_loaded(registry, load, docs, wanted)
    return [orjson.dumps(doc) for doc in docs]


def attach_loaded(registry: Registry, load: Loader, docs: list[dict], wanted: dict[str, dict]) -> None:
    """`attach_resolved` with the targets' answers from `load` (sorted ids of one type a call)."""
    found: list[tuple[dict, dict]] = []
    for doc in docs:
        _matches(doc, wanted, found)
    by_type: dict[str, set[int]] = defaultdict(set)
    for ref, _ in found:
        target = registry.parse_uri(ref["ref"])
        if target:
            by_type[target.record_type.name].add(target.record_id)
    loaded: dict[str, dict] = {}
    for name, ids in by_type.items():
        for uri, body in load(registry[name], sorted(ids)):
            loaded[uri] = orjson.loads(body)
    nested: dict[int, tuple[dict, dict]] = {}
    for ref, sub in found:
        target = loaded.get(ref["ref"])
        if target is not None:
            copy = orjson.loads(orjson.dumps(target)) if sub else target
            ref["_resolved"] = copy
            if sub:
                nested[id(copy)] = (copy, sub)
    groups: dict[str, list[dict]] = defaultdict(list)
    for copy, sub in nested.values():
        groups[orjson.dumps(sub).decode()].append(copy)
    for key, copies in groups.items():
        attach_loaded(registry, load, copies, orjson.loads(key))
