"""Helpers that build the minimal valid record of each registered type, and an API wrapper."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from fonds.records.registry import REGISTRY, RecordType

ADMIN_PASSWORD = "test-admin-password"
_counter = itertools.count(1)

# Types with generated CRUD routes, for parametrised tests.
CRUD_TYPES = [t for t in REGISTRY if {"list", "create", "read", "update", "delete"} <= set(t.actions)]


def minimal(record_type: RecordType) -> dict:
    """The least a client must send to create a record of this type (decisions.md)."""
    n = next(_counter)
    by_type = {
        "repository": {"repo_code": f"R{n}", "name": f"Repository {n}"},
        "subject": {"title": f"Subject {n}", "source": "local"},
        "top_container": {"indicator": str(n)},
        "location_profile": {"name": f"Shelf {n}"},
        "vocabulary": {"ref_id": f"vocab{n}", "name": f"Vocabulary {n}"},
    }
    return {"jsonmodel_type": record_type.name, **by_type.get(record_type.name, {"title": f"{record_type.name} {n}"})}


def collection_path(record_type: RecordType, repo_id: int) -> str:
    return record_type.collection_path.format(repo_id=repo_id)


@dataclass
class Api:
    client: object
    token: str

    @classmethod
    def login(cls, client, username: str = "admin", password: str = ADMIN_PASSWORD) -> "Api":
        response = client.post(f"/users/{username}/login", data={"password": password})
        assert response.status_code == 200, response.text
        token = response.json()["session"]
        client.headers["X-ArchivesSpace-Session"] = token
        return cls(client, token)

    def get(self, path, **kwargs):
        return self.client.get(path, **kwargs)

    def post(self, path, **kwargs):
        return self.client.post(path, **kwargs)

    def delete(self, path, **kwargs):
        return self.client.delete(path, **kwargs)

    def create(self, path: str, record: dict) -> dict:
        response = self.client.post(path, json=record)
        assert response.status_code == 200, response.text
        return response.json()

    def create_repository(self, code: str) -> int:
        return self.create("/repositories", {"jsonmodel_type": "repository", "repo_code": code, "name": f"{code} repository"})["id"]

    def create_minimal(self, record_type: RecordType, repo_id: int) -> dict:
        return self.create(collection_path(record_type, repo_id), minimal(record_type))
