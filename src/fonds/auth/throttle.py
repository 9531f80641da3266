"""Failed-login throttling, kept in the database so every worker and node sees the same counts.

Each username and each client address has a counter of failed logins. Past its allowance,
every further failure locks the key for a time that doubles (2 s, 4 s, 8 s … up to the
configured maximum); a locked key is refused with 429 and `Retry-After` before the password is
even checked, so guessing stops paying. A successful login clears its username's counter. An
address's counter is not cleared by a success (one valid account must not buy unlimited
guesses at others); it is forgotten after a quiet period instead.

Every attempt is counted as a failure *before* its password is checked, in one transaction per
attempt that both reads and moves the counter (an UPSERT holding the row's lock on PostgreSQL,
the single writer on SQLite). So concurrent guesses cannot all pass a check made before any of
them was counted: of N at once, at most the allowance reach the password check. A login that
then succeeds takes its reservation back.
"""

from __future__ import annotations

import datetime
import importlib
import math

from sqlalchemy import case, delete, update

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


def _upsert(db, conn, key: str, now):
    """Count one more failure for `key` (from 1 again after a quiet period); returns (failures, locked_until)."""
    table = db.tables["login_throttle"]
    # The dialect in use only: PostgreSQL's package imports all its drivers' modules (2 MB of
    # RSS on a SQLite server).
    insert = importlib.import_module(f"sqlalchemy.dialects.{db.kind}").insert
    fresh = table.c.last_failure_at < now - QUIET_PERIOD
    statement = insert(table).values(key=key, failures=1, last_failure_at=now, locked_until=None)
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.key],
        set_={"failures": case((fresh, 1), else_=table.c.failures + 1), "last_failure_at": now},
    )
    return conn.execute(statement.returning(table.c.failures, table.c.locked_until)).one()


def reserve(db, settings: Settings, keys: list[str]) -> None:
    """Count this attempt against every key before its password is checked; 429 (counting
    nothing) if a key is locked. The attempt that reaches a key's allowance locks it for the next."""
    table = db.tables["login_throttle"]
    now = _now()
    with db.write() as conn:
        for key in keys:
            failures, locked_until = _upsert(db, conn, key, now)
            if locked_until is not None and locked_until > now:
                # Raised inside the transaction: it rolls back, so a refused attempt is not counted.
                wait = math.ceil((locked_until - now).total_seconds())
                raise TooManyRequests("Too many failed logins; try again later", retry_after=max(1, wait))
            excess = failures - _allowance(key, settings)
            if excess >= 0:
                seconds = min(2 ** min(excess + 1, 30), settings.login_lockout_max_seconds)
                conn.execute(update(table).where(table.c.key == key).values(locked_until=now + datetime.timedelta(seconds=seconds)))


def refund(conn, settings: Settings, key: str) -> None:
    """Take back the failure a successful login reserved (and the lock it set, if it set one)."""
    table = conn.info["fonds_tables"]["login_throttle"]
    remaining = table.c.failures - 1
    conn.execute(
        update(table)
        .where(table.c.key == key, table.c.failures > 0)
        .values(failures=remaining, locked_until=case((remaining < _allowance(key, settings), None), else_=table.c.locked_until))
    )


def record_success(conn, username_key: str) -> None:
    table = conn.info["fonds_tables"]["login_throttle"]
    conn.execute(delete(table).where(table.c.key == username_key))


def purge(conn) -> int:
    """Forget counters that are neither locked nor recent."""
    table = conn.info["fonds_tables"]["login_throttle"]
    now = _now()
    stale = (table.c.last_failure_at < now - QUIET_PERIOD) & ((table.c.locked_until.is_(None)) | (table.c.locked_until < now))
    return conn.execute(delete(table).where(stale)).rowcount
