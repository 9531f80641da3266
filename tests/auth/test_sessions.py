"""Login, sessions and logout (aspace-api.md §1, decisions.md "Sessions and auth")."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import re
import sqlite3
import time
import warnings

import pytest
from sqlalchemy import select, update

from fonds.app import create_app
from fonds.storage.db import sqlite_file
from tests.factories import ADMIN_PASSWORD

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TOKEN = re.compile(r"^[0-9a-f]{64}$")
LOGIN_FAILED = {"error": "Login failed"}


def login(client, username: str = "admin", password: str | None = ADMIN_PASSWORD, *, form: bool = True, **params):
    """POST a login with the password as form field (default) or query parameter."""
    if password is not None:
        if form:
            return client.post(f"/users/{username}/login", data={"password": password, **params})
        params["password"] = password
    return client.post(f"/users/{username}/login", params=params)


def token_of(client, **kwargs) -> str:
    response = login(client, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()["session"]


def accessions_with(client, repo: int, headers: dict):
    return client.get(f"/repositories/{repo}/accessions", params={"page": 1}, headers=headers)


def session_rows(app) -> list:
    db = app.state.fonds.db
    with db.engine.connect() as conn:
        return conn.execute(select(db.tables["session"])).all()


def age_sessions(app, seconds: int, token: str | None = None) -> None:
    """Pretend every session (or the one of `token`) was last used `seconds` ago (instead of sleeping)."""
    db = app.state.fonds.db
    sessions = db.tables["session"]
    past = datetime.datetime.now(datetime.UTC).replace(microsecond=0, tzinfo=None) - datetime.timedelta(seconds=seconds)
    statement = update(sessions).values(last_used_at=past)
    if token is not None:
        statement = statement.where(sessions.c.token_hash == hashlib.sha256(token.encode()).hexdigest())
    with db.engine.begin() as conn:
        conn.execute(statement)


# -- logging in ------------------------------------------------------------------------------


def test_login_with_the_password_as_a_form_field(client):
    response = login(client, form=True)
    assert response.status_code == 200, response.text
    assert TOKEN.match(response.json()["session"])


def test_login_with_the_password_as_a_query_parameter(client):
    response = login(client, form=False)
    assert response.status_code == 200, response.text
    assert TOKEN.match(response.json()["session"])
    assert response.json()["user"]["username"] == "admin"


@pytest.mark.parametrize("username", ["ADMIN", "Admin", " admin"])
def test_usernames_are_case_insensitive(client, username):
    response = login(client, username=username)
    assert response.status_code == 200, response.text
    assert response.json()["user"]["username"] == "admin"


@pytest.mark.parametrize(("username", "password"), [("admin", "wrong"), ("nobody", ADMIN_PASSWORD), ("nobody", "wrong")])
def test_wrong_password_and_unknown_user_fail_alike(client, username, password):
    response = login(client, username=username, password=password)
    assert response.status_code == 403
    assert response.json() == LOGIN_FAILED
    assert session_rows(client.app) == []


@pytest.mark.parametrize("form", [True, False])
def test_missing_password_is_a_bad_request(client, form):
    response = login(client, password=None) if not form else client.post("/users/admin/login", data={"expiring": "true"})
    assert response.status_code == 400
    assert response.json()["error"] == {"password": ["Parameter required but no value provided"]}


@pytest.mark.parametrize("username", ["bad!name", "semi;colon", "two  spaces"])
def test_invalid_username(client, username):
    response = login(client, username=username)
    assert response.status_code == 400
    assert response.json() == {"error": "Invalid username"}


def test_an_expiring_login_has_no_expire_after_seconds(client):
    body = login(client).json()
    assert "expire_after_seconds" not in body
    assert session_rows(client.app)[0].expiring is True


@pytest.mark.parametrize("value", ["False", "false", "FALSE"])
@pytest.mark.parametrize("form", [True, False])
def test_non_expiring_login(client, value, form):
    response = login(client, form=form, expiring=value)
    assert response.status_code == 200, response.text
    assert response.json()["expire_after_seconds"] == 604800
    assert session_rows(client.app)[0].expiring is False


def test_expiring_must_be_a_boolean(client):
    response = login(client, expiring="moo")
    assert response.status_code == 400
    assert "expiring" in response.json()["error"]
    assert session_rows(client.app) == []


def test_login_response_shape(client, api, repo):
    body = login(client).json()
    assert set(body) == {"session", "user"}
    user = body["user"]
    assert user["jsonmodel_type"] == "user"
    assert user["uri"].startswith("/users/")
    assert user["is_admin"] is True
    permissions = user["permissions"]
    assert set(permissions) == {f"/repositories/{repo}", "_archivesspace"}
    assert "view_repository" in permissions[f"/repositories/{repo}"]
    assert "administer_system" in permissions["_archivesspace"]


def test_login_response_carries_no_secrets(client):
    response = login(client)
    token = response.json()["session"]
    text = response.text
    assert "argon2" not in text
    assert ADMIN_PASSWORD not in text
    assert "password" not in text
    assert hashlib.sha256(token.encode()).hexdigest() not in text
    assert "token_hash" not in text


def test_tokens_are_stored_only_as_sha256_hashes(client):
    tokens = [token_of(client), token_of(client)]
    assert tokens[0] != tokens[1]
    stored = [row.token_hash for row in session_rows(client.app)]
    assert sorted(stored) == sorted(hashlib.sha256(t.encode()).hexdigest() for t in tokens)
    for row in session_rows(client.app):
        assert not any(token in str(value) for token in tokens for value in row)


def test_repeated_failed_logins_are_throttled(client):
    statuses = [login(client, password=f"wrong-{n}") for n in range(30)]
    throttled = [r for r in statuses if r.status_code == 429]
    assert throttled, [r.status_code for r in statuses]
    assert throttled[0].headers["Retry-After"].isdigit()
    assert "error" in throttled[0].json()


def fail_logins(client, times: int, username: str = "admin") -> list[int]:
    return [login(client, username, password=f"wrong-{n}").status_code for n in range(times)]


def throttle_rows(app) -> dict:
    db = app.state.fonds.db
    with db.engine.connect() as conn:
        return {row.key: row for row in conn.execute(select(db.tables["login_throttle"]))}


def unlock_all(app) -> None:
    """Pretend every lockout has run out (instead of sleeping)."""
    db = app.state.fonds.db
    with db.engine.begin() as conn:
        conn.execute(update(db.tables["login_throttle"]).values(locked_until=None))


def test_a_username_is_locked_after_its_allowance_even_for_the_right_password(client):
    assert fail_logins(client, 5) == [403] * 5
    locked = login(client)
    assert locked.status_code == 429
    assert int(locked.headers["Retry-After"]) >= 1
    assert locked.json() == {"error": "Too many failed logins; try again later"}


def test_the_lockout_doubles_with_each_further_failure(client):
    fail_logins(client, 5)
    first = int(login(client).headers["Retry-After"])
    unlock_all(client.app)
    assert fail_logins(client, 1) == [403]
    second = int(login(client).headers["Retry-After"])
    assert second >= 2 * first - 1 and second > first


@pytest.mark.parametrize("settings_overrides", [{"login_lockout_max_seconds": 3}])
def test_the_lockout_is_capped(client):
    for _ in range(8):
        fail_logins(client, 1)
        unlock_all(client.app)
    fail_logins(client, 1)
    assert int(login(client).headers["Retry-After"]) <= 3


def test_other_usernames_are_not_locked_by_one_users_failures(client, api):
    fail_logins(client, 6, username="nobody-here")
    assert login(client, "nobody-here").status_code == 429
    assert login(client).status_code == 200


def test_a_successful_login_clears_the_usernames_counter(client):
    assert fail_logins(client, 4) == [403] * 4
    assert login(client).status_code == 200
    assert "user:admin" not in throttle_rows(client.app)
    assert fail_logins(client, 4) == [403] * 4
    assert login(client).status_code == 200


@pytest.mark.parametrize("settings_overrides", [{"login_failures_per_address": 8, "login_failures_per_user": 100}])
def test_one_address_is_locked_after_failures_across_usernames(client):
    statuses = [login(client, f"guess{n}", password="wrong-password").status_code for n in range(8)]
    assert statuses == [403] * 8
    assert login(client).status_code == 429
    # A success does not clear an address: one valid account must not buy more guesses.
    assert any(key.startswith("addr:") for key in throttle_rows(client.app))


def test_a_session_works_on_another_worker_and_after_a_restart(client, repo, settings):
    token = token_of(client)
    client.app.state.fonds.db.dispose()  # the first process "stops"
    with TestClient(create_app(settings), raise_server_exceptions=False) as restarted:
        response = accessions_with(restarted, repo, {"X-ArchivesSpace-Session": token})
        assert response.status_code == 200, response.text


def test_throttling_is_shared_by_every_worker_on_the_database(client, settings):
    # The other worker is started first: its start-up must not eat into the 2 s lockout.
    with TestClient(create_app(settings), raise_server_exceptions=False) as other_worker:
        fail_logins(client, 5)
        assert login(other_worker).status_code == 429


# -- using a session -------------------------------------------------------------------------


@pytest.mark.parametrize("header", ["X-Service-Session", "X-ArchivesSpace-Session"])
def test_both_session_headers_work(client, repo, header):
    token = token_of(client)
    response = accessions_with(client, repo, {header: token})
    assert response.status_code == 200, response.text
    assert response.json()["results"] == []


def test_no_session_is_denied(client, repo):
    response = accessions_with(client, repo, {})
    assert response.status_code == 403
    assert response.json() == {"error": "Access denied"}


def test_an_unknown_token_is_gone(client, repo):
    response = accessions_with(client, repo, {"X-Service-Session": "0" * 64})
    assert response.status_code == 412
    assert response.json()["code"] == "SESSION_GONE"
    assert "error" in response.json()


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/"), ("GET", "/version"), ("GET", "/permissions?level=all"), ("GET", "/no/such/route"), ("POST", "/logout")],
)
def test_a_bad_token_is_gone_on_every_path(client, method, path):
    response = client.request(method, path, headers={"X-ArchivesSpace-Session": "f" * 64})
    assert response.status_code == 412
    assert response.json()["code"] == "SESSION_GONE"


def test_a_stale_token_does_not_stop_a_new_login(client):
    response = client.post("/users/admin/login", data={"password": ADMIN_PASSWORD}, headers={"X-ArchivesSpace-Session": "f" * 64})
    assert response.status_code == 200


@pytest.mark.parametrize("settings_overrides", [{"session_expire_seconds": 1}])
def test_an_idle_expiring_session_expires(client, repo):
    expiring = token_of(client)
    lasting = token_of(client, expiring="false")
    age_sessions(client.app, 3600)
    response = accessions_with(client, repo, {"X-Service-Session": expiring})
    assert response.status_code == 412
    assert response.json()["code"] == "SESSION_EXPIRED"
    # The expired session is removed: next time it is simply gone.
    assert accessions_with(client, repo, {"X-Service-Session": expiring}).json()["code"] == "SESSION_GONE"
    # A session opened with expiring=false outlives the short limit.
    assert accessions_with(client, repo, {"X-Service-Session": lasting}).status_code == 200


def test_a_session_used_within_the_limit_stays(client, repo):
    token = token_of(client)
    age_sessions(client.app, 600)
    assert accessions_with(client, repo, {"X-Service-Session": token}).status_code == 200


def test_a_session_due_a_touch_is_served_at_once_while_another_process_writes(client, repo, settings):
    """Its last use is then left as it was (the next request records it), rather than waiting
    for the write (a large import written by another process holds SQLite's lock for seconds)."""
    db = client.app.state.fonds.db
    path = sqlite_file(db.url)
    if path is None:
        pytest.skip("SQLite's one write lock")
    token = token_of(client)
    age_sessions(client.app, 600)
    before = [row.last_used_at for row in session_rows(client.app) if row.token_hash == hashlib.sha256(token.encode()).hexdigest()]
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        assert accessions_with(client, repo, {"X-ArchivesSpace-Session": token}).status_code == 200
        assert time.monotonic() - started < 5  # not SQLite's busy timeout of 30 s
    finally:
        other.execute("ROLLBACK")
        other.close()
    after = [row.last_used_at for row in session_rows(client.app) if row.token_hash == hashlib.sha256(token.encode()).hexdigest()]
    assert after == before
    assert accessions_with(client, repo, {"X-ArchivesSpace-Session": token}).status_code == 200
    touched = [row.last_used_at for row in session_rows(client.app) if row.token_hash == hashlib.sha256(token.encode()).hexdigest()]
    assert touched[0] > before[0]


def test_logout(client, repo):
    token = token_of(client)
    other = token_of(client)
    response = client.post("/logout", headers={"X-ArchivesSpace-Session": token})
    assert response.status_code == 200
    assert response.json() == {"status": "session_logged_out"}
    gone = accessions_with(client, repo, {"X-ArchivesSpace-Session": token})
    assert gone.status_code == 412
    assert gone.json()["code"] == "SESSION_GONE"
    assert accessions_with(client, repo, {"X-ArchivesSpace-Session": other}).status_code == 200


def test_logout_without_a_session(client):
    response = client.post("/logout")
    assert response.status_code == 200
    assert response.json() == {"status": "no_active_session"}


# -- the first admin password ----------------------------------------------------------------


def test_generated_admin_password_is_written_once_with_mode_0600(settings):
    fresh = dataclasses.replace(settings, admin_password=None)
    assert not fresh.data_dir.exists()
    path = fresh.data_dir / "initial-admin-password"
    with TestClient(create_app(fresh), raise_server_exceptions=False) as anonymous:
        assert path.stat().st_mode & 0o777 == 0o600
        password = path.read_text().strip()
        assert len(password) >= 16
        assert login(anonymous, password=password).status_code == 200
        failed = login(anonymous, password="admin")
        assert failed.status_code == 403
        assert failed.json() == LOGIN_FAILED
    # A restart keeps the admin and its password; the file is not rewritten.
    with TestClient(create_app(fresh), raise_server_exceptions=False) as restarted:
        assert path.read_text().strip() == password
        assert login(restarted, password=password).status_code == 200
