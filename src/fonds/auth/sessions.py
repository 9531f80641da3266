"""Sessions: random tokens handed to the client, stored only as SHA-256 hashes."""

from __future__ import annotations

import datetime
import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from sqlalchemy import and_, delete, insert, or_, select, update

from fonds.auth import generation
from fonds.auth.groups import grants_for
from fonds.auth.permissions import Grants
from fonds.config import Settings
from fonds.errors import SessionGone
from fonds.storage import records as store
from fonds.storage.chunks import execute_in
from fonds.storage.db import Database

# Activity is written at most this often per session, not on every request.
TOUCH_INTERVAL = datetime.timedelta(seconds=30)


@dataclass(frozen=True)
class SessionUser:
    session_id: int
    user_id: int
    username: str
    grants: Grants


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def open_session(conn, tables, *, user_id: int, expiring: bool) -> str:
    token = secrets.token_hex(32)
    now = store.utcnow()
    conn.execute(
        insert(tables["session"]).values(token_hash=token_hash(token), user_id=user_id, expiring=expiring, created_at=now, last_used_at=now)
    )
    return token


def idle_limit(settings: Settings, expiring: bool) -> datetime.timedelta:
    return datetime.timedelta(seconds=settings.session_expire_seconds if expiring else settings.session_nonexpiring_seconds)


class SessionCache:
    """Resolved sessions by token hash, so a request costs one read of the auth generation
    instead of two queries. An entry serves only while the generation it was read at is still
    current (logout, password change, deactivation, membership and grant changes bump it, on
    whichever worker they happen), for at most `ttl` seconds, and while no activity touch is due."""

    def __init__(self, max_entries: int = 10_000, ttl: float = 10.0):
        self.max_entries, self.ttl = max_entries, ttl
        self._entries: OrderedDict[str, _Cached] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, generation: int) -> _Cached | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.generation != generation or time.monotonic() - entry.cached_at > self.ttl:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry

    def peek(self, key: str) -> _Cached | None:
        """The entry while within its TTL, its generation not yet compared (the caller reads the
        current generation in its own statement and compares `entry.generation`)."""
        entry = self._entries.get(key)
        if entry is None or time.monotonic() - entry.cached_at > self.ttl:
            return None
        return entry

    def put(self, key: str, entry: _Cached) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class _Cached:
    user: SessionUser
    generation: int
    expiring: bool
    last_used_at: datetime.datetime
    cached_at: float


def resolve_session(db: Database, settings: Settings, cache: SessionCache, token: str) -> SessionUser:
    """The user behind a token, or 412 (SESSION_GONE / SESSION_EXPIRED). Inside a request's read
    transaction (`db.read()` is re-entrant) this adds one query when the cache holds the token."""
    key = token_hash(token)
    with db.read() as conn:
        current = generation.current(conn)
        entry = cache.get(key, current)
        now = store.utcnow()
        if entry is not None and now - entry.last_used_at <= min(TOUCH_INTERVAL, idle_limit(settings, entry.expiring)):
            return entry.user
        row = _session_row(conn, key)
        grants = grants_for(conn, row.user_id) if row is not None else frozenset()
    if row is None or not row.is_active:
        raise SessionGone("SESSION_GONE", "No session found for the token given")
    sessions = db.tables["session"]
    idle = now - row.last_used_at
    if idle > idle_limit(settings, row.expiring):
        with db.write() as conn:
            conn.execute(delete(sessions).where(sessions.c.id == row.id))
        raise SessionGone("SESSION_EXPIRED", "Session timed out")
    last_used = row.last_used_at
    if idle > TOUCH_INTERVAL:
        # Skipped while a long write (deleting a 100,000-component resource) holds SQLite's lock:
        # a read must not wait for it, and the next request touches the session instead.
        with db.write_if_free() as conn:
            if conn is not None:
                conn.execute(update(sessions).where(sessions.c.id == row.id).values(last_used_at=now))
                last_used = now
    user = SessionUser(row.id, row.user_id, row.username, grants)
    cache.put(key, _Cached(user, current, row.expiring, last_used, time.monotonic()))
    return user


def cached_user(settings: Settings, cache: SessionCache, token: str) -> tuple[SessionUser, int] | None:
    """The user behind `token` and the auth generation it was read at, when the cache may serve
    it without reading the session row (within the TTL, no activity touch due): the caller must
    then read the current generation in its own statement and use the user only if they match.
    None: take `resolve_session`."""
    entry = cache.peek(token_hash(token))
    if entry is None or store.utcnow() - entry.last_used_at > min(TOUCH_INTERVAL, idle_limit(settings, entry.expiring)):
        return None
    return entry.user, entry.generation


def _session_row(conn, key: str):
    tables = conn.info["fonds_tables"]
    sessions, users = tables["session"], tables["user"]
    return conn.execute(
        select(
            sessions.c.id,
            sessions.c.expiring,
            sessions.c.last_used_at,
            users.c.id.label("user_id"),
            users.c.username,
            users.c.is_active,
        )
        .join(users, users.c.id == sessions.c.user_id)
        .where(sessions.c.token_hash == key)
    ).one_or_none()


def end_session(db: Database, token: str) -> bool:
    sessions = db.tables["session"]
    with db.write() as conn:
        ended = conn.execute(delete(sessions).where(sessions.c.token_hash == token_hash(token))).rowcount > 0
        if ended:
            generation.bump(conn)
        return ended


def end_sessions_of(conn, user_ids: list[int]) -> None:
    """Log the users out everywhere (password changed, deactivated, deleted)."""
    sessions = conn.info["fonds_tables"]["session"]
    execute_in(conn, lambda chunk: delete(sessions).where(sessions.c.user_id.in_(chunk)), user_ids)
    generation.bump(conn)


def purge_expired(conn, settings: Settings) -> int:
    """Delete sessions idle past their limit; returns how many went."""
    sessions = conn.info["fonds_tables"]["session"]
    now = store.utcnow()
    expired = or_(
        and_(sessions.c.expiring.is_(True), sessions.c.last_used_at < now - idle_limit(settings, True)),
        sessions.c.last_used_at < now - idle_limit(settings, False),
    )
    return conn.execute(delete(sessions).where(expired)).rowcount
