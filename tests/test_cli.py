"""The command line and the system routes: a real `fonds serve` process answering over HTTP,
`GET /version`, `GET /`, `/openapi.json` and the self-contained `/docs` page."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from fonds import __version__
from tests.conftest import TEST_SEARCH_WAIT_SECONDS
from tests.factories import ADMIN_PASSWORD

PG_URL = os.environ.get("FONDS_TEST_DATABASE_URL")
START_TIMEOUT_SECONDS = 60
SERVE_PASSWORD = "serve-test-password"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_env(settings, data_dir) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FONDS_")}
    env.update(FONDS_DATA_DIR=str(data_dir), FONDS_ADMIN_PASSWORD=SERVE_PASSWORD, FONDS_SEARCH_WAIT_SECONDS=str(TEST_SEARCH_WAIT_SECONDS))
    if PG_URL:
        env["FONDS_DATABASE_URL"] = settings.database_url
    return env


def wait_until_up(process: subprocess.Popen, base: str, log_path) -> None:
    """Poll GET /version until it answers; fail early if the process dies."""
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"fonds serve exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            if httpx.get(f"{base}/version", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail(f"fonds serve did not answer within {START_TIMEOUT_SECONDS}s:\n{log_path.read_text()}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def disconnect_mid_body(port: int, token: str) -> None:
    """Send a request announcing 1,000 bytes of body, send 10, and hang up."""
    head = f"POST /repositories HTTP/1.1\r\nHost: x\r\nX-ArchivesSpace-Session: {token}\r\nContent-Length: 1000\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(head.encode() + b'{"name": ')
        time.sleep(0.5)  # let the server start reading the body before the connection goes


def start_serve(tmp_path, settings, port: int) -> subprocess.Popen:
    """`fonds serve` on `port`, a data directory in `tmp_path`, its output in `tmp_path/serve.log`."""
    with open(tmp_path / "serve.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "fonds", "serve", "--port", str(port)],
            env=serve_env(settings, tmp_path / "serve-data"),
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def test_fonds_serve_answers_over_real_http(tmp_path, settings):
    port, log_path = free_port(), tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    process = start_serve(tmp_path, settings, port)
    try:
        wait_until_up(process, base, log_path)
        # The database was prepared by a child that is gone: nothing lingers beside the server
        # holding memory (multiprocessing's resource tracker did, 15 MB).
        assert Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split() == []
        # The command became the server (same process): the command line's libraries stay out of it.
        assert Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")[1:3] == [b"-m", b"fonds.server"]
        with httpx.Client(base_url=base, timeout=10) as http:
            assert http.get("/version").text == f"Fonds (v{__version__})"
            assert http.post("/users/admin/login", data={"password": "wrong"}).status_code == 403
            # ArchivesSpace clients may send the password in the query string: it must not reach the log.
            login = http.post("/users/admin/login", params={"password": SERVE_PASSWORD})
            assert login.status_code == 200, login.text
            # Also when the parameter's name is percent-encoded or in capitals (both log in).
            for name in ("pass%77ord", "PASSWORD", "p%61ssword"):
                encoded = http.post(f"/users/admin/login?{name}={SERVE_PASSWORD}")
                assert encoded.status_code == (200 if name != "PASSWORD" else 400), encoded.text
            token = login.json()["session"]
            disconnect_mid_body(port, token)
            http.headers["X-Service-Session"] = token
            repo = http.post("/repositories", json={"jsonmodel_type": "repository", "repo_code": "HTTP", "name": "Over HTTP"})
            assert repo.status_code == 200, repo.text
            created = http.post(
                f"/repositories/{repo.json()['id']}/accessions", json={"jsonmodel_type": "accession", "title": "Real", "id_0": "1"}
            )
            assert created.status_code == 200, created.text
            record = http.get(created.json()["uri"])
            assert record.status_code == 200
            assert record.json()["title"] == "Real"
            assert record.json()["uri"] == created.json()["uri"]
            assert record.headers["cache-control"] == "private, must-revalidate, max-age=0"
    finally:
        stop(process)
    log_text = log_path.read_text()
    # One access-log line per request, as uvicorn writes them (the app writes its own).
    assert re.search(r'^INFO:     127\.0\.0\.1:\d+ - "GET /version HTTP/1\.1" 200 OK$', log_text, re.MULTILINE), log_text
    assert log_text.count('"POST /users/admin/login HTTP/1.1" 403 Forbidden') == 1
    assert "password=[redacted]" in log_text
    assert "pass%77ord=[redacted]" in log_text and "PASSWORD=[redacted]" in log_text
    assert SERVE_PASSWORD not in log_text
    # The client that vanished mid-body: one info line, no traceback.
    assert log_text.count("client disconnected before sending the whole request: POST /repositories") == 1
    assert "Traceback" not in log_text and "ERROR" not in log_text
    assert token not in log_text
    if not PG_URL:
        assert (tmp_path / "serve-data" / "fonds.sqlite3").is_file()
    assert not (tmp_path / "serve-data" / "initial-admin-password").exists()


def serve_until_it_exits(tmp_path, **settings) -> subprocess.CompletedProcess:
    """`fonds serve` with these FONDS_* settings (and a data directory), for a start that fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FONDS_")}
    env.update(FONDS_DATA_DIR=str(tmp_path / "data"), **settings)
    return subprocess.run(
        [sys.executable, "-m", "fonds", "serve", "--port", str(free_port())], env=env, capture_output=True, text=True, timeout=60
    )


