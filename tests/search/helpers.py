"""Small helpers for the search tests (records are made with tests/records/helpers.py)."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.factories import Api


def accession(api: Api, repo: int, title: str, **fields) -> dict:
    return api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": title, **fields})


def search(api: Api, path: str, **params):
    """GET a search route with page 1 unless told; `params` as a client sends them."""
    return api.get(path, params={"page": 1, **params})


def hits(api: Api, path: str, **params) -> list[str]:
    response = search(api, path, **params)
    assert response.status_code == 200, response.text
    return [doc["uri"] for doc in response.json()["results"]]


def wait_for_index_writer(get: Callable, timeout: float = 30.0) -> None:
    """Wait until the indexer has opened (or first built) the index: a stalled indexer's first
    build reads the database, so a write made before it ends may be indexed by it."""
    deadline = time.monotonic() + timeout
    while not ((status := get("/search/status").json()).get("writer") and status.get("generation")):
        assert time.monotonic() < deadline, status
        time.sleep(0.02)
