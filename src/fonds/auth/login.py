"""Checking a password and opening a session."""

from __future__ import annotations

import orjson
from sqlalchemy import select

from fonds.auth.passwords import verify_password
from fonds.auth.permissions import permissions_by_repository
from fonds.auth.sessions import open_session
from fonds.errors import LoginFailed
from fonds.records.hooks import GLOBAL_REPO_CODE


def login(db, registry, settings, *, username: str, password: str, expiring: bool) -> dict:
    users, repos = db.tables["user"], db.tables["repository"]
    with db.read() as conn:
        user = conn.execute(select(users).where(users.c.username == username)).one_or_none()
    # Verify even for unknown users so both failures take the same time.
    valid = verify_password(user.password_hash if user else None, password)
    if user is None or not valid or not user.is_active:
        raise LoginFailed()
    with db.write() as conn:
        token = open_session(conn, db.tables, user_id=user.id, expiring=expiring)
        repo_ids = conn.execute(select(repos.c.id).where(repos.c.repo_code != GLOBAL_REPO_CODE).order_by(repos.c.id)).scalars().all()
    body = orjson.loads(user.json)
    body["permissions"] = permissions_by_repository(user, [f"/repositories/{i}" for i in repo_ids])
    response = {"session": token, "user": body}
    if not expiring:
        response["expire_after_seconds"] = settings.session_nonexpiring_seconds
    return response
