"""Helpers that build the minimal valid record of each registered type, and an API wrapper."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

from fonds.model import REGISTRY
from fonds.records.registry import RecordType

ADMIN_PASSWORD = "test-admin-password"
USER_PASSWORD = "user-password-1"  # what `make_user` gives a user unless told otherwise
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
    user_id: int | None = None
    username: str | None = None

    @classmethod
    def login(cls, client, username: str = "admin", password: str = ADMIN_PASSWORD) -> Api:
        response = client.post(f"/users/{username}/login", data={"password": password})
        assert response.status_code == 200, response.text
        body = response.json()
        token = body["session"]
        client.headers["X-ArchivesSpace-Session"] = token
        user = body["user"]
        return cls(client, token, int(user["uri"].rsplit("/", 1)[1]), user["username"])

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

    def group_uri(self, repo_id: int, group_code: str) -> str:
        """The URI of the repository's group with this code (e.g. "repository-viewers")."""
        response = self.client.get(f"/repositories/{repo_id}/groups", params={"group_code": group_code})
        assert response.status_code == 200, response.text
        found = response.json()
        assert len(found) == 1, found
        return found[0]["uri"]

    def create_user(self, username: str, password: str = USER_PASSWORD, groups: list[str] = (), **fields) -> int:
        """Create a user in the given groups (URIs); returns the user's id."""
        body = {"jsonmodel_type": "user", "username": username, "name": username.title(), **fields}
        response = self.client.post("/users", params={"password": password, "groups[]": list(groups)}, json=body)
        assert response.status_code == 200, response.text
        return response.json()["id"]

    def user(self, user_id: int) -> dict:
        response = self.client.get(f"/users/{user_id}")
        assert response.status_code == 200, response.text
        return response.json()


def new_client(app):
    """Another anonymous client of the same app (its own headers, so its own session)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    return TestClient(app, raise_server_exceptions=False)


def make_user(api: Api, username: str, password: str = USER_PASSWORD, groups: list[str] = (), **fields) -> Api:
    """Create a user (as `api`, normally the admin) in `groups` and return an Api logged in as them.

    `groups` are group URIs, or (repo_id, group_code) pairs such as (repo, "repository-viewers")."""
    uris = [group if isinstance(group, str) else api.group_uri(*group) for group in groups]
    api.create_user(username, password, uris, **fields)
    return Api.login(new_client(api.client.app), username, password)
