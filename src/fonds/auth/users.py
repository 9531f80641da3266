"""User accounts: the rules around the generic record service for users — passwords, who may
make an administrator or put a user in a group, self-service, activation.

Route handlers in api/users.py check the route's permission (manage_users, or being the user);
the checks that depend on what is asked for (is_admin, groups) are here."""

from __future__ import annotations

import orjson
from sqlalchemy import select, update

from fonds.auth import generation, groups
from fonds.auth.passwords import hash_password
from fonds.auth.permissions import GLOBAL_REPO_ID, has_permission, permissions_by_repository
from fonds.auth.sessions import end_sessions_of
from fonds.auth.types import normal_username
from fonds.errors import Conflict, Denied, Invalid, NotFound, missing_parameter
from fonds.records.rewrite import rewrite_records
from fonds.records.service import Actor, RecordService
from fonds.storage import records as store

# argon2 copes with any length, but a megabyte "password" is only ever an attack on CPU time.
MAX_PASSWORD_LENGTH = 1024


def checked_password_hash(records: RecordService, password: str | None) -> str:
    """Hash a new password after checking it against the configured rules."""
    if password is None or password == "":
        raise missing_parameter("password")
    shortest = records.settings.password_min_length
    if len(password) < shortest:
        raise Invalid({"password": [f"Must be at least {shortest} characters long"]})
    if len(password) > MAX_PASSWORD_LENGTH:
        raise Invalid({"password": [f"Must be at most {MAX_PASSWORD_LENGTH} characters long"]})
    return hash_password(password)


def _user_row(conn, records: RecordService, user_id: int):
    user_type = records.registry["user"]
    row = store.fetch(conn, conn.info["fonds_tables"][user_type.name], user_id)
    if row is None:
        raise NotFound(user_type.not_found())
    return row


def _is_admin(conn, user_id: int) -> bool:
    administrators = groups.administrators_group(conn)
    return administrators is not None and user_id in groups.member_ids(conn, administrators)


def _check_may_manage(conn, actor: Actor, user_id: int) -> bool:
    """Editing, deactivating or deleting an administrator's account (a new password above all)
    is as good as being one: it needs administer_system, unless it is your own. Returns whether
    the user is an administrator."""
    target_is_admin = _is_admin(conn, user_id)
    if target_is_admin and actor.user_id != user_id and not has_permission(actor.grants, "administer_system", None):
        raise Denied()
    return target_is_admin


def _check_admin_change(actor: Actor, wanted, current: bool) -> None:
    if wanted is not None and bool(wanted) != current and not has_permission(actor.grants, "administer_system", None):
        raise Denied()


def _groups_to_join(conn, records: RecordService, actor: Actor, uris: list[str], *, only_repo: int | None = None) -> list[int]:
    """Group ids named by URIs; each needs manage_repository in its repository."""
    found = []
    for uri in uris:
        parsed = records.registry.parse_uri(uri)
        if parsed is None or parsed.record_type.name != "group":
            raise Invalid({"groups": [f"Not a group URI: {uri}"]})
        if only_repo is not None and parsed.repo_id != only_repo:
            continue  # ArchivesSpace applies only the groups of the repository named
        if not has_permission(actor.grants, "manage_repository", parsed.repo_id):
            raise Denied()
        if store.fetch(conn, conn.info["fonds_tables"]["group"], parsed.record_id, repo_id=parsed.repo_id) is None:
            raise Invalid({"groups": [f"Group {uri} does not exist"]})
        found.append(parsed.record_id)
    return found


def _join(conn, records: RecordService, user_id: int, group_ids: list[int], *, leave: list[int] = (), username: str) -> None:
    changed = [g for g in group_ids if groups.add_member(conn, g, user_id)]
    changed += [g for g in leave if groups.remove_member(conn, g, user_id)]
    if changed:
        now = store.utcnow()
        rewrite_records(conn, records.registry["group"], changed, now=now, username=username)
        rewrite_records(conn, records.registry["user"], [user_id], now=now, username=username)


def _set_password(conn, user_id: int, password_hash: str) -> None:
    users = conn.info["fonds_tables"]["user"]
    conn.execute(update(users).where(users.c.id == user_id).values(password_hash=password_hash))
    end_sessions_of(conn, [user_id])


def create_user(records: RecordService, body: bytes, *, password: str | None, group_uris: list[str], actor: Actor) -> dict:
    user_type = records.registry["user"]
    doc, warnings, _ = records.prepare(user_type, body, creating=True)
    _check_admin_change(actor, doc.get("is_admin"), False)
    password_hash = checked_password_hash(records, password)
    with records.db.write() as conn:
        joining = _groups_to_join(conn, records, actor, group_uris)
        result = records.create_in(conn, user_type, doc, warnings, repo_id=None, actor=actor)
        _set_password(conn, result["id"], password_hash)
        _join(conn, records, result["id"], joining, username=actor.username)
    return result


