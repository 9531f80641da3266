"""The write path for a batch of new records; a single create is a batch of one.

A batch checks its repositories once, allocates every record's id up front (a record's URI,
part of its JSON, needs it: no placeholder row is inserted and then updated), checks the refs
of all its records with one query per target type, lets each type's hooks derive their
records, and writes rows, record_link rows and change-log rows with executemany in bounded
chunks, after checking the unique keys of the whole set in bulk (on SQLite, whose writers take
turns, only once its constraint refused one; a constraint PostgreSQL still refuses, a
concurrent writer's, gives the same 400). Rows are written ("flushed") at the
end, and before a record whose hooks read the rows it refers to (a container its locations) is
derived if it refers to a batch member derived but not yet written; a tree node reads nothing of
a new parent but what the batch remembers (its root, its children's next slot), so a batch of
whole collections is written in one step. After-save hooks run once every row of the batch is
stored."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson
from sqlalchemy.exc import IntegrityError

from fonds.errors import BadRequest, Invalid, nested_under
from fonds.records import refs, uniqueness
from fonds.records.hooks import Hooks, WriteContext
from fonds.records.preparation import CREATION_STAMPS
from fonds.records.registry import RecordType
from fonds.records.trees import placement
from fonds.records.types.repositories import GLOBAL_REPO_ID
from fonds.records.validation import find_refs
from fonds.storage import change_log, deferred_counts
from fonds.storage import links as link_table
from fonds.storage import records as store
from fonds.storage.db import writers_take_turns


@dataclass(slots=True)
class NewRecord:
    """One record of a batch, validated (`RecordService.prepare_doc`)."""

    record_type: RecordType
    doc: dict
    warnings: dict
    repo_id: int | None
    # Where the record sits in the request ("batch_import/3"), put before the paths of its errors.
    label: str = ""
    options: dict = field(default_factory=dict)
    # Set when the caller allocated it (`Batch.allocate`), or `fixed`: an id the system keeps.
    record_id: int | None = None
    fixed: bool = False
    # Its refs as `find_refs` gives them, when the caller found them already.
    refs: list[tuple[str, str]] | None = None
    # Its URI, when the caller made it already (with `record_id`).
    uri: str | None = None
    # A record derived where it was validated (`Hooks.derive_new`, records/import_validation.py):
    # (its JSON but what the write adds, or None: `doc` holds it all; its columns; stale). `doc`
    # then holds what placing a tree node reads (its root, parent and position refs) or nothing.
    ready: tuple[bytes | None, dict, bool] | None = None


@dataclass(slots=True)
class _Derived:
    index: int
    item: NewRecord
    ctx: WriteContext
    row: dict
    links: list


def plan_refs(service, items: list[NewRecord]) -> refs.PlannedRefs:
    """The refs of `items` (each with its id) parsed and linked, the batch's own records taken as
    existing: what checking them needs but the database (`refs.plan`)."""
    schemas = service.schemas
    requests = [
        (item.refs if item.refs is not None else find_refs(schemas, schemas[item.record_type.name], item.doc), item.repo_id)
        for item in items
    ]
    return refs.plan(service.registry, requests, batch_members(items))


def batch_members(items: list[NewRecord]) -> dict[tuple[str, int], int | None]:
    """(type name, id) -> repository of each of `items` (each with its id), as `refs.plan` takes them."""
    return {(item.record_type.name, item.record_id): item.repo_id for item in items}


def labelled(error: Invalid, label: str) -> Invalid:
    return nested_under(error, label) if label else error


class Batch:
    """New records written together in the caller's transaction (`conn`)."""

    def __init__(self, service, conn, actor):
        self.service, self.conn, self.actor = service, conn, actor
        self.registry = service.registry
        self.tables = conn.info["fonds_tables"]
        self.now = store.utcnow()
        self.stamp = store.iso(self.now)
        # Shared by the hooks of the batch's records (the next free position of each sibling list).
        self.memo: dict = {}
        self._pending: list[_Derived] = []
        self._pending_keys: set[tuple[str, int]] = set()
        # (type name, id) of every record the batch creates (no other transaction sees them).
        self.members: set[tuple[str, int]] = set()
        self._row_starts: dict[str, dict] = {}

    def allocate(self, record_type: RecordType, count: int) -> list[int]:
        return store.allocate_ids(self.conn, self.tables[record_type.name], count)

    def create(
        self,
        items: list[NewRecord],
        *,
        repositories: frozenset[int] = frozenset(),
        progress: Callable[[int], None] | None = None,
        keep: list | None = None,
        planned_refs: refs.PlannedRefs | None = None,
        results: bool = True,
    ) -> list[dict]:
        """Create `items` (dependencies first); returns each one's write result (none if not
        `results`: a batch import answers with its URIs alone). `keep`: given the records as
        written (their rows), to free them when the caller chooses. `planned_refs`:
        `plan_refs(items)`, when the caller worked it out before the transaction (ids given).
        `repositories`: ids of repositories the caller read to exist in this transaction."""
        self._check_repositories(items, repositories)
        self._allocate_missing(items)
        uris = [item.uri or item.record_type.uri(item.record_id, item.repo_id) for item in items]
        planned = planned_refs or plan_refs(self.service, items)
        self.members.update(planned.pending)
        try:
            links, errors = refs.check_planned(self.conn, planned)
        except refs.NotAsPlanned:
            links, errors = refs.check_planned(self.conn, plan_refs(self.service, items))
        for item, found in zip(items, errors):
            if found:
                raise labelled(Invalid(found), item.label) if item.label else BadRequest(found)
        self._prepare(items)
        done = []
        for index, (item, uri, item_links) in enumerate(zip(items, uris, links)):
            if (
                item.ready is None
                and item.record_type.hooks.derive_reads_referenced_rows
                and any((target, target_id) in self._pending_keys for _, _, target, target_id in item_links)
            ):
                self.flush()
            done.append(self._derive(index, item, uri, item_links))
            if progress is not None:
                progress(index + 1)
        self.flush()
        saving = {
            name: hooks.after_save
            for name, hooks in {d.item.record_type.name: d.item.record_type.hooks for d in done}.items()
            if _saves(hooks)
        }
        if saving:
            for derived in done:
                after_save = saving.get(derived.item.record_type.name)
                if after_save is not None:
                    after_save(self.service, derived.ctx, derived.item.doc, self.actor)
        if keep is not None:  # freeing a bulk write's rows is then the caller's to time (imports.py)
            keep.append(done)
        return [_result(derived) for derived in done] if results else []

    def _prepare(self, items: list[NewRecord]) -> None:
        by_type: dict[str, list[NewRecord]] = {}
        for item in items:
            by_type.setdefault(item.record_type.name, []).append(item)
        for members in by_type.values():
            record_type, docs = members[0].record_type, [item.doc for item in members]
            if record_type.is_tree_node:
                placement.prepare_new_nodes(self, record_type.tree, docs)
            record_type.hooks.prepare_batch(self, docs)

    def _check_repositories(self, items: list[NewRecord], found: frozenset[int]) -> None:
        """Refuse items in a repository that does not exist (`found`: some that do, read already)."""
        scoped = [item for item in items if item.record_type.repo_scoped]
        if not scoped:
            return
        wanted = sorted({item.repo_id for item in scoped if item.repo_id is not None} - found)
        if wanted:
            found = found | {repo_id for (repo_id,) in store.taken(self.conn, self.tables["repository"], ("id",), [(i,) for i in wanted])}
        for item in scoped:
            if item.repo_id not in found:
                raise BadRequest({"repo_id": ["Failed validation -- The Repository must exist"]})
            if item.repo_id == GLOBAL_REPO_ID and not item.record_type.allowed_in_global_repository:
                raise BadRequest("The global repository cannot contain archival records")

    def _allocate_missing(self, items: list[NewRecord]) -> None:
        by_type: dict[str, list[NewRecord]] = {}
        for item in items:
            if item.record_id is None:
                by_type.setdefault(item.record_type.name, []).append(item)
        for members in by_type.values():
            for item, record_id in zip(members, self.allocate(members[0].record_type, len(members))):
                item.record_id = record_id

    def _derive(self, index: int, item: NewRecord, uri: str, links: list) -> _Derived:
        record_type, doc, username = item.record_type, item.doc, self.actor.username
        ctx = WriteContext(
            self.conn,
            self.registry,
            record_type,
            item.repo_id,
            item.record_id,
            uri,
            options=item.options,
            actor=username,
            now=self.now,
            batch=self,
        )
        try:
            if item.ready is None:
                record_type.hooks.derive(ctx, doc)
            else:
                ctx.columns.update(item.ready[1])
                ctx.stale = item.ready[2]
            if record_type.is_tree_node:
                placement.place(ctx, doc)
        except Invalid as error:
            raise labelled(error, item.label) from None
        if item.ready is None:
            self.service.preparer.settle(record_type, doc, item.warnings)
            doc["uri"] = uri
            doc.update(self._stamps)
            if record_type.repo_scoped:
                doc["repository"] = {"ref": f"/repositories/{item.repo_id}"}
            body = orjson.dumps(doc)
        else:
            body = self._with_written_fields(item, uri)
        row = dict(self._row_start(record_type))
        row.update(ctx.columns)
        row["id"], row["repo_id"], row["json"] = item.record_id, item.repo_id, body
        derived = _Derived(index, item, ctx, row, links)
        self._pending.append(derived)
        self._pending_keys.add((record_type.name, item.record_id))
        return derived

    def _with_written_fields(self, item: NewRecord, uri: str) -> bytes:
        """A record derived where it was validated, as stored: its JSON (which holds none of
        them: `preparation.WRITTEN_FIELDS`) followed by what `_derive` adds to another's."""
        body = item.ready[0]
        if body is None:  # its refs to the batch's records were pointed at in `doc`
            body = orjson.dumps(item.doc)
        repository = b',"repository":{"ref":"/repositories/%d"}' % item.repo_id if item.record_type.repo_scoped else b""
        return b'%s,"uri":%s,%s%s}' % (body[:-1], orjson.dumps(uri), self._stamps_json, repository)

    @functools.cached_property
    def _stamps_json(self) -> bytes:
        """`_stamps` as the members of a JSON object."""
        return orjson.dumps(self._stamps)[1:-1]

    @functools.cached_property
    def _stamps(self) -> dict:
        """What every new record's JSON says of its creation (after its `uri`)."""
        username = self.actor.username
        others = {"lock_version": 0, "created_by": username, "last_modified_by": username}
        return {field: others.get(field, self.stamp) for field in CREATION_STAMPS}

    def _row_start(self, record_type: RecordType) -> dict:
        """A new row of the type before its record's own values: every column, the creation stamps."""
        found = self._row_starts.get(record_type.name)
        if found is None:
            username = self.actor.username
            found = self._row_starts[record_type.name] = {column.name: None for column in record_type.columns} | dict(
                lock_version=0,
                create_time=self.now,
                system_mtime=self.now,
                user_mtime=self.now,
                created_by=username,
                last_modified_by=username,
            )
        return found

    def flush(self) -> None:
        """Write the records derived so far: unique keys checked, then rows, links, change rows."""
        pending, self._pending = self._pending, []
        self._pending_keys = set()
        if not pending:
            return
        by_type: dict[str, list[_Derived]] = {}
        for derived in pending:
            by_type.setdefault(derived.item.record_type.name, []).append(derived)
        # Where writers take turns (SQLite) the unique constraints refuse exactly what the check
        # would: the stored values are looked up only when they do, to name the clash as the
        # check names it (in a bulk load the check held the one write lock ~8 µs a record).
        checked_first = not writers_take_turns(self.conn)
        if checked_first:
            for name, members in by_type.items():
                self._check_unique(self.registry[name], members)
        for name, members in by_type.items():
            table, record_type = self.tables[name], self.registry[name]
            rows = [derived.row for derived in members]
            try:
                with deferred_counts.counted_after(
                    self.conn, name, rows, record_type.tree.root_column if record_type.is_tree_node else None
                ):
                    store.insert_rows(self.conn, table, rows)
            except IntegrityError as error:
                if not checked_first:
                    # The members inserted before the refused one stay (the transaction is
                    # abandoned anyway): they are not taken for stored records holding their keys.
                    self._check_unique(self.registry[name], members, stored_besides=True)
                raise _unique_race(self.registry[name], members, error) from None
            if any(derived.item.fixed for derived in members):
                store.advance_sequence(self.conn, table)
        link_table.insert_links(
            self.conn,
            self.tables,
            [(d.item.record_type.name, d.item.record_id, link) for d in pending for link in refs.stored_links(d.item.record_type, d.links)],
        )
        change_log.append(self.conn, [_change(derived, self.now) for derived in pending])

    def _check_unique(self, record_type: RecordType, members: list[_Derived], stored_besides: bool = False) -> None:
        """Refuse the first member (in batch order) whose unique key another member or a stored
        record holds; `stored_besides`: some members are stored already, and hold only their own."""
        problems = []
        table = self.tables[record_type.name]
        for key in record_type.unique_keys:
            holders: dict[tuple, _Derived] = {}
            for derived in members:
                values = tuple(derived.row.get(column) for column in key.columns)
                if any(value is None for value in values):
                    continue  # NULLs never collide, as in SQL
                if values in holders:
                    problems.append((derived.index, key, derived, holders[values].ctx.uri))
                else:
                    holders[values] = derived
            stored = store.taken(self.conn, table, key.columns, list(holders)) if holders else {}
            problems += [
                (holders[values].index, key, holders[values], record_type.uri(i, holders[values].item.repo_id))
                for values, i in stored.items()
                if not (stored_besides and i == holders[values].item.record_id)
            ]
        if problems:
            _, key, derived, other = min(problems, key=lambda problem: problem[0])
            raise labelled(uniqueness.clash(key, derived.row, other), derived.item.label)


