"""The record service: create, read, update, delete and list any registered type.

Plain keyword-only functions under thin route handlers. Each write is one transaction that
also appends to the change log; reads serve the stored JSON bytes as they are."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import orjson
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from fonds.config import Settings
from fonds.errors import BadRequest, Conflict, FondsError, Invalid, NotFound
from fonds.records import deletion, pages, refs, uniqueness
from fonds.records.enumeration_usage import ListUsage
from fonds.records.grouped_creates import GroupedCreates, PendingCreate, Precondition, PreconditionChanged, RefusedInWrite, read_with_lists
from fonds.records.hooks import WriteContext
from fonds.records.id_leases import IdLeases
from fonds.records.import_validation import ImportValidation
from fonds.records.plain import splice
from fonds.records.preparation import RecordPreparer
from fonds.records.registry import RecordType, Registry
from fonds.records.schemas import SchemaSet, load_schema_files
from fonds.records.trees import node_fields, placement
from fonds.records.types.repositories import GLOBAL_REPO_ID
from fonds.records.validation import check_structure, find_refs
from fonds.records.value_lists import ListCache
from fonds.records.writes import Batch, NewRecord
from fonds.storage import change_log
from fonds.storage import links as link_table
from fonds.storage import records as store
from fonds.storage.chunks import is_in, select_any
from fonds.storage.db import Database


@dataclass(frozen=True)
class Actor:
    """Who is writing. `grants` (group id's repository, permission code) serve the auth checks."""

    user_id: int
    username: str
    grants: frozenset = frozenset()


@dataclass(frozen=True)
class Page:
    number: int
    size: int


def parse_body(body: bytes) -> dict:
    if not body.strip():
        raise BadRequest("Had some trouble parsing your request: the body is empty (expected a JSON object)")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"Had some trouble parsing your request: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest(f"Had some trouble parsing your request: expected a JSON object, got {type(doc).__name__}")
    check_structure(doc, body)
    return doc


class RecordService:
    def __init__(
        self,
        db: Database,
        registry: Registry,
        settings: Settings,
        *,
        registry_source: str | None = None,
        import_writer: Callable[[], RecordService] | None = None,
    ):
        """`registry_source`: where another process imports `registry` from ("module:NAME"), for
        the process that validates large imports (none without it). `import_writer`: builds the
        record service of the processes that write large imports (SQLite), in each of them."""
        self.db, self.registry, self.settings = db, registry, settings
        self.schemas = SchemaSet(load_schema_files(), {t.name for t in registry})
        self.value_lists = ListCache(db)
        self.list_usage = ListUsage(self.schemas, registry)
        self.preparer = RecordPreparer(self.schemas, registry, self.value_lists, strict=settings.strict_validation)
        self.validator, self.defaults = self.preparer.validator, self.preparer.defaults
        # A record normalised, validated and given its defaults (`RecordPreparer.prepare_doc`).
        self.prepare_doc = self.preparer.prepare_doc
        self.import_validation = ImportValidation(
            registry_source,
            strict=settings.strict_validation,
            min_records=settings.import_process_records if registry_source else 0,
            writer=import_writer,
        )
        self.grouped_creates = GroupedCreates(self)
        self.id_leases = IdLeases()

    # -- writing ---------------------------------------------------------------------------

    def prepare(self, record_type: RecordType, body: bytes, *, creating: bool) -> tuple[dict, dict, object]:
        return self.prepare_doc(record_type, parse_body(body), creating=creating)

    def find_links(self, record_type: RecordType, doc: dict) -> list[refs.Link]:
        found = []
        for path, uri in find_refs(self.schemas, self.schemas[record_type.name], doc):
            target = self.registry.parse_uri(uri)
            if target is not None:
                found.append((refs.field_pattern(path), path, target.record_type.name, target.record_id))
        return found

    def check_repository(self, conn, record_type: RecordType, repo_id: int | None, *, writing: bool = False) -> None:
        if not record_type.repo_scoped:
            return
        if not store.exists(conn, conn.info["fonds_tables"]["repository"], repo_id):
            raise BadRequest({"repo_id": ["Failed validation -- The Repository must exist"]})
        if writing and repo_id == GLOBAL_REPO_ID and not record_type.allowed_in_global_repository:
            raise BadRequest("The global repository cannot contain archival records")

    def _stored_row(self, conn, record_type: RecordType, record_id: int, repo_id: int | None):
        """The row to change (locked for the write), or the 400 for a missing repository, else 404.
        The repository is looked up only when the row is not found in it: a row found there
        proves it exists."""
        table = conn.info["fonds_tables"][record_type.name]
        row = store.fetch(conn, table, record_id, repo_id=repo_id if record_type.repo_scoped else None, for_update=True)
        if row is None:
            self.check_repository(conn, record_type, repo_id, writing=False)
            raise NotFound(record_type.not_found())
        return row

    def check_repository_exists(self, repo_id: int) -> None:
        with self.db.read() as conn:
            if not store.exists(conn, conn.info["fonds_tables"]["repository"], repo_id):
                raise BadRequest({"repo_id": ["Failed validation -- The Repository must exist"]})

    def _save(
        self, conn, ctx: WriteContext, doc: dict, warnings: dict, *, links, lock_version: int, audit: dict, expect: int | None, now, op: str
    ) -> None:
        record_type = ctx.record_type
        record_type.hooks.derive(ctx, doc)
        if record_type.is_tree_node:
            placement.place(ctx, doc)
        self.preparer.settle(record_type, doc, warnings, ctx.existing_doc)
        uniqueness.check(conn, record_type, {**ctx.columns, "repo_id": ctx.repo_id}, ctx.record_id, ctx.existing)
        doc.update(uri=ctx.uri, lock_version=lock_version, **audit)
        if record_type.repo_scoped:
            doc["repository"] = {"ref": f"/repositories/{ctx.repo_id}"}
        values = {
            **ctx.columns,
            "lock_version": lock_version,
            "system_mtime": now,
            "user_mtime": now,
            "last_modified_by": audit["last_modified_by"],
        }
        tables = conn.info["fonds_tables"]
        try:
            stored = store.store(
                conn, tables[record_type.name], ctx.record_id, json=orjson.dumps(doc), values=values, expect_lock_version=expect
            )
        except IntegrityError as refused:
            raise uniqueness.race_error(self.db, record_type, {**ctx.columns, "repo_id": ctx.repo_id}, ctx.record_id, refused) from refused
        if not stored:
            raise Conflict("The record you tried to update has been modified since you fetched it.")
        link_table.replace_links(
            conn,
            tables,
            source_type=record_type.name,
            source_id=ctx.record_id,
            links=refs.stored_links(record_type, links),
            fresh=op == "created",
        )
        change = {"record_type": record_type.name, "record_id": ctx.record_id, "repo_id": ctx.repo_id, "uri": ctx.uri, "op": op, "at": now}
        change_log.append(conn, [change])

    def prepare_body(self, record_type: RecordType, body: bytes, *, creating: bool = True) -> tuple[dict, dict, object]:
        """A body validated against the value lists kept in the process."""
        return self.prepare_doc(record_type, parse_body(body), creating=creating, refresh=False)

    def _prepared_before_writing(self, record_type: RecordType, body: bytes, *, creating: bool) -> tuple[dict, dict, object]:
        """Validated before the write lock is taken, against the value lists kept in the process
        (the write transaction then confirms they are current); a body they refuse is refused
        only with the database's."""
        try:
            return self.prepare_body(record_type, body, creating=creating)
        except Invalid:
            return self.prepare(record_type, body, creating=creating)

    def create(
        self,
        record_type: RecordType,
        body: bytes,
        *,
        repo_id: int | None,
        actor: Actor,
        options: dict | None = None,
        precondition: Precondition | None = None,
    ) -> dict:
        """Validated here, written with the creates of other threads waiting meanwhile
        (records/grouped_creates.py); `precondition`: checked in the writing transaction."""
        clean, warnings, _ = self._prepared_before_writing(record_type, body, creating=True)
        pending = PendingCreate(record_type, body, clean, warnings, repo_id, actor, options or {}, precondition)
        return self.grouped_creates.create(pending)

    def create_in(
        self,
        conn,
        record_type: RecordType,
        doc: dict,
        warnings: dict,
        *,
        repo_id: int | None,
        actor: Actor,
        options: dict | None = None,
        record_id: int | None = None,
    ) -> dict:
        """Create in the caller's transaction (a batch of one, records/writes.py); `record_id` only
        for records the system keeps at a fixed id."""
        item = NewRecord(record_type, doc, warnings, repo_id, options=options or {}, record_id=record_id, fixed=record_id is not None)
        return Batch(self, conn, actor).create([item])[0]

    def update(
        self,
        record_type: RecordType,
        record_id: int,
        body: bytes,
        *,
        repo_id: int | None,
        actor: Actor,
        options: dict | None = None,
        precondition: Precondition | None = None,
    ) -> dict:
        """Validated before the write lock is taken, against the value lists kept in the process;
        the write transaction confirms they are current (validating again if not), as a create's.
        `precondition`: checked first in the writing transaction (`_writing`)."""
        prepared = self._prepared_before_writing(record_type, body, creating=False)
        with self._writing(precondition, lists=True) as (conn, lists_generation):
            if not self.value_lists.matches(lists_generation):
                self.value_lists.refresh(conn)
                prepared = self.prepare_body(record_type, body, creating=False)
            doc, warnings, given_lock = prepared
            return self.update_in(conn, record_type, record_id, doc, warnings, given_lock, repo_id=repo_id, actor=actor, options=options)

    @contextmanager
    def _writing(self, precondition: Precondition | None, *, lists: bool = False):
        """A write transaction whose `precondition` (the auth generation a cached session was
        read at) holds first: else PreconditionChanged, nothing written. A refusal made after it
        held comes as RefusedInWrite: it is the answer, which trying again would not change.
        Yields the connection and (`lists`) the value lists' generation, read with the precondition."""
        with self.db.write() as conn:
            lists_generation, read = read_with_lists(conn, [precondition] if precondition else [], lists=lists)
            if precondition is None:
                yield conn, lists_generation
                return
            if read[precondition.query] != precondition.expected:
                raise PreconditionChanged()
            try:
                yield conn, lists_generation
            except FondsError as refusal:
                raise RefusedInWrite(refusal) from refusal

    def update_in(
        self,
        conn,
        record_type: RecordType,
        record_id: int,
        doc: dict,
        warnings: dict,
        given_lock,
        *,
        repo_id: int | None,
        actor: Actor,
        options: dict | None = None,
    ) -> dict:
        row = self._stored_row(conn, record_type, record_id, repo_id)
        if record_type.hooks.hidden(row):
            raise Conflict(f"{record_type.uri(record_id, repo_id)} is maintained by the system and cannot be changed")
        lock_version = _lock_version(given_lock)
        if lock_version != row.lock_version:
            raise Conflict("The record you tried to update has been modified since you fetched it.")
        links = refs.check_refs(conn, self.registry, find_refs(self.schemas, self.schemas[record_type.name], doc), repo_id=repo_id)
        existing = orjson.loads(row.json)
        uri = record_type.uri(record_id, repo_id)
        now = store.utcnow()
        ctx = WriteContext(
            conn,
            self.registry,
            record_type,
            repo_id,
            record_id,
            uri,
            existing=row,
            existing_doc=existing,
            options=options or {},
            actor=actor.username,
            now=now,
        )
        stamp = store.iso(now)
        audit = {k: existing.get(k) for k in ("created", "create_time", "created_by") if existing.get(k)}
        audit.update(modified=stamp, system_mtime=stamp, user_mtime=stamp, last_modified_by=actor.username)
        self._save(
            conn,
            ctx,
            doc,
            warnings,
            links=links,
            lock_version=row.lock_version + 1,
            audit=audit,
            expect=row.lock_version,
            now=now,
            op="updated",
        )
        record_type.hooks.after_save(self, ctx, doc, actor)
        return {
            "status": "Updated",
            "id": record_id,
            "lock_version": row.lock_version + 1,
            "stale": True if ctx.stale else None,
            "uri": uri,
            "warnings": warnings or [],
        }

    def delete(
        self, record_type: RecordType, record_id: int, *, repo_id: int | None, actor: Actor, precondition: Precondition | None = None
    ) -> dict:
        with self._writing(precondition) as (conn, _):
            return self.delete_in(conn, record_type, record_id, repo_id=repo_id, actor=actor)

    def delete_in(self, conn, record_type: RecordType, record_id: int, *, repo_id: int | None, actor: Actor) -> dict:
        row = self._stored_row(conn, record_type, record_id, repo_id)
        if not record_type.hooks.can_delete(row):
            raise Conflict(f"Record deletion failed: {record_type.uri(record_id, repo_id)} is maintained by the system")
        deletion.delete_record(
            conn, self.registry, record_type, row, now=store.utcnow(), username=actor.username, find_links=self.find_links
        )
        return {"status": "Deleted", "id": record_id}

    # -- reading ---------------------------------------------------------------------------

    def render(self, conn, record_type: RecordType, rows) -> list[bytes]:
        extras = record_type.hooks.read_extras(conn, rows) if rows else None
        tree = record_type.tree
        if rows and record_type.is_tree_node:
            # A node's position and ancestors are computed at read time.
            node = node_fields.read_extras(conn, self.registry, tree, rows)
            extras = node if extras is None else [{**own, **more} for own, more in zip(extras, node)]
        if extras is None:
            return [row.json for row in rows]
        declared = set(record_type.read_fields)
        # Declared read-time fields are never stored, so splicing cannot repeat a key; a field
        # the stored JSON may also hold is merged instead, the computed value winning.
        return [
            splice(row.json, extra) if extra.keys() <= declared else orjson.dumps({**orjson.loads(row.json), **extra})
            for row, extra in zip(rows, extras)
        ]

    def with_resolved(self, conn, bodies: list[bytes], resolve: list[str]) -> list[bytes]:
        return refs.resolved_bodies(self.registry, refs.rendering_loader(conn, self.render), bodies, refs.parse_resolve(resolve))

    def read(self, record_type: RecordType, record_id: int, *, repo_id: int | None, resolve: list[str]) -> bytes:
        with self.db.read() as conn:
            table = conn.info["fonds_tables"][record_type.name]
            row = store.fetch(conn, table, record_id, repo_id=repo_id if record_type.repo_scoped else None)
            if row is None or record_type.hooks.hidden(row):
                self.check_repository(conn, record_type, repo_id, writing=False)
                raise NotFound(record_type.not_found())
            return self.with_resolved(conn, self.render(conn, record_type, [row]), resolve)[0]

    def _scope(self, conn, record_type: RecordType, repo_id: int | None):
        table = conn.info["fonds_tables"][record_type.name]
        where = []
        if record_type.repo_scoped:
            where.append(table.c.repo_id == repo_id)
        hidden = record_type.hooks.list_filter(table)
        if hidden is not None:
            where.append(hidden)
        return table, where

    def list_page(self, record_type: RecordType, *, repo_id: int | None, page: Page, resolve: list[str]) -> bytes:
        with self.db.read() as conn:
            self.check_repository(conn, record_type, repo_id, writing=False)
            table, where = self._scope(conn, record_type, repo_id)
            total, rows = pages.page_rows(conn, record_type, table, where, repo_id, (page.number - 1) * page.size, page.size)
            bodies = self.with_resolved(conn, self.render(conn, record_type, rows), resolve)
        return pages.page_json(page.number, page.size, total, bodies)

    def list_all(
        self,
        record_type: RecordType,
        *,
        repo_id: int | None,
        resolve: list[str],
        ids: list[int] | None = None,
        matching: dict | None = None,
    ) -> bytes:
        """Every record (or those in `ids`, or whose columns equal `matching`) as a plain JSON array."""
        with self.db.read() as conn:
            self.check_repository(conn, record_type, repo_id, writing=False)
            table, where = self._scope(conn, record_type, repo_id)
            where += [table.c[column] == value for column, value in (matching or {}).items()]
            if ids is None:
                rows = conn.execute(select(table).where(*where).order_by(table.c.id)).all()
            else:
                rows = select_any(
                    conn, lambda chunk: select(table).where(*where, is_in(table.c.id, chunk)).order_by(table.c.id), sorted(set(ids))
                )
            bodies = self.with_resolved(conn, self.render(conn, record_type, rows), resolve)
        return b"[" + b",".join(bodies) + b"]"

    def list_ids(self, record_type: RecordType, *, repo_id: int | None) -> bytes:
        with self.db.read() as conn:
            self.check_repository(conn, record_type, repo_id, writing=False)
            table, where = self._scope(conn, record_type, repo_id)
            return pages.all_ids_json(conn, table, where)


def _lock_version(given) -> int:
    """The client's lock_version: an integer, exactly as the server sent it (not 1.5, "2" or true)."""
    if given is None or given == "":
        raise Conflict("You must provide a lock_version in your request")
    if isinstance(given, bool) or not isinstance(given, int):
        raise Invalid({"lock_version": [f"Must be an integer (you provided '{given}')"]})
    return given
