"""Per-type behaviour that really differs: derived fields, query columns, tree positions.

Each record type gets one `Hooks` object in the registry; the generic record service calls
these and never branches on type names.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from fonds.errors import Denied, FieldErrors, Invalid

if TYPE_CHECKING:
    import datetime

    from sqlalchemy import Connection, Row

    from fonds.records.registry import RecordType, Registry

DEFAULT_VOCABULARY = "/vocabularies/1"
IDENTIFIER_PARTS = ("id_0", "id_1", "id_2", "id_3")


@dataclass
class WriteContext:
    """What a hook may know and change while one record is written."""

    conn: Connection
    registry: Registry
    record_type: RecordType
    repo_id: int | None
    record_id: int
    uri: str
    existing: Row | None = None
    existing_doc: dict | None = None
    stale: bool = False
    columns: dict[str, Any] = field(default_factory=dict)
    # Request options a type understands (a group's `with_members`).
    options: dict[str, Any] = field(default_factory=dict)
    # Who writes and when: hooks that rewrite other records too (a moved subtree) stamp them alike.
    actor: str = ""
    now: datetime.datetime | None = None

    @property
    def tables(self):
        return self.conn.info["fonds_tables"]


class Hooks:
    # A repository's records go when it goes.
    contains_repository_records = False

    def list_filter(self, table):
        """A WHERE clause hiding rows from listings (None: show all)."""
        return None

    def can_delete(self, row) -> bool:
        return True

    def hidden(self, row) -> bool:
        """A record the system keeps for itself: not readable, changeable or deletable over HTTP."""
        return False

    def check(self, doc: dict) -> FieldErrors:
        """Rules a JSON Schema cannot express; returns field errors."""
        return {}

    def derive(self, ctx: WriteContext, doc: dict) -> None:
        """Fill server-computed fields and `ctx.columns` before the record is stored; may also
        write the type's own side tables (the row exists already, in the same transaction)."""

    def after_save(self, service, ctx: WriteContext, doc: dict, actor) -> None:
        """Checks and companion records once the row is stored (`ctx.existing` is None on create):
        a repository's standard groups, the rule that an administrator remains."""

    def on_delete(self, conn: Connection, rows: list[Row], deleted: set[tuple[str, int]]) -> None:
        """Called with the rows of this type about to be deleted (all of `deleted` goes too)."""

    def read_extras(self, conn: Connection, rows: list[Row]) -> list[dict] | None:
        """Fields computed at read time and spliced into the stored JSON (None: nothing)."""
        return None


def _identifier(doc: dict) -> str | None:
    if not doc.get("id_0"):
        return None
    return orjson.dumps([doc.get(part) for part in IDENTIFIER_PARTS]).decode()


def identifier_errors(doc: dict) -> FieldErrors:
    errors: FieldErrors = {}
    for part in IDENTIFIER_PARTS:
        if isinstance(doc.get(part), str) and len(doc[part]) > 50:
            errors.setdefault(part, []).append("Max length is 50 characters")
    parts = [doc.get(part) for part in IDENTIFIER_PARTS]
    while parts and not parts[-1]:
        parts.pop()
    if any(not part for part in parts):
        errors.setdefault("identifier", []).append("must not contain blank entries")
    return errors


class AccessionHooks(Hooks):
    def check(self, doc):
        return identifier_errors(doc)

    def derive(self, ctx, doc):
        ids = [doc[p] for p in IDENTIFIER_PARTS if doc.get(p)]
        doc["display_string"] = doc.get("title") or "-".join(ids)
        ctx.columns["identifier"] = _identifier(doc)


class ResourceHooks(Hooks):
    def check(self, doc):
        return identifier_errors(doc)

    def derive(self, ctx, doc):
        doc["tree"] = {"ref": f"{ctx.uri}/tree"}
        ctx.columns.update(identifier=_identifier(doc), ead_id=doc.get("ead_id"), level=doc.get("level"))


def _date_label(date: dict) -> str:
    if date.get("expression"):
        text = date["expression"]
    elif date.get("begin") and date.get("end"):
        text = f"{date['begin']} - {date['end']}"
    else:
        text = date.get("begin", "")
    return f"bulk: {text}" if date.get("date_type") == "bulk" else text


def archival_object_display_string(doc: dict) -> str:
    dates = ", ".join(_date_label(d) for d in doc.get("dates", []))
    title = doc.get("title", "")
    return ", ".join(part for part in (title, dates) if part) if title and dates else (title or dates)


class ArchivalObjectHooks(Hooks):
    def derive(self, ctx, doc):
        from fonds.records import tree

        if ctx.existing is not None:
            if doc.get("ref_id") != ctx.existing.ref_id:
                ctx.stale = True
            doc["ref_id"] = ctx.existing.ref_id  # immutable once set, as ArchivesSpace
        elif not doc.get("ref_id"):
            doc["ref_id"] = uuid.uuid4().hex
            ctx.stale = True
        doc["display_string"] = archival_object_display_string(doc)
        tree.place(ctx, doc)
        ctx.columns.update(ref_id=doc["ref_id"], component_id=doc.get("component_id"), level=doc.get("level"))

    def on_delete(self, conn, rows, deleted):
        from fonds.records import tree

        tree.close_gaps(conn, rows, deleted)

    def read_extras(self, conn, rows):
        from fonds.records import tree

        return tree.read_extras(conn, rows)


