"""Failed-login throttling, kept in the database so every worker and node sees the same counts.

Each username and each client address has a counter of failed logins. Past its allowance,
every further failure locks the key for a time that doubles (2 s, 4 s, 8 s … up to the
configured maximum); a locked key is refused with 429 and `Retry-After` before the password is
even checked, so guessing stops paying. A successful login clears its username's counter. An
address's counter is not cleared by a success (one valid account must not buy unlimited
guesses at others); it is forgotten after a quiet period instead.
"""

from __future__ import annotations

import datetime
import math

from sqlalchemy import case, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite

from fonds.config import Settings
from fonds.errors import TooManyRequests

# A counter with no failure for this long starts again from zero.
QUIET_PERIOD = datetime.timedelta(hours=1)


def _now() -> datetime.datetime:
    # Unlike record stamps, keep the microseconds: a lockout of 2 s must not shrink to 1.01 s.
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def user_key(username: str) -> str:
    return "user:" + username[:300]


def address_key(address: str | None) -> str | None:
    return "addr:" + address[:300] if address else None


def _allowance(key: str, settings: Settings) -> int:
    return settings.login_failures_per_user if key.startswith("user:") else settings.login_failures_per_address


def check(db, keys: list[str]) -> None:
    """429 if any key is locked now."""
    table = db.tables["login_throttle"]
    now = _now()
    with db.read() as conn:
        locked = conn.execute(select(table.c.locked_until).where(table.c.key.in_(keys), table.c.locked_until > now)).scalars().all()
    if locked:
        wait = math.ceil((max(locked) - now).total_seconds())
        raise TooManyRequests("Too many failed logins; try again later", retry_after=max(1, wait))


def _upsert(db, conn, key: str, now):
    table = db.tables["login_throttle"]
    insert = postgresql.insert if db.kind == "postgresql" else sqlite.insert
    fresh = table.c.last_failure_at < now - QUIET_PERIOD
    statement = insert(table).values(key=key, failures=1, last_failure_at=now, locked_until=None)
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.key],
        set_={"failures": case((fresh, 1), else_=table.c.failures + 1), "last_failure_at": now},
    )
    return conn.execute(statement.returning(table.c.failures)).scalar_one()


def record_failure(db, settings: Settings, keys: list[str]) -> None:
    table = db.tables["login_throttle"]
    now = _now()
    with db.write() as conn:
        for key in keys:
            failures = _upsert(db, conn, key, now)
            excess = failures - _allowance(key, settings)
            if excess >= 0:
                seconds = min(2 ** min(excess + 1, 30), settings.login_lockout_max_seconds)
                conn.execute(update(table).where(table.c.key == key).values(locked_until=now + datetime.timedelta(seconds=seconds)))


def record_success(conn, username_key: str) -> None:
    table = conn.info["fonds_tables"]["login_throttle"]
    conn.execute(delete(table).where(table.c.key == username_key))


def purge(conn) -> int:
    """Forget counters that are neither locked nor recent."""
    table = conn.info["fonds_tables"]["login_throttle"]
    now = _now()
    stale = (table.c.last_failure_at < now - QUIET_PERIOD) & ((table.c.locked_until.is_(None)) | (table.c.locked_until < now))
    return conn.execute(delete(table).where(stale)).rowcount
