"""Password hashing: OWASP's argon2id parameters, rehashing of older hashes at login, and the
gate that keeps concurrent hashing bounded (503 with Retry-After past a short wait)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time

import pytest
from argon2 import PasswordHasher
from argon2.low_level import ffi
from sqlalchemy import select, update

from fonds.auth import argon2_memory, passwords
from fonds.auth.passwords import HashingGate
from tests.factories import ADMIN_PASSWORD, new_client


def stored_hash(app, username: str = "admin") -> str:
    db = app.state.fonds.db
    users = db.tables["user"]
    with db.engine.connect() as conn:
        return conn.execute(select(users.c.password_hash).where(users.c.username == username)).scalar_one()


def set_stored_hash(app, password_hash: str, username: str = "admin") -> None:
    db = app.state.fonds.db
    users = db.tables["user"]
    with db.engine.begin() as conn:
        conn.execute(update(users).where(users.c.username == username).values(password_hash=password_hash))


def login(app):
    return new_client(app).post("/users/admin/login", data={"password": ADMIN_PASSWORD})


def test_hashes_use_owasps_argon2id_parameters_in_argon2s_standard_encoding():
    # In a process of its own: the test session swaps in argon2's cheapest parameters.
    code = """
from argon2 import PasswordHasher
from fonds.auth.passwords import OWASP, hash_password, verify_password
made = hash_password('a password')
theirs = PasswordHasher.from_parameters(OWASP)
print(made)
print(theirs.verify(made, 'a password'), verify_password(theirs.hash('another'), 'another'), verify_password(theirs.hash('another'), 'a password'))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True)
    made, checks = result.stdout.splitlines()
    assert made.startswith("$argon2id$v=19$m=7168,t=5,p=1$")
    assert checks == "True True False"


def test_hashes_made_here_and_by_argon2_cffi_check_against_each_other():
    made = passwords.hash_password("correct horse")
    assert passwords._hasher.verify(made, "correct horse")
    assert passwords.verify_password(passwords._hasher.hash("battery staple"), "battery staple")
    assert not passwords.verify_password(made, "Correct horse")
    assert not passwords.verify_password(made[:-2] + ("AA" if not made.endswith("AA") else "BB"), "correct horse")
    for broken in ("", "not a hash", made.rsplit("$", 1)[0] + "$!!!", None):
        assert not passwords.verify_password(broken, "correct horse")


def resident_pages(address: int, size: int) -> int:
    """How many pages of this process's memory at `address` are resident (/proc/self/pagemap's
    present bit, readable without privileges)."""
    page = os.sysconf("SC_PAGE_SIZE")
    with open("/proc/self/pagemap", "rb") as pagemap:
        pagemap.seek(address // page * 8)
        entries = pagemap.read(-(-size // page) * 8)
    return sum(int.from_bytes(entries[i : i + 8], "little") >> 63 for i in range(0, len(entries), 8))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/pagemap")
def test_the_hashing_memory_goes_back_once_no_hash_has_been_in_flight_for_a_moment(app, monkeypatch):
    # Long enough that a loaded host still checks the memory before it goes back (0.2 s was not, once in CI).
    monkeypatch.setattr(passwords._InFlight, "IDLE_SECONDS", 2.0)

    def resident() -> int:
        scratches = [s for s in argon2_memory._scratches if s.memory is not None]
        assert scratches
        return sum(resident_pages(int(ffi.cast("uintptr_t", s.buffer)), len(s.memory)) for s in scratches)

    def given_back() -> bool:
        deadline = time.monotonic() + 15
        while resident() and time.monotonic() < deadline:
            time.sleep(0.05)
        return resident() == 0

    assert login(app).status_code == 200
    assert given_back()  # whichever hash's moment was running (the app's own setup hashes too)
    assert login(app).status_code == 200
    time.sleep(1.2)
    assert login(app).status_code == 200
    # The moment counts from the latest hash: the first login's is over 0.8 s after the second.
    time.sleep(1.0)
    assert resident() > 0  # kept for the next login meanwhile
    assert given_back()
    assert login(app).status_code == 200  # and used again


def test_a_hash_with_older_parameters_still_logs_in_and_is_replaced(app):
    older = PasswordHasher(time_cost=passwords._hasher.time_cost + 1, memory_cost=64, parallelism=1).hash(ADMIN_PASSWORD)
    set_stored_hash(app, older)
    assert login(app).status_code == 200
    replaced = stored_hash(app)
    assert replaced != older
    assert not passwords.needs_rehash(replaced)
    assert login(app).status_code == 200
    assert stored_hash(app) == replaced  # current hashes are left alone


def test_a_wrong_password_does_not_rehash(app):
    older = PasswordHasher(time_cost=passwords._hasher.time_cost + 1, memory_cost=64, parallelism=1).hash(ADMIN_PASSWORD)
    set_stored_hash(app, older)
    assert new_client(app).post("/users/admin/login", data={"password": "not it"}).status_code == 403
    assert stored_hash(app) == older


def with_gate(app, gate: HashingGate) -> None:
    app.state.fonds = dataclasses.replace(app.state.fonds, hashing=gate)


def test_logins_past_the_hashing_gate_wait_then_get_503_with_retry_after(app, api):
    with_gate(app, HashingGate(slots=0, wait=0.05))  # no free turn: every hashing request times out
    response = login(app)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == str(passwords.RETRY_AFTER_SECONDS)
    assert "try again" in response.json()["error"]
    changed = api.post(f"/users/{api.user_id}/password", params={"password": "a new password"})
    assert changed.status_code == 503
    # Requests that hash nothing keep being served.
    assert api.get("/users/current-user").status_code == 200
    assert new_client(app).get("/version").status_code == 200


def test_the_gate_gives_its_turns_back(app):
    with_gate(app, HashingGate(slots=1, wait=0.05))
    assert [login(app).status_code for _ in range(3)] == [200, 200, 200]
    assert new_client(app).post("/users/admin/login", data={"password": "not it"}).status_code == 403
    assert login(app).status_code == 200
