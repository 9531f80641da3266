"""Users and groups as record types: their declarations and hooks. Auth builds on the record
layer; `fonds.model` adds these `TYPES` to the record layer's to build the complete registry."""

from __future__ import annotations

import re

from sqlalchemy import Boolean

from fonds.auth import groups
from fonds.auth.permissions import ADMINISTRATORS, GLOBAL_CODES, PERMISSION_CODES, STANDARD_GROUPS
from fonds.errors import Denied, Invalid
from fonds.records.hooks import Hooks
from fonds.records.registry import Permissions, RecordType, RequiredOneOf, Scope, UniqueKey, text_column
from fonds.records.types.repositories import GLOBAL_REPO_ID
from fonds.storage.tables import ColumnSpec

USERNAME = re.compile(r"^[a-z0-9\-_. @]+$")
# Computed at read time from group membership; never stored in a user's JSON.
USER_READ_FIELDS = ("is_admin", "groups", "permissions")


def normal_username(name: str) -> str | None:
    """The stored form of a username (ArchivesSpace: trimmed, lower-cased), None if not allowed."""
    normal = name.strip().lower()
    return normal if USERNAME.match(normal) and "  " not in normal else None


class UserHooks(Hooks):
    read_fields = USER_READ_FIELDS

    def check(self, doc):
        if isinstance(doc.get("username"), str) and normal_username(doc["username"]) is None:
            return {"username": ["Invalid username: use letters, digits, '-', '_', '.', '@' and single spaces"]}
        return {}

    def can_delete(self, row) -> bool:
        return not row.is_system

    def derive(self, ctx, doc):
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
                ctx.rewrite_side_effect("group", [administrators])

    def after_save(self, service, ctx, doc, actor):
        if ctx.existing is not None:
            groups.ensure_an_administrator_remains(ctx.conn)

    def on_delete(self, conn, rows, deleted):
        from fonds.auth import sessions

        ids = [row.id for row in rows]
        groups.forget_users(conn, ids)
        sessions.end_sessions_of(conn, ids)
        groups.ensure_an_administrator_remains(conn)

    def read_extras(self, conn, rows):
        administrators = groups.administrators_group(conn)
        found = groups.memberships(conn, [row.id for row in rows])
        return [
            {
                "is_admin": any(group_id == administrators for group_id, _ in found.get(row.id, [])),
                "groups": [f"/repositories/{repo_id}/groups/{group_id}" for group_id, repo_id in found.get(row.id, [])],
            }
            for row in rows
        ]


def group_code_key(code: str) -> str:
    """Group codes are unique per repository whatever their case (ArchivesSpace)."""
    return code.strip().lower()


def _is_administrators(repo_id, code_key) -> bool:
    return repo_id == GLOBAL_REPO_ID and code_key == ADMINISTRATORS


class GroupHooks(Hooks):
    read_fields = ("member_usernames",)

    def check(self, doc):
        unknown = [code for code in doc.get("grants_permissions", []) if code not in PERMISSION_CODES]
        return {"grants_permissions": [f"Unknown permission '{code}'" for code in unknown]} if unknown else {}

    def can_delete(self, row) -> bool:
        return not _is_administrators(row.repo_id, row.group_code_key)

    def derive(self, ctx, doc):
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
            ctx.rewrite_side_effect("user", changed)

    def after_save(self, service, ctx, doc, actor):
        if ctx.existing is not None and _is_administrators(ctx.repo_id, ctx.columns["group_code_key"]):
            groups.ensure_an_administrator_remains(ctx.conn)

    def seed_repository(self, service, ctx, repository, actor):
        """Every new repository gets ArchivesSpace's standard groups."""
        for code, description, grants in STANDARD_GROUPS:
            group = {
                "jsonmodel_type": "group",
                "group_code": code,
                "description": description.format(code=repository["repo_code"]),
                "grants_permissions": list(grants),
            }
            service.create_in(ctx.conn, ctx.registry["group"], group, {}, repo_id=ctx.record_id, actor=actor)

    def on_delete(self, conn, rows, deleted):
        groups.forget_groups(conn, [row.id for row in rows])

    def read_extras(self, conn, rows):
        found = groups.member_usernames(conn, [row.id for row in rows])
        return [{"member_usernames": found.get(row.id, [])} for row in rows]


TYPES = (
    RecordType(
        name="user",
        path="users",
        scope=Scope.GLOBAL,
        model_name="User",
        permissions=Permissions(read="manage_users", create="manage_users", update="manage_users", delete="manage_users"),
        minimum=(RequiredOneOf(("name", "title")),),
        columns=(
            text_column("username"),
            text_column("password_hash"),
            ColumnSpec("is_active", Boolean()),
            ColumnSpec("is_system", Boolean()),
        ),
        unique_keys=(UniqueKey(("username",), "username", "Username '{value}' is already in use"),),
        hooks=UserHooks(),
        missing_message="User wasn't found",
        # Create, read, update and delete take passwords and check self-service and
        # administrator rights: api/users.py.
        actions=("list",),
    ),
    RecordType(
        name="group",
        path="groups",
        scope=Scope.REPOSITORY,
        model_name="Group",
        permissions=Permissions(
            read="manage_repository", create="manage_repository", update="manage_repository", delete="manage_repository"
        ),
        minimum=(RequiredOneOf(("group_code",)),),
        columns=(text_column("group_code_key"),),
        unique_keys=(UniqueKey(("repo_id", "group_code_key"), "group_code", "Group code must be unique within a repository"),),
        hooks=GroupHooks(),
        # Listing, reading and updating take ArchivesSpace's group_code / with_members: api/groups.py.
        actions=("create", "delete"),
        allowed_in_global_repository=True,
    ),
)
