"""The access log (fonds.api.access_log): uvicorn's line per request, secrets hidden, written
whole (the real server's log is checked in tests/test_cli.py)."""

from __future__ import annotations

import io
import re
from urllib.parse import quote

import pytest

from fonds.api import access_log
from fonds.api.access_log import AccessLog
from fonds.app import app_from_environment
from tests.factories import ADMIN_PASSWORD, new_client

LINE = re.compile(r'^INFO:     testclient:\d+ - "(?P<request>[^"]+)" (?P<status>\d{3}) (?P<phrase>.*)$')


@pytest.fixture
def logged(app) -> io.StringIO:
    stream = io.StringIO()
    app.access_log = AccessLog(stream)
    return stream


def lines(stream: io.StringIO) -> list[re.Match]:
    found = [LINE.match(line) for line in stream.getvalue().splitlines()]
    assert all(found), stream.getvalue()
    return found


def test_each_request_has_its_line_as_uvicorn_writes_it(api, repo, logged):
    accession = api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "A", "id_0": "1"})["uri"]
    api.get(accession)  # the fast lane's answer
    api.get(f"/repositories/{repo}/accessions/99999")  # the ordinary path's
    api.get("/no/such/route", params={"q": "a b"})
    found = [(m["request"], m["status"], m["phrase"]) for m in lines(logged)]
    assert found == [
        (f"POST /repositories/{repo}/accessions HTTP/1.1", "200", "OK"),
        (f"GET {accession} HTTP/1.1", "200", "OK"),
        (f"GET /repositories/{repo}/accessions/99999 HTTP/1.1", "404", "Not Found"),
        ("GET /no/such/route?q=a+b HTTP/1.1", "404", "Not Found"),
    ]


def test_secrets_in_query_strings_are_hidden(app, logged):
    answer = new_client(app).post(f"/users/admin/login?pass%77ord={quote(ADMIN_PASSWORD)}")
    assert answer.status_code == 200, answer.text
    [line] = lines(logged)
    assert line["request"] == "POST /users/admin/login?pass%77ord=[redacted] HTTP/1.1"
    assert ADMIN_PASSWORD not in logged.getvalue()


def test_lines_are_written_whole_in_writes_a_pipe_never_splits(monkeypatch):
    monkeypatch.setattr(access_log, "PIPE_BUF", 100)
    lines = [f"{n:02d}" + "x" * 37 + "\n" for n in range(10)]  # 40 bytes each
    writes = access_log._chunks(lines)
    assert "".join(writes) == "".join(lines)
    assert [len(w) for w in writes] == [80] * 5
    assert access_log._chunks(["y" * 300 + "\n"]) == ["y" * 300 + "\n"]  # a longer line still goes whole


@pytest.mark.parametrize(("setting", "expected"), [("true", True), ("false", False)])
def test_fonds_access_log_turns_it_on_and_off(monkeypatch, tmp_path, setting, expected):
    monkeypatch.setenv("FONDS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("FONDS_ACCESS_LOG", setting)
    assert (app_from_environment().access_log is not None) is expected