def _saves(hooks: Hooks) -> bool:
    """Whether a type's hooks do anything after a save (most do not: no call a record then)."""
    return type(hooks).after_save is not Hooks.after_save


def _unique_race(record_type: RecordType, members: list[_Derived], error: IntegrityError) -> Exception:
    """A unique constraint the database refused though the pre-check passed (a concurrent writer
    stored the same value first): the same 400 as the pre-check. Anything else stays an error."""
    key = uniqueness.refused_key(record_type, error)
    if key is None:
        return error
    holders = [d for d in members if all(d.row.get(column) is not None for column in key.columns)]
    if len(holders) != 1:
        return uniqueness.clash(key, {}, None)  # which member clashed the database does not say
    return labelled(uniqueness.clash(key, holders[0].row, None), holders[0].item.label)


def _change(derived: _Derived, now) -> dict:
    item = derived.item
    return {
        "record_type": item.record_type.name,
        "record_id": item.record_id,
        "repo_id": item.repo_id,
        "uri": derived.ctx.uri,
        "op": "created",
        "at": now,
    }


def _result(derived: _Derived) -> dict:
    return {
        "status": "Created",
        "id": derived.item.record_id,
        "lock_version": 0,
        "stale": True if derived.ctx.stale else None,
        "uri": derived.ctx.uri,
        "warnings": derived.item.warnings or [],
    }
