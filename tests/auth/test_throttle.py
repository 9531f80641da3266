"""Throttling decisions are atomic per key: concurrent wrong guesses cannot all slip past a check
made before any of them was counted."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from fonds.auth import login as login_service
from tests.factories import ADMIN_PASSWORD

RACERS = 20
ALLOWANCE = 5


@pytest.fixture
def counted_password_checks(monkeypatch) -> list:
    """Every password check, recorded; each is slowed a little so that, were the throttle not
    atomic, the racers would all be past it before any failure was counted."""
    checks, real = [], login_service.verify_password

    def counting(password_hash, password):
        checks.append(password)
        time.sleep(0.05)
        return real(password_hash, password)

    monkeypatch.setattr(login_service, "verify_password", counting)
    return checks


def race(client, username: str, passwords: list[str]) -> list[int]:
    start = threading.Barrier(len(passwords))

    def attempt(password: str) -> int:
        start.wait()
        return client.post(f"/users/{username}/login", data={"password": password}).status_code

    with ThreadPoolExecutor(len(passwords)) as pool:
        return list(pool.map(attempt, passwords))


@pytest.mark.parametrize("settings_overrides", [{"login_failures_per_user": ALLOWANCE, "login_failures_per_address": 1000}])
@pytest.mark.parametrize("username", ["admin", "nobody-here"])
def test_concurrent_wrong_passwords_reach_the_check_at_most_the_allowance(client, counted_password_checks, username):
    statuses = race(client, username, [f"wrong-{n}" for n in range(RACERS)])
    assert len(counted_password_checks) == ALLOWANCE
    assert sorted(statuses) == [403] * ALLOWANCE + [429] * (RACERS - ALLOWANCE)
    # And the right password is refused too while the name is locked.
    assert client.post("/users/admin/login", data={"password": ADMIN_PASSWORD}).status_code == (429 if username == "admin" else 200)


@pytest.mark.parametrize("settings_overrides", [{"login_failures_per_user": 1000, "login_failures_per_address": ALLOWANCE}])
def test_concurrent_guesses_from_one_address_reach_the_check_at_most_its_allowance(client, counted_password_checks):
    statuses = []
    threads = [threading.Thread(target=lambda n=n: statuses.extend(race(client, f"guess{n}", ["wrong"] * 4))) for n in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(counted_password_checks) == ALLOWANCE
    assert sorted(statuses) == [403] * ALLOWANCE + [429] * (20 - ALLOWANCE)


@pytest.mark.parametrize("settings_overrides", [{"login_failures_per_address": 3}])
def test_a_successful_login_does_not_use_up_the_address_allowance(client):
    for _ in range(5):
        assert client.post("/users/admin/login", data={"password": ADMIN_PASSWORD}).status_code == 200
    assert client.post("/users/admin/login", data={"password": "wrong"}).status_code == 403
