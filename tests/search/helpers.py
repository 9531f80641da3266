"""Small helpers for the search tests (records are made with tests/records/helpers.py)."""

from __future__ import annotations

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