def update_user(records: RecordService, user_id: int, body: bytes, *, password: str | None, actor: Actor) -> dict:
    user_type = records.registry["user"]
    doc, warnings, lock_version = records.prepare(user_type, body, creating=False)
    password_hash = checked_password_hash(records, password) if password is not None else None
    with records.db.write() as conn:
        row = _user_row(conn, records, user_id)
        target_is_admin = _check_may_manage(conn, actor, user_id)
        _check_admin_change(actor, doc.get("is_admin"), target_is_admin)
        if row.is_system and doc.get("is_active_user") is False:
            raise Conflict("The system administrator cannot be deactivated")
        result = records.update_in(conn, user_type, user_id, doc, warnings, lock_version, repo_id=None, actor=actor)
        generation.bump(conn)  # a cached session holds the username
        if password_hash is not None:
            _set_password(conn, user_id, password_hash)
        elif row.is_active and doc.get("is_active_user") is False:
            end_sessions_of(conn, [user_id])  # as /deactivate does: reactivating must not revive them
    return result


def delete_user(records: RecordService, user_id: int, *, actor: Actor) -> dict:
    with records.db.write() as conn:
        _user_row(conn, records, user_id)
        _check_may_manage(conn, actor, user_id)
        return records.delete_in(conn, records.registry["user"], user_id, repo_id=None, actor=actor)


def change_own_password(records: RecordService, user_id: int, *, password: str | None, actor: Actor) -> dict:
    if actor.user_id != user_id:
        raise Denied()
    password_hash = checked_password_hash(records, password)
    with records.db.write() as conn:
        _user_row(conn, records, user_id)
        _set_password(conn, user_id, password_hash)
    return {"success": "password updated"}


def set_active(records: RecordService, user_id: int, *, active: bool, actor: Actor) -> dict:
    with records.db.write() as conn:
        row = _user_row(conn, records, user_id)
        _check_may_manage(conn, actor, user_id)
        if row.is_system:
            raise Conflict("The system administrator cannot be deactivated")
        if bool(row.is_active) != active:

            def edit(doc: dict) -> None:
                doc["is_active_user"] = active

            rewrite_records(
                conn,
                records.registry["user"],
                [user_id],
                now=store.utcnow(),
                username=actor.username,
                edit=edit,
                columns={"is_active": active},
            )
            if not active:
                end_sessions_of(conn, [user_id])
                groups.ensure_an_administrator_remains(conn)
        return user_document(conn, records, user_id)


def set_groups(records: RecordService, user_id: int, *, group_uris: list[str], remove_groups: bool, repo_id: int, actor: Actor) -> dict:
    """`POST /users/<id>/groups`: join the named groups of one repository (and leave its others)."""
    if not has_permission(actor.grants, "manage_repository", repo_id):
        raise Denied()
    with records.db.write() as conn:
        _user_row(conn, records, user_id)
        joining = _groups_to_join(conn, records, actor, group_uris, only_repo=repo_id)
        current = [group_id for group_id, _ in groups.memberships(conn, [user_id], repo_id).get(user_id, [])]
        leaving = [g for g in current if g not in joining] if remove_groups else []
        _join(conn, records, user_id, joining, leave=leaving, username=actor.username)
        if repo_id == GLOBAL_REPO_ID:
            groups.ensure_an_administrator_remains(conn)
    return {"status": "OK"}


def user_document(conn, records: RecordService, user_id: int, *, only_repo: int | None = None) -> dict:
    """A user's JSON with `permissions` (as login gives it); with `only_repo`, `groups` lists only that repository's."""
    user_type = records.registry["user"]
    doc = orjson.loads(records.render(conn, user_type, [_user_row(conn, records, user_id)])[0])
    if only_repo is not None:
        doc["groups"] = [uri for uri in doc["groups"] if uri.startswith(f"/repositories/{only_repo}/")]
    doc["permissions"] = permissions_of(conn, user_id)
    return doc


def permissions_of(conn, user_id: int) -> dict[str, list[str]]:
    repos = conn.info["fonds_tables"]["repository"]
    repo_ids = conn.execute(select(repos.c.id).where(repos.c.id != GLOBAL_REPO_ID).order_by(repos.c.id)).scalars().all()
    return permissions_by_repository(groups.grants_for(conn, user_id), repo_ids)


def read_user(records: RecordService, user_id: int, *, only_repo: int | None = None) -> dict:
    with records.db.read() as conn:
        return user_document(conn, records, user_id, only_repo=only_repo)


def reset_password(records: RecordService, username: str, password: str) -> None:
    """An operator's reset (`fonds user set-password`): no session needed, lockout lifted."""
    from fonds.auth import throttle

    name = normal_username(username) or username
    password_hash = checked_password_hash(records, password)
    with records.db.write() as conn:
        users = conn.info["fonds_tables"]["user"]
        user_id = conn.execute(select(users.c.id).where(users.c.username == name)).scalar_one_or_none()
        if user_id is None:
            raise NotFound(f"No user named {name!r}")
        _set_password(conn, user_id, password_hash)
        throttle.record_success(conn, throttle.user_key(name))
