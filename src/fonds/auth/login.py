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
    user_key, address_key = throttle.user_key(username), throttle.address_key(address)
    keys = [user_key, *filter(None, [address_key])]
    throttle.reserve(db, settings, keys)
    users = db.tables["user"]
    with db.read() as conn:
        user = conn.execute(select(users.c.id, users.c.password_hash, users.c.is_active).where(users.c.username == username)).one_or_none()
    # Verify even for unknown users so both failures take the same time.
    valid = verify_password(user.password_hash if user else None, password)
    if user is None or not valid or not user.is_active:
        raise LoginFailed()  # already counted by `reserve`
    # Computed before the write transaction: SQLite writers queue, and hashing takes a while.
    new_hash = hash_password(password) if needs_rehash(user.password_hash) else None
    with db.write() as conn:
        if new_hash is not None:
            conn.execute(update(users).where(users.c.id == user.id).values(password_hash=new_hash))
        throttle.record_success(conn, user_key)
        if address_key:
            throttle.refund(conn, settings, address_key)
        # Logins are rare next to requests: a good moment to drop sessions nobody can use any more.
        purge_expired(conn, settings)
        token = open_session(conn, db.tables, user_id=user.id, expiring=expiring)
        body = user_document(conn, records, user.id)
    response = {"session": token, "user": body}
    if not expiring:
        response["expire_after_seconds"] = settings.session_nonexpiring_seconds
    return response
