"""The record service: create, read, update, delete and list any registered type.

Plain keyword-only functions under thin route handlers. Each write is one transaction that
also appends to the change log; reads serve the stored JSON bytes as they are."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from sqlalchemy import select

from fonds.config import Settings
from fonds.errors import BadRequest, Conflict, Invalid, NotFound
from fonds.records import deletion, pages, refs
from fonds.records.enumeration_usage import ListUsage
from fonds.records.hooks import WriteContext
from fonds.records.registry import RecordType, Registry
from fonds.records.schemas import SchemaSet, load_schema_files
from fonds.records.trees import node_fields
from fonds.records.types.repositories import GLOBAL_REPO_ID
from fonds.records.validation import RecordValidator, check_structure, find_refs
from fonds.records.value_lists import ListCache
from fonds.storage import change_log
from fonds.storage import records as store
from fonds.storage.chunks import select_in
from fonds.storage.db import Database

MISSING_WARNING = "Property was missing"


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
    check_structure(doc)
    return doc


def splice(body: bytes, extra: dict | None) -> bytes:
    """Insert computed fields into stored JSON bytes without parsing them."""
    if not extra:
        return body
    head = orjson.dumps(extra)[:-1]
    return head + (b"," + body[1:] if len(body) > 2 else b"}")


class TreeQueries:
    """Archival-object lookups mixed into the service (kept apart to keep the CRUD core short)."""

    def find_archival_objects(self, *, repo_id: int, ref_ids: list[str], component_ids: list[str], resolve: list[str]) -> bytes:
        record_type = self.registry["archival_object"]
        with self.db.read() as conn:
            self.check_repository(conn, record_type, repo_id, writing=False)
            table = conn.info["fonds_tables"][record_type.name]
            if not ref_ids and not component_ids:
                return b'{"archival_objects":[]}'
            # Select by one list in chunks and filter by the other: both must match, as one query would.
            column, values = (table.c.ref_id, ref_ids) if ref_ids else (table.c.component_id, component_ids)
            rows = select_in(
                conn, lambda chunk: select(table.c.id, table.c.component_id).where(table.c.repo_id == repo_id, column.in_(chunk)), values
            )
            wanted_components = set(component_ids) if ref_ids and component_ids else None
            ids = sorted(row.id for row in rows if wanted_components is None or row.component_id in wanted_components)
            doc = {"archival_objects": [{"ref": record_type.uri(i, repo_id)} for i in ids]}
            wanted = refs.parse_resolve(resolve)
            if wanted:
                refs.attach_resolved(conn, self.registry, self.render, [doc], wanted)
        return orjson.dumps(doc)


class RecordService(TreeQueries):
    def __init__(self, db: Database, registry: Registry, settings: Settings):
        self.db, self.registry, self.settings = db, registry, settings
        self.schemas = SchemaSet(load_schema_files(), {t.name for t in registry})
        self.value_lists = ListCache(db)
        self.list_usage = ListUsage(self.schemas, registry)
        self.validator = RecordValidator(self.schemas, registry.uri_type, self.value_lists)

    # -- writing ---------------------------------------------------------------------------

    def prepare(self, record_type: RecordType, body: bytes, *, creating: bool) -> tuple[dict, dict, object]:
        return self.prepare_doc(record_type, parse_body(body), creating=creating)

    def prepare_doc(self, record_type: RecordType, doc: dict, *, creating: bool) -> tuple[dict, dict, object]:
        given = doc.get("jsonmodel_type")
        if given in (None, "") and creating:
            raise Invalid({"jsonmodel_type": ["Property is required but was missing"]})
        if given not in (None, "") and given != record_type.name:
            raise Invalid({"jsonmodel_type": [f"Must be '{record_type.name}' for this endpoint (you provided '{given}')"]})
        lock_version = doc.pop("lock_version", None)
        schema = self.schemas[record_type.name]
        clean, warnings = self.validator.prepare(
            record_type.name,
            doc,
            aspace_required=tuple(schema.get("x-aspace-required", ())),
            one_of_groups=record_type.minimum,
            strict=self.settings.strict_validation,
        )
        errors = record_type.hooks.check(clean)
        if errors:
            raise Invalid(errors, warnings)
        clean["jsonmodel_type"] = record_type.name
        return clean, warnings, lock_version

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
        table = conn.info["fonds_tables"]["repository"]
        if conn.execute(select(table.c.id).where(table.c.id == repo_id)).scalar_one_or_none() is None:
            raise BadRequest({"repo_id": ["Failed validation -- The Repository must exist"]})
        if writing and repo_id == GLOBAL_REPO_ID and not record_type.allowed_in_global_repository:
            raise BadRequest("The global repository cannot contain archival records")

    def check_repository_exists(self, repo_id: int) -> None:
        with self.db.read() as conn:
            table = conn.info["fonds_tables"]["repository"]
            if conn.execute(select(table.c.id).where(table.c.id == repo_id)).scalar_one_or_none() is None:
                raise BadRequest({"repo_id": ["Failed validation -- The Repository must exist"]})

    def _check_unique(self, conn, record_type: RecordType, columns: dict, record_id: int) -> None:
        table = conn.info["fonds_tables"][record_type.name]
        for key in record_type.unique_keys:
            other = store.find_duplicate(conn, table, {c: columns.get(c) for c in key.columns}, exclude_id=record_id)
            if other is not None:
                extra = {"conflicting_record": [record_type.uri(other)]} if key.report_conflict else {}
                raise Invalid({key.field: [key.message.format(value=columns.get(key.columns[-1]))], **extra})

    def _save(
        self, conn, ctx: WriteContext, doc: dict, warnings: dict, *, links, lock_version: int, audit: dict, expect: int | None, now, op: str
    ) -> None:
        record_type = ctx.record_type
        record_type.hooks.derive(ctx, doc)
        # A field the server derived (a default vocabulary, a resource taken from the parent) is no longer missing.
        for field in [f for f, messages in warnings.items() if messages == [MISSING_WARNING] and doc.get(f)]:
            del warnings[field]
        self._check_unique(conn, record_type, {**ctx.columns, "repo_id": ctx.repo_id}, ctx.record_id)
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
        if not store.store(
            conn, tables[record_type.name], ctx.record_id, json=orjson.dumps(doc), values=values, expect_lock_version=expect
        ):
            raise Conflict("The record you tried to update has been modified since you fetched it.")
        store.replace_links(conn, tables, source_type=record_type.name, source_id=ctx.record_id, links=links, fresh=op == "created")
        change = {"record_type": record_type.name, "record_id": ctx.record_id, "repo_id": ctx.repo_id, "uri": ctx.uri, "op": op, "at": now}
        change_log.append(conn, [change])

    def create(self, record_type: RecordType, body: bytes, *, repo_id: int | None, actor: Actor, options: dict | None = None) -> dict:
        doc, warnings, _ = self.prepare(record_type, body, creating=True)
        with self.db.write() as conn:
            return self.create_in(conn, record_type, doc, warnings, repo_id=repo_id, actor=actor, options=options)

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
        repository_checked: bool = False,
    ) -> dict:
        """Create in the caller's transaction; `record_id` only for records the system keeps at a fixed
        id; `repository_checked`: the caller (a batch) checked the repository in this transaction."""
        if not repository_checked:
            self.check_repository(conn, record_type, repo_id, writing=True)
        now = store.utcnow()
        table = conn.info["fonds_tables"][record_type.name]
        record_id = store.allocate(conn, table, repo_id=repo_id, now=now, username=actor.username, record_id=record_id)
        uri = record_type.uri(record_id, repo_id)
        links = refs.check_refs(conn, self.registry, find_refs(self.schemas, self.schemas[record_type.name], doc), repo_id=repo_id)
        ctx = WriteContext(conn, self.registry, record_type, repo_id, record_id, uri, options=options or {}, actor=actor.username, now=now)
        stamp = store.iso(now)
        audit = dict(
            created=stamp,
            modified=stamp,
            create_time=stamp,
            system_mtime=stamp,
            user_mtime=stamp,
            created_by=actor.username,
            last_modified_by=actor.username,
        )
        self._save(conn, ctx, doc, warnings, links=links, lock_version=0, audit=audit, expect=None, now=now, op="created")
        record_type.hooks.after_save(self, ctx, doc, actor)
        return {
            "status": "Created",
            "id": record_id,
            "lock_version": 0,
            "stale": True if ctx.stale else None,
            "uri": uri,
            "warnings": warnings or [],
        }

    def update(
        self, record_type: RecordType, record_id: int, body: bytes, *, repo_id: int | None, actor: Actor, options: dict | None = None
    ) -> dict:
        doc, warnings, given_lock = self.prepare(record_type, body, creating=False)
        with self.db.write() as conn:
            return self.update_in(conn, record_type, record_id, doc, warnings, given_lock, repo_id=repo_id, actor=actor, options=options)

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
        self.check_repository(conn, record_type, repo_id, writing=False)
        table = conn.info["fonds_tables"][record_type.name]
        row = store.fetch(conn, table, record_id, repo_id=repo_id if record_type.repo_scoped else None, for_update=True)
        if row is None:
            raise NotFound(record_type.not_found())
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

    def delete(self, record_type: RecordType, record_id: int, *, repo_id: int | None, actor: Actor) -> dict:
        with self.db.write() as conn:
            return self.delete_in(conn, record_type, record_id, repo_id=repo_id, actor=actor)

    def delete_in(self, conn, record_type: RecordType, record_id: int, *, repo_id: int | None, actor: Actor) -> dict:
        self.check_repository(conn, record_type, repo_id, writing=False)
        table = conn.info["fonds_tables"][record_type.name]
        row = store.fetch(conn, table, record_id, repo_id=repo_id if record_type.repo_scoped else None, for_update=True)
        if row is None:
            raise NotFound(record_type.not_found())
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
        if rows and tree is not None and tree.node == record_type.name:
            # A node's position and ancestors are computed at read time.
            extras = node_fields.read_extras(conn, self.registry, tree, rows)
        if extras is None:
            return [row.json for row in rows]
        return [splice(row.json, extra) for row, extra in zip(rows, extras)]

    def with_resolved(self, conn, bodies: list[bytes], resolve: list[str]) -> list[bytes]:
        wanted = refs.parse_resolve(resolve)
        if not wanted or not bodies:
            return bodies
        docs = [orjson.loads(body) for body in bodies]
        refs.attach_resolved(conn, self.registry, self.render, docs, wanted)
        return [orjson.dumps(doc) for doc in docs]

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
                rows = select_in(
                    conn, lambda chunk: select(table).where(*where, table.c.id.in_(chunk)).order_by(table.c.id), sorted(set(ids))
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