def _sha(*parts) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()


class SubjectHooks(Hooks):
    def derive(self, ctx, doc):
        vocabulary = doc.setdefault("vocabulary", DEFAULT_VOCABULARY)
        terms = doc.get("terms", [])
        for term in terms:
            term.setdefault("vocabulary", vocabulary)
        if terms:
            doc["title"] = " -- ".join(term["term"] for term in terms)
        doc["display_string"] = doc["title"]
        source = doc.get("source")
        term_key = [(t["term"], t["term_type"]) for t in terms] or doc["title"]
        ctx.columns["terms_key"] = _sha(vocabulary, source, term_key)
        ctx.columns["authority_key"] = _sha(vocabulary, source, doc["authority_id"]) if doc.get("authority_id") else None


GLOBAL_REPO_CODE = "_archivesspace"
# Created first, so always /repositories/1 (as in ArchivesSpace).
GLOBAL_REPO_ID = 1


class RepositoryHooks(Hooks):
    contains_repository_records = True

    # The global repository is known by its id: whatever its code says, it is not an ordinary one.
    def list_filter(self, table):
        return table.c.id != GLOBAL_REPO_ID

    def can_delete(self, row) -> bool:
        return row.id != GLOBAL_REPO_ID

    def hidden(self, row) -> bool:
        return row.id == GLOBAL_REPO_ID

    def derive(self, ctx, doc):
        doc.setdefault("name", doc.get("title"))
        doc["display_string"] = f"{doc['name']} ({doc['repo_code']})"
        ctx.columns["repo_code"] = doc["repo_code"]

    def after_save(self, service, ctx, doc, actor):
        from fonds.auth.permissions import STANDARD_GROUPS

        if ctx.existing is not None or ctx.record_id == GLOBAL_REPO_ID:
            return
        for code, description, grants in STANDARD_GROUPS:
            group = {
                "jsonmodel_type": "group",
                "group_code": code,
                "description": description.format(code=doc["repo_code"]),
                "grants_permissions": list(grants),
            }
            service.create_in(ctx.conn, ctx.registry["group"], group, {}, repo_id=ctx.record_id, actor=actor)


class TopContainerHooks(Hooks):
    def derive(self, ctx, doc):
        doc.setdefault("indicator", doc.get("title"))
        kind = (doc.get("type") or "").capitalize()
        barcode = f" [Barcode: {doc['barcode']}]" if doc.get("barcode") else ""
        label = " ".join(part for part in (kind, doc["indicator"]) if part)
        doc["display_string"] = label + barcode
        doc["long_display_string"] = label + barcode
        ctx.columns.update(barcode=doc.get("barcode"), indicator=doc["indicator"])


class LocationProfileHooks(Hooks):
    def derive(self, ctx, doc):
        doc.setdefault("name", doc.get("title"))
        dims = [doc.get(k) for k in ("depth", "height", "width")]
        if all(dims):
            units = doc.get("dimension_units", "")
            doc["display_string"] = f"{doc['name']} [{dims[0]}d, {dims[1]}h, {dims[2]}w {units}]".replace(" ]", "]")
        else:
            doc["display_string"] = doc["name"]
        ctx.columns["name"] = doc["name"]


class VocabularyHooks(Hooks):
    def can_delete(self, row) -> bool:
        return row.ref_id != "global"

    def derive(self, ctx, doc):
        doc.setdefault("name", doc.get("title"))
        ctx.columns["ref_id"] = doc["ref_id"]


USERNAME = re.compile(r"^[a-z0-9\-_. @]+$")
# Computed at read time from group membership; never stored in a user's JSON.
USER_READ_FIELDS = ("is_admin", "groups", "permissions")


def normal_username(name: str) -> str | None:
    """The stored form of a username (ArchivesSpace: trimmed, lower-cased), None if not allowed."""
    normal = name.strip().lower()
    return normal if USERNAME.match(normal) and "  " not in normal else None


