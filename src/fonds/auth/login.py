"""Checking a password and opening a session, behind the failed-login throttle."""

from __future__ import annotations

from sqlalchemy import select, update

from fonds.auth import throttle
from fonds.auth.passwords import hash_password, needs_rehash, verify_password
from fonds.auth.sessions import open_session, purge_expired
from fonds.auth.users import user_document
from fonds.errors import LoginFailed


def login(records, *, username: str, password: str, expiring: bool, address: str | None) -> dict:
    db, settings = records.db, records.settings
    keys = [throttle.user_key(username), *filter(None, [throttle.address_key(address)])]
    throttle.check(db, keys)
    users = db.tables["user"]
    with db.read() as conn:
        user = conn.execute(select(users.c.id, users.c.password_hash, users.c.is_active).where(users.c.username == username)).one_or_none()
    # Verify even for unknown users so both failures take the same time.
    valid = verify_password(user.password_hash if user else None, password)
    if user is None or not valid or not user.is_active:
        throttle.record_failure(db, settings, keys)
        raise LoginFailed()
    # Computed before the write transaction: SQLite writers queue, and hashing takes a while.
    new_hash = hash_password(password) if needs_rehash(user.password_hash) else None
    with db.write() as conn:
        if new_hash is not None:
            conn.execute(update(users).where(users.c.id == user.id).values(password_hash=new_hash))
        throttle.record_success(conn, throttle.user_key(username))
        # Logins are rare next to requests: a good moment to drop sessions nobody can use any more.
        purge_expired(conn, settings)
        token = open_session(conn, db.tables, user_id=user.id, expiring=expiring)
        body = user_document(conn, records, user.id)
    response = {"session": token, "user": body}
    if not expiring:
        response["expire_after_seconds"] = settings.session_nonexpiring_seconds
    return response
