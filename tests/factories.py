"""Helpers that build the minimal valid record of each registered type, and an API wrapper."""

from __future__ import annotations

import contextlib
import itertools
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from fonds.model import REGISTRY
from fonds.records.registry import RecordType
from fonds.records.schemas import load_schema_files
from fonds.records.types.archival import IDENTIFIER_PARTS
from fonds.records.value_lists import load_seed

ADMIN_PASSWORD = "test-admin-password"
USER_PASSWORD = "user-password-1"  # what `make_user` gives a user unless told otherwise
_counter = itertools.count(1)

# Types with generated CRUD routes, for parametrised tests.
CRUD_TYPES = [t for t in REGISTRY if {"list", "create", "read", "update", "delete"} <= set(t.actions)]
SCHEMAS = load_schema_files()
ENUMERATIONS = load_seed()  # the lists a new database starts with
# Properties whose value must fit others (identifier parts must not leave gaps): never sample data.
LINKED_PROPERTIES = frozenset(IDENTIFIER_PARTS)

# The generic tests cover a new type with no entry here: its minimal record is derived from its
# declaration and schema (`minimal`), as is the optional field the update tests drop
# (`optional_field`). Add an entry only for a type whose derived record the service refuses.
MINIMAL_OVERRIDES: dict[str, Callable[[int], dict]] = {
    # Agents need one name, whose required fields depend on the agent type.
    "agent_person": lambda n: {"names": [{"primary_name": f"Person {n}", "name_order": "inverted"}]},
    "agent_corporate_entity": lambda n: {"names": [{"primary_name": f"Corporate entity {n}"}]},
    "agent_family": lambda n: {"names": [{"family_name": f"Family {n}"}]},
    "agent_software": lambda n: {"names": [{"software_name": f"Software {n}"}]},
    # An event has a date or a timestamp (exactly one); `Api.minimal` adds its linked agent and record.
    "event": lambda n: {"event_type": "accession", "timestamp": f"2024-01-{n % 28 + 1:02d}T10:00:00Z"},
    # A location needs a barcode, a classification or coordinate 1 (ArchivesSpace's location rule).
    "location": lambda n: {"building": f"building {n}", "barcode": f"barcode{n}"},
    # Dimensions must be numbers.
    "container_profile": lambda n: {
        "name": f"container_profile {n}",
        "dimension_units": "inches",
        "extent_dimension": "width",
        "height": "10",
        "width": "12.5",
        "depth": "15.25",
    },
}


def label_field(record_type: RecordType) -> str:
    """The field naming a record of this type: the first of its first required-one-of, else its
    schema's first required field (an agent's names, an event's type)."""
    if record_type.minimum:
        return record_type.minimum[0].fields[0]
    return (SCHEMAS[record_type.name].get("required") or ["title"])[0]


def _required_fields(record_type: RecordType) -> list[str]:
    """Required fields with plain values (required references are `required_refs`)."""
    schema = SCHEMAS[record_type.name]
    fields = [*(one.fields[0] for one in record_type.minimum), *schema.get("required", [])]
    return [f for f in dict.fromkeys(fields) if f not in required_links(record_type) and "x-ref" not in schema["properties"].get(f, {})]


def required_links(record_type: RecordType) -> dict[str, dict]:
    """Required arrays of refs (an event's linked_agents and linked_records): field -> item schema.
    Their targets must exist, so `Api.minimal` creates them."""
    schema = SCHEMAS[record_type.name]
    found = {}
    for field in schema.get("required", []):
        definition = schema["properties"].get(field, {})
        if definition.get("type") == "array" and "x-ref" in definition.get("items", {}):
            found[field] = definition["items"]
    return found


def sample_value(record_type: RecordType, field: str, n: int):
    """A value of `field` valid for its schema and unique to `n`."""
    definition = SCHEMAS[record_type.name]["properties"][field]
    if "x-enum" in definition:
        values = ENUMERATIONS[definition["x-enum"]]["values"]
        return "local" if "local" in values else values[0]
    if definition.get("type") == "integer":
        return n
    return f"{record_type.name} {n}" if field == label_field(record_type) else f"{field}{n}"


def minimal(record_type: RecordType) -> dict:
    """The least a client must send to create a record of this type (decisions.md): the first
    field of each of its required-one-ofs and its schema's required fields, each with a unique
    value."""
    n = next(_counter)
    if record_type.name in MINIMAL_OVERRIDES:
        return {"jsonmodel_type": record_type.name, **MINIMAL_OVERRIDES[record_type.name](n)}
    return {"jsonmodel_type": record_type.name, **{f: sample_value(record_type, f, n) for f in _required_fields(record_type)}}


def _is_plain_text(definition: dict) -> bool:
    special = {"x-enum", "x-ref", "readOnly", "format", "pattern", "enum", "const"}
    return definition.get("type") == "string" and not special & set(definition)


def optional_field(record_type: RecordType) -> tuple[str, str]:
    """A free-text field the type accepts and does not need (the update tests leave it out)."""
    schema = SCHEMAS[record_type.name]
    taken = {*_required_fields(record_type), *schema.get("x-aspace-required", []), *LINKED_PROPERTIES}
    taken |= {key.field for key in record_type.unique_keys}
    for field, definition in schema["properties"].items():
        if field not in taken and _is_plain_text(definition):
            return field, f"{field} {next(_counter)}"
    raise AssertionError(f"{record_type.name} has no optional free-text field: teach tests/factories.py")


def required_refs(record_type: RecordType) -> dict[str, str]:
    """The references required (a digital object component's digital object) or that ArchivesSpace
    requires (an archival object's resource): field -> target type."""
    schema = SCHEMAS[record_type.name]
    found = {}
    for field in [*schema.get("required", []), *schema.get("x-aspace-required", [])]:
        targets = [name for name in schema["properties"].get(field, {}).get("x-ref", []) if name in REGISTRY.types]
        if targets:
            found[field] = targets[0]
    return found


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

    def minimal(self, record_type: RecordType, repo_id: int | None) -> dict:
        """The minimal record, once the records it must refer to exist (created in `repo_id`)."""
        record = minimal(record_type)
        for field, target in required_refs(record_type).items():
            record[field] = {"ref": self.create_minimal(REGISTRY[target], repo_id)["uri"]}
        for field, item in required_links(record_type).items():
            target = next(name for name in item["x-ref"] if name in REGISTRY.types)
            link = {"ref": self.create_minimal(REGISTRY[target], repo_id)["uri"]}
            for key in item.get("required", []):
                if key != "ref":
                    link[key] = ENUMERATIONS[item["properties"][key]["x-enum"]]["values"][0]
            record[field] = [link]
        return record

    def create_minimal(self, record_type: RecordType, repo_id: int | None) -> dict:
        """Create the minimal record, and first the records it must refer to (in `repo_id`)."""
        return self.create(collection_path(record_type, repo_id), self.minimal(record_type, repo_id))

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


@contextlib.contextmanager
def running_app(settings):
    """A second app on the same database (another worker, a restart), its lifespan started
    (database, indexer) and stopped at the end."""
    from fonds.app import create_app

    with new_client(create_app(settings)) as client:
        yield client.app


def make_user(api: Api, username: str, password: str = USER_PASSWORD, groups: list[str] = (), **fields) -> Api:
    """Create a user (as `api`, normally the admin) in `groups` and return an Api logged in as them.

    `groups` are group URIs, or (repo_id, group_code) pairs such as (repo, "repository-viewers")."""
    uris = [group if isinstance(group, str) else api.group_uri(*group) for group in groups]
    api.create_user(username, password, uris, **fields)
    return Api.login(new_client(api.client.app), username, password)
