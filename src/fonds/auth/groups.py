"""Group membership and grants: the `group_member` and `group_permission` rows that permission
checks read. Groups' and users' JSON never hold these; they are spliced in at read time, so a
membership has exactly one home."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy import and_, delete, func, insert, select

from fonds.auth import generation
from fonds.auth.permissions import ADMINISTRATORS, GLOBAL_REPO_ID, Grants
from fonds.errors import Conflict
from fonds.storage.chunks import execute_in, select_in


def _tables(conn):
    tables = conn.info["fonds_tables"]
    return tables["group"], tables["group_member"], tables["group_permission"], tables["user"]


def grants_for(conn, user_id: int) -> Grants:
    """Every (repository id, permission) the user's groups grant."""
    groups, members, permissions, _ = _tables(conn)
    rows = conn.execute(
        select(groups.c.repo_id, permissions.c.permission)
        .select_from(
            members.join(groups, groups.c.id == members.c.group_id).join(permissions, permissions.c.group_id == members.c.group_id)
        )
        .where(members.c.user_id == user_id)
    ).all()
    return frozenset((row.repo_id, row.permission) for row in rows)


def administrators_group(conn) -> int | None:
    groups = _tables(conn)[0]
    return conn.execute(
        select(groups.c.id).where(groups.c.repo_id == GLOBAL_REPO_ID, groups.c.group_code_key == ADMINISTRATORS)
    ).scalar_one_or_none()


def set_grants(conn, group_id: int, codes: Iterable[str]) -> None:
    permissions = _tables(conn)[2]
    conn.execute(delete(permissions).where(permissions.c.group_id == group_id))
    generation.bump(conn)
    rows = [{"group_id": group_id, "permission": code} for code in sorted(set(codes))]
    if rows:
        conn.execute(insert(permissions), rows)


def member_ids(conn, group_id: int) -> set[int]:
    members = _tables(conn)[1]
    return set(conn.execute(select(members.c.user_id).where(members.c.group_id == group_id)).scalars())


def set_members(conn, group_id: int, user_ids: Iterable[int]) -> set[int]:
    """Make `user_ids` the group's members; returns the users whose membership changed."""
    members = _tables(conn)[1]
    wanted, current = set(user_ids), member_ids(conn, group_id)
    leaving, joining = current - wanted, wanted - current
    if leaving or joining:
        generation.bump(conn)
    execute_in(conn, lambda chunk: delete(members).where(members.c.group_id == group_id, members.c.user_id.in_(chunk)), sorted(leaving))
    if joining:
        conn.execute(insert(members), [{"group_id": group_id, "user_id": user_id} for user_id in sorted(joining)])
    return leaving | joining


def add_member(conn, group_id: int, user_id: int) -> bool:
    return bool(set_members(conn, group_id, member_ids(conn, group_id) | {user_id}))


def remove_member(conn, group_id: int, user_id: int) -> bool:
    return bool(set_members(conn, group_id, member_ids(conn, group_id) - {user_id}))


def forget_groups(conn, group_ids: list[int]) -> None:
    _, members, permissions, _ = _tables(conn)
    execute_in(conn, lambda chunk: delete(members).where(members.c.group_id.in_(chunk)), group_ids)
    execute_in(conn, lambda chunk: delete(permissions).where(permissions.c.group_id.in_(chunk)), group_ids)
    generation.bump(conn)


def forget_users(conn, user_ids: list[int]) -> set[int]:
    """Drop the users' memberships; returns the groups that lost a member."""
    members = _tables(conn)[1]
    affected = {
        row.group_id for row in select_in(conn, lambda chunk: select(members.c.group_id).where(members.c.user_id.in_(chunk)), user_ids)
    }
    execute_in(conn, lambda chunk: delete(members).where(members.c.user_id.in_(chunk)), user_ids)
    generation.bump(conn)
    return affected


def user_ids_by_username(conn, usernames: Iterable[str]) -> dict[str, int]:
    users = _tables(conn)[3]
    return dict(
        select_in(conn, lambda chunk: select(users.c.username, users.c.id).where(users.c.username.in_(chunk)), sorted(set(usernames)))
    )


def member_usernames(conn, group_ids: list[int]) -> dict[int, list[str]]:
    _, members, _, users = _tables(conn)
    found: dict[int, list[str]] = defaultdict(list)
    rows = select_in(
        conn,
        lambda chunk: (
            select(members.c.group_id, users.c.username)
            .join(users, users.c.id == members.c.user_id)
            .where(members.c.group_id.in_(chunk))
            .order_by(users.c.username)
        ),
        sorted(set(group_ids)),
    )
    for row in rows:
        found[row.group_id].append(row.username)
    return found


def memberships(conn, user_ids: list[int], repo_id: int | None = None) -> dict[int, list[tuple[int, int]]]:
    """user id -> [(group id, group's repository id)], optionally only groups of one repository."""
    groups, members, _, _ = _tables(conn)
    scope = [groups.c.repo_id == repo_id] if repo_id is not None else []
    found: dict[int, list[tuple[int, int]]] = defaultdict(list)
    rows = select_in(
        conn,
        lambda chunk: (
            select(members.c.user_id, groups.c.id, groups.c.repo_id)
            .join(groups, groups.c.id == members.c.group_id)
            .where(members.c.user_id.in_(chunk), *scope)
            .order_by(groups.c.id)
        ),
        sorted(set(user_ids)),
    )
    for row in rows:
        found[row.user_id].append((row.id, row.repo_id))
    return found


def ensure_an_administrator_remains(conn) -> None:
    """Refuse a change that would leave no active user holding every permission."""
    group_id = administrators_group(conn)
    if group_id is None:
        return
    _, members, _, users = _tables(conn)
    active = conn.execute(
        select(func.count())
        .select_from(members.join(users, and_(users.c.id == members.c.user_id, users.c.is_active.is_(True))))
        .where(members.c.group_id == group_id)
    ).scalar_one()
    if active == 0:
        raise Conflict("At least one active administrator must remain")
