"""The application's life: what it runs beside the requests while it serves."""

import gc
import os
import platform
import re
import subprocess
import sys
import time

import pytest

from fonds import collector
from fonds.model import REGISTRY
from tests.factories import collection_path, running_app


@pytest.fixture
def settings_overrides() -> dict:
    # Far more often than the default 10 s, so that releases fall among the requests below.
    return {"memory_release_seconds": 0.005}


def test_requests_are_answered_while_the_server_hands_free_memory_back(api, repo):
    accession = REGISTRY["accession"]
    created = []
    for n in range(20):
        created.append(api.create(collection_path(accession, repo), {**api.minimal(accession, repo), "title": f"Kept {n}"})["uri"])
        time.sleep(0.005)  # lets a release run between requests
    titles = [api.get(uri).json()["title"] for uri in created]
    assert titles == [f"Kept {n}" for n in range(20)]


def test_the_server_runs_the_cyclic_collector_rarely(settings):
    # At Python's default (700 allocations) it ran every few records of an import or a reindex.
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        with running_app(settings):
            assert gc.get_threshold() == collector.THRESHOLDS
    finally:
        gc.set_threshold(*before)


def test_a_collector_switched_off_stays_off():
    before = gc.get_threshold()
    gc.set_threshold(0)
    try:
        collector.configure()
        assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)


def test_head_answers_as_get_without_the_body(api, repo):
    accession = REGISTRY["accession"]
    uri = api.create(collection_path(accession, repo), {**api.minimal(accession, repo), "title": "Headed"})["uri"]
    for path in (uri, collection_path(accession, repo) + "?page=1", f"{uri}9999", "/version"):
        get, head = api.get(path), api.client.head(path)
        assert (head.status_code, head.content) == (get.status_code, b"")
        assert head.headers["content-length"] == get.headers["content-length"] == str(len(get.content))
        assert head.headers["content-type"] == get.headers["content-type"]
    # No more access than GET has: without a session, the same refusal.
    anonymous = api.client.head(uri, headers={"X-ArchivesSpace-Session": ""})
    refused = api.client.get(uri, headers={"X-ArchivesSpace-Session": ""})
    assert refused.status_code == 403
    assert (anonymous.status_code, anonymous.content) == (403, b"")


ARENAS_OF_A_SERVING_APP = """
import ctypes, sys
from starlette.testclient import TestClient
from fonds.app import create_app
from fonds.config import load_settings

with TestClient(create_app(load_settings())) as client:  # start-up runs on a worker thread
    assert client.get("/version").status_code == 200
    ctypes.CDLL("libc.so.6").malloc_stats()  # one "Arena N:" block per arena, on stderr
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc arenas are glibc's")
def test_the_server_process_keeps_to_the_malloc_arenas_it_is_given(tmp_path):
    # Each arena keeps what it freed: after a bulk load, a second one held ~20 MB more under writes.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FONDS_", "MALLOC_"))}
    env.update(FONDS_DATA_DIR=str(tmp_path), FONDS_ADMIN_PASSWORD="arena-test-pw", FONDS_MALLOC_ARENAS="1")
    done = subprocess.run([sys.executable, "-c", ARENAS_OF_A_SERVING_APP], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.findall(r"^Arena \d+:", done.stderr, flags=re.MULTILINE) == ["Arena 0:"]