class UserHooks(Hooks):
    def check(self, doc):
        if isinstance(doc.get("username"), str) and normal_username(doc["username"]) is None:
            return {"username": ["Invalid username: use letters, digits, '-', '_', '.', '@' and single spaces"]}
        return {}

    def can_delete(self, row) -> bool:
        return not row.is_system

    def derive(self, ctx, doc):
        from fonds.auth import groups

        wants_admin = doc.get("is_admin")
        for computed in USER_READ_FIELDS:
            doc.pop(computed, None)
        doc["username"] = normal_username(doc["username"])
        doc.setdefault("name", doc.get("title"))
        doc.setdefault("is_active_user", True)
        doc["source"] = "local"
        system = bool((ctx.existing_doc or doc).get("is_system_user"))
        doc.pop("is_system_user", None)
        if system:
            doc["is_system_user"] = True
        ctx.columns.update(username=doc["username"], is_active=doc["is_active_user"], is_system=system)
        # On update, leaving is_admin out keeps the user's status: only an explicit value changes it.
        if wants_admin is not None:
            administrators = groups.administrators_group(ctx.conn)
            change = groups.add_member if wants_admin else groups.remove_member
            if administrators is not None and change(ctx.conn, administrators, ctx.record_id):
                _rewrite_side_effect(ctx, "group", [administrators])

    def after_save(self, service, ctx, doc, actor):
        from fonds.auth import groups

        if ctx.existing is not None:
            groups.ensure_an_administrator_remains(ctx.conn)

    def on_delete(self, conn, rows, deleted):
        from fonds.auth import groups, sessions

        ids = [row.id for row in rows]
        groups.forget_users(conn, ids)
        sessions.end_sessions_of(conn, ids)
        groups.ensure_an_administrator_remains(conn)

    def read_extras(self, conn, rows):
        from fonds.auth import groups

        administrators = groups.administrators_group(conn)
        found = groups.memberships(conn, [row.id for row in rows])
        return [
            {
                "is_admin": any(group_id == administrators for group_id, _ in found.get(row.id, [])),
                "groups": [f"/repositories/{repo_id}/groups/{group_id}" for group_id, repo_id in found.get(row.id, [])],
            }
            for row in rows
        ]


def _rewrite_side_effect(ctx, type_name: str, ids) -> None:
    """Records whose read form changed through this write get a new lock_version and a change-log row."""
    from fonds.records.rewrite import rewrite_records

    ids = [i for i in ids if (type_name, i) != (ctx.record_type.name, ctx.record_id)]
    if ids:
        rewrite_records(ctx.conn, ctx.registry[type_name], ids, now=ctx.now, username=ctx.actor)


def group_code_key(code: str) -> str:
    """Group codes are unique per repository whatever their case (ArchivesSpace)."""
    return code.strip().lower()


class GroupHooks(Hooks):
    def check(self, doc):
        from fonds.auth.permissions import PERMISSION_CODES

        unknown = [code for code in doc.get("grants_permissions", []) if code not in PERMISSION_CODES]
        return {"grants_permissions": [f"Unknown permission '{code}'" for code in unknown]} if unknown else {}

    def can_delete(self, row) -> bool:
        return not _is_administrators(row.repo_id, row.group_code_key)

    def derive(self, ctx, doc):
        from fonds.auth import groups
        from fonds.auth.permissions import GLOBAL_CODES, PERMISSION_CODES

        code_key = group_code_key(doc["group_code"])
        if (
            ctx.existing is not None
            and _is_administrators(ctx.repo_id, ctx.existing.group_code_key)
            and code_key != ctx.existing.group_code_key
        ):
            raise Invalid({"group_code": ["The administrators group cannot be renamed"]})
        if _is_administrators(ctx.repo_id, code_key):
            doc["grants_permissions"] = sorted(PERMISSION_CODES)  # it holds everything, always
        grants = doc.setdefault("grants_permissions", [])
        if ctx.repo_id != GLOBAL_REPO_ID and set(grants) & GLOBAL_CODES:
            # Only groups of the global repository grant global permissions (ArchivesSpace: 403).
            raise Denied()
        doc.setdefault("description", "")
        members = doc.pop("member_usernames", None) or []
        ctx.columns["group_code_key"] = code_key
        groups.set_grants(ctx.conn, ctx.record_id, grants)
        if ctx.existing is None or ctx.options.get("with_members", True):
            names = [normal_username(name) or name for name in members]
            ids = groups.user_ids_by_username(ctx.conn, names)
            missing = [name for name in dict.fromkeys(names) if name not in ids]
            if missing:
                raise Invalid({"member_usernames": [f"User {name} does not exist" for name in missing]})
            changed = groups.set_members(ctx.conn, ctx.record_id, ids.values())
            _rewrite_side_effect(ctx, "user", changed)

    def after_save(self, service, ctx, doc, actor):
        from fonds.auth import groups

        if ctx.existing is not None and _is_administrators(ctx.repo_id, ctx.columns["group_code_key"]):
            groups.ensure_an_administrator_remains(ctx.conn)

    def on_delete(self, conn, rows, deleted):
        from fonds.auth import groups

        groups.forget_groups(conn, [row.id for row in rows])

    def read_extras(self, conn, rows):
        from fonds.auth import groups

        found = groups.member_usernames(conn, [row.id for row in rows])
        return [{"member_usernames": found.get(row.id, [])} for row in rows]


def _is_administrators(repo_id, code_key) -> bool:
    from fonds.auth.permissions import ADMINISTRATORS

    return repo_id == GLOBAL_REPO_ID and code_key == ADMINISTRATORS