def test_serve_refuses_a_bad_setting(tmp_path):
    result = serve_until_it_exits(tmp_path, FONDS_DEFAULT_PAGE_SIZE="many")
    assert result.returncode == 2
    assert "FONDS_DEFAULT_PAGE_SIZE" in result.stderr


def test_serve_stops_with_a_message_when_the_database_cannot_be_prepared(tmp_path):
    # Port 1 on loopback: nothing listens there, so the connection is refused at once.
    result = serve_until_it_exits(tmp_path, FONDS_DATABASE_URL="postgresql://fonds@127.0.0.1:1/none")
    assert result.returncode == 1
    assert "Connection refused" in result.stderr and "The database could not be prepared" in result.stderr


# -- operator commands ----------------------------------------------------------------------


def run_cli(settings, *args, input: str | None = None):
    """Run a `fonds` command in-process against the test's database."""
    from typer.testing import CliRunner

    from fonds.cli import cli

    env = {
        "FONDS_DATA_DIR": str(settings.data_dir),
        "FONDS_DATABASE_URL": settings.effective_database_url,
        "FONDS_ADMIN_PASSWORD": "unused-here",
    }
    return CliRunner().invoke(cli, list(args), input=input, env=env)


def test_user_set_password_replaces_the_password_and_ends_sessions(app, api, client, settings):
    old_session = api.token
    result = run_cli(settings, "user", "set-password", "ADMIN", input="a-new-password\na-new-password\n")
    assert result.exit_code == 0, result.output
    assert "a-new-password" not in result.output
    assert client.get("/", headers={"X-ArchivesSpace-Session": old_session}).status_code == 412
    assert client.post("/users/admin/login", data={"password": ADMIN_PASSWORD}).status_code == 403
    assert client.post("/users/admin/login", data={"password": "a-new-password"}).status_code == 200


def test_user_set_password_refuses_a_short_password_and_an_unknown_user(app, settings):
    short = run_cli(settings, "user", "set-password", "admin", input="short\nshort\n")
    assert short.exit_code == 1
    assert "at least 8 characters" in short.output
    unknown = run_cli(settings, "user", "set-password", "nobody", input="long-enough-1\nlong-enough-1\n")
    assert unknown.exit_code == 1
    assert "nobody" in unknown.output


def test_sessions_purge_removes_only_idle_sessions(app, client, settings):
    from tests.auth.test_sessions import age_sessions, session_rows, token_of

    idle, fresh = token_of(client), token_of(client)
    age_sessions(app, 7200, token=idle)
    result = run_cli(settings, "sessions", "purge")
    assert result.exit_code == 0, result.output
    assert "Purged 1 expired session(s)" in result.output
    assert len(session_rows(app)) == 1
    assert client.get("/", headers={"X-ArchivesSpace-Session": fresh}).status_code == 200


# -- system routes ---------------------------------------------------------------------------


def test_version_is_plain_text(client):
    response = client.get("/version")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == f"Fonds (v{__version__})"
    assert re.fullmatch(r"Fonds \(v\d+\.\d+\.\d+.*\)", response.text)


def test_root_describes_the_service(client):
    response = client.get("/")
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == "Fonds"
    assert body["version"] == __version__
    assert body["databaseProductName"] == ("postgresql" if PG_URL else "sqlite")
    assert body["databaseProductVersion"]


def test_openapi_lists_the_accession_routes(client):
    response = client.get("/openapi.json")
    assert response.status_code == 200
    spec = response.json()
    assert spec["info"]["title"] == "Fonds"
    paths = spec["paths"]
    assert {"get", "post"} <= set(paths["/repositories/{repo_id}/accessions"])
    assert {"get", "post", "delete"} <= set(paths["/repositories/{repo_id}/accessions/{id}"])
    assert "accession" in spec["components"]["schemas"]


def test_docs_page_is_self_contained(client):
    response = client.get("/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "/openapi.json" in response.text
    hosts = re.findall(r"(?:https?:)?//([A-Za-z0-9.-]+\.[A-Za-z]{2,}|localhost)[:/\"']", response.text)
    assert hosts == []
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=[\"']?(https?:)?//", response.text)
