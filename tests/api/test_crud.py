"""The generated CRUD routes of every registered type, through HTTP (decisions.md, "Records")."""

from __future__ import annotations

import re

import pytest

from tests.factories import CRUD_TYPES, collection_path, label_field, minimal, optional_field

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
AUDIT_TIMES = ("created", "modified", "create_time", "system_mtime", "user_mtime")
ENVELOPE = ("jsonmodel_type", "uri", "lock_version", *AUDIT_TIMES, "created_by", "last_modified_by")
WRITE_KEYS = {"status", "id", "lock_version", "stale", "uri", "warnings"}
STALE = {"error": "The record you tried to update has been modified since you fetched it."}
NO_LOCK = {"error": "You must provide a lock_version in your request"}
DENIED = {"error": "Access denied"}

PAGED_TYPES = [t for t in CRUD_TYPES if not t.list_is_plain_array]
REPO_TYPES = [t for t in CRUD_TYPES if t.repo_scoped]
BY_NAME = {t.name: t for t in CRUD_TYPES}


def by_name(types):
    return pytest.mark.parametrize("rtype", types, ids=lambda t: t.name)


all_types = by_name(CRUD_TYPES)


def check_write(body: dict, status: str, record_id: int, lock_version: int, uri: str) -> None:
    assert set(body) == WRITE_KEYS, body
    assert (body["status"], body["id"], body["lock_version"], body["uri"]) == (status, record_id, lock_version, uri)
    assert body["stale"] in (None, True)
    assert body["warnings"] == [] or isinstance(body["warnings"], dict)


def new_record(api, rtype, repo, **extra) -> dict:
    """Create a record and return it as read back."""
    created = api.create(collection_path(rtype, repo), {**api.minimal(rtype, repo), **extra})
    response = api.get(created["uri"])
    assert response.status_code == 200, response.text
    return response.json()


def record_id(record: dict) -> int:
    return int(record["uri"].rsplit("/", 1)[1])


@all_types
def test_minimal_create_answers_created(api, repo, rtype):
    response = api.post(collection_path(rtype, repo), json=api.minimal(rtype, repo))
    assert response.status_code == 200, response.text
    body = response.json()
    check_write(body, "Created", body["id"], 0, rtype.uri(body["id"], repo))
    assert isinstance(body["id"], int) and body["id"] > 0


@all_types
def test_read_back_carries_the_envelope_and_ignores_client_values(api, repo, rtype):
    forged = dict.fromkeys(AUDIT_TIMES, "1999-01-01T00:00:00Z")
    forged.update(
        created_by="mallory", last_modified_by="mallory", lock_version=7, uri="/elsewhere/99", repository={"ref": "/repositories/99"}
    )
    record = new_record(api, rtype, repo, **forged)
    assert all(key in record for key in ENVELOPE), sorted(record)
    assert record["jsonmodel_type"] == rtype.name
    assert record["uri"] == rtype.uri(record_id(record), repo)
    assert record["lock_version"] == 0
    assert record["created_by"] == record["last_modified_by"] == "admin"
    for key in AUDIT_TIMES:
        assert TIMESTAMP.match(record[key]), (key, record[key])
        assert record[key] != "1999-01-01T00:00:00Z"
    assert record["created"] == record["modified"] == record["create_time"]
    if rtype.repo_scoped:
        assert record["repository"] == {"ref": f"/repositories/{repo}"}
    else:
        assert "repository" not in record


@by_name(PAGED_TYPES)
def test_list_pages(api, repo, rtype):
    path = collection_path(rtype, repo)
    empty = api.get(path, params={"page": 1})
    assert empty.status_code == 200
    assert empty.json() == {"first_page": 1, "last_page": 1, "this_page": 1, "total": 0, "results": []}
    record = new_record(api, rtype, repo)
    listed = api.get(path, params={"page": 1}).json()
    assert listed == {"first_page": 1, "last_page": 1, "this_page": 1, "total": 1, "results": [record]}


@by_name([t for t in CRUD_TYPES if t.list_is_plain_array])
def test_plain_array_listings(api, repo, rtype):
    record = new_record(api, rtype, repo)
    for params in ({}, {"page": 1}, {"page": "abc", "page_size": 0}):
        response = api.get(collection_path(rtype, repo), params=params)
        assert response.status_code == 200, response.text
        listed = response.json()
        assert isinstance(listed, list)
        assert record in listed


@by_name(PAGED_TYPES)
def test_all_ids_is_a_bare_array_of_ids(api, repo, rtype):
    ids = [record_id(new_record(api, rtype, repo)) for _ in range(3)]
    response = api.get(collection_path(rtype, repo), params={"all_ids": "true"})
    assert response.status_code == 200
    assert response.json() == ids


@by_name(PAGED_TYPES)
@pytest.mark.parametrize("form", ["comma", "brackets"])
def test_id_set_returns_those_records(api, repo, rtype, form):
    first, _, third = (new_record(api, rtype, repo) for _ in range(3))
    wanted = [record_id(first), record_id(third), 987654]
    params = {"id_set": ",".join(map(str, wanted))} if form == "comma" else {"id_set[]": wanted}
    response = api.get(collection_path(rtype, repo), params=params)
    assert response.status_code == 200, response.text
    assert response.json() == [first, third]


@all_types
def test_update_replaces_the_whole_record(api, repo, rtype):
    field, value = optional_field(rtype)
    record = new_record(api, rtype, repo, **{field: value})
    assert record[field] == value
    new_label = f"Renamed {rtype.name}"
    changed = {**record, label_field(rtype): new_label, "uri": "/somewhere/else"}
    del changed[field]
    response = api.post(record["uri"], json=changed)
    assert response.status_code == 200, response.text
    check_write(response.json(), "Updated", record_id(record), 1, record["uri"])
    reread = api.get(record["uri"]).json()
    assert reread[label_field(rtype)] == new_label
    assert field not in reread
    assert reread["lock_version"] == 1
    assert reread["uri"] == record["uri"]
    assert (reread["created"], reread["create_time"], reread["created_by"]) == (record["created"], record["create_time"], "admin")
    assert TIMESTAMP.match(reread["modified"])


@all_types
def test_a_record_as_read_posts_back_without_unknown_properties(api, repo, rtype):
    record = new_record(api, rtype, repo, **dict([optional_field(rtype)]))
    response = api.post(record["uri"], json=record)
    assert response.status_code == 200, response.text
    warnings = response.json()["warnings"]
    unknown = {path: msgs for path, msgs in (warnings or {}).items() if "Unknown property, ignored" in msgs}
    assert unknown == {}


@all_types
def test_stale_and_missing_lock_version_conflict(api, repo, rtype):
    record = new_record(api, rtype, repo)
    assert api.post(record["uri"], json=record).status_code == 200
    stale = api.post(record["uri"], json=record)
    assert (stale.status_code, stale.json()) == (409, STALE)
    missing = api.post(record["uri"], json={key: value for key, value in record.items() if key != "lock_version"})
    assert (missing.status_code, missing.json()) == (409, NO_LOCK)
    assert api.get(record["uri"]).json()["lock_version"] == 1


@all_types
def test_delete_then_not_found(api, repo, rtype):
    record = new_record(api, rtype, repo)
    rid = record_id(record)
    response = api.delete(record["uri"])
    assert (response.status_code, response.json()) == (200, {"status": "Deleted", "id": rid})
    gone = {"error": f"{rtype.model_name} not found"}
    for response in (api.get(record["uri"]), api.delete(record["uri"]), api.post(record["uri"], json=record)):
        assert (response.status_code, response.json()) == (404, gone)


@all_types
def test_ids_are_never_reused(api, repo, rtype):
    path = collection_path(rtype, repo)
    api.create(path, api.minimal(rtype, repo))
    last = api.create(path, api.minimal(rtype, repo))
    assert api.delete(last["uri"]).status_code == 200
    assert api.create(path, api.minimal(rtype, repo))["id"] > last["id"]


@all_types
def test_anonymous_is_denied_everything(api, client, repo, rtype):
    record = new_record(api, rtype, repo)
    path = collection_path(rtype, repo)
    attempts = [
        client.get(path, params={"page": 1}),
        client.post(path, json=minimal(rtype)),
        client.get(record["uri"]),
        client.post(record["uri"], json=record),
        client.delete(record["uri"]),
    ]
    assert [(r.status_code, r.json()) for r in attempts] == [(403, DENIED)] * 5
    assert api.get(record["uri"]).json() == record


@all_types
def test_jsonmodel_type_is_required_and_must_match(api, repo, rtype):
    path = collection_path(rtype, repo)
    body = minimal(rtype)
    del body["jsonmodel_type"]
    missing = api.post(path, json=body)
    assert missing.status_code == 400
    assert missing.json()["error"] == {"jsonmodel_type": ["Property is required but was missing"]}
    other = "subject" if rtype.name != "subject" else "accession"
    wrong = api.post(path, json={**body, "jsonmodel_type": other})
    assert wrong.status_code == 400
    assert list(wrong.json()["error"]) == ["jsonmodel_type"]
    assert other in wrong.json()["error"]["jsonmodel_type"][0]


@all_types
@pytest.mark.parametrize("blank", ["", None])
def test_blank_identifying_field_counts_as_missing(api, repo, rtype, blank):
    response = api.post(collection_path(rtype, repo), json={**minimal(rtype), label_field(rtype): blank})
    assert response.status_code == 400, response.text
    assert label_field(rtype) in response.json()["error"]


def test_empty_optional_values_are_dropped(api, repo):
    record = new_record(api, BY_NAME["accession"], repo, content_description="", provenance=None, dates=[], extents=[{}])
    assert "content_description" not in record and "provenance" not in record
    assert record.get("extents", []) == []


def test_unknown_properties_are_dropped_and_reported(api, repo):
    body = {
        "jsonmodel_type": "accession",
        "title": "Letters",
        "id_0": "U1",
        "colour": "blue",
        "dates": [{"label": "creation", "date_type": "single", "begin": "1901", "mood": "calm"}],
    }
    response = api.post(f"/repositories/{repo}/accessions", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["warnings"] == {"colour": ["Unknown property, ignored"], "dates/0/mood": ["Unknown property, ignored"]}
    record = api.get(response.json()["uri"]).json()
    assert "colour" not in record
    assert record["dates"] == [{"jsonmodel_type": "date", "label": "creation", "date_type": "single", "begin": "1901"}]


@by_name(REPO_TYPES)
def test_the_global_repository_holds_no_records(api, repo, rtype):
    response = api.post(collection_path(rtype, 1), json=api.minimal(rtype, repo))
    assert (response.status_code, response.json()) == (400, {"error": "The global repository cannot contain archival records"})


@by_name(REPO_TYPES)
def test_a_repository_that_does_not_exist(api, repo, rtype):
    missing = {"error": {"repo_id": ["Failed validation -- The Repository must exist"]}}
    path = collection_path(rtype, 999)
    for response in (api.post(path, json=api.minimal(rtype, repo)), api.get(path, params={"page": 1}), api.get(f"{path}/1")):
        assert (response.status_code, response.json()) == (400, missing)


@by_name(REPO_TYPES)
def test_records_are_not_reachable_through_another_repository(api, repo, rtype):
    other = api.create_repository("OTHER")
    record = new_record(api, rtype, repo)
    foreign = collection_path(rtype, other) + f"/{record_id(record)}"
    gone = {"error": f"{rtype.model_name} not found"}
    for response in (api.get(foreign), api.post(foreign, json=record), api.delete(foreign)):
        assert (response.status_code, response.json()) == (404, gone)
    assert api.get(record["uri"]).json() == record
    assert api.get(collection_path(rtype, other), params={"all_ids": 1}).json() == []


def test_repository_listing_hides_the_global_repository(api, repo):
    listed = api.get("/repositories").json()
    assert [r["uri"] for r in listed] == [f"/repositories/{repo}"]
    assert all(r["repo_code"] != "_archivesspace" for r in listed)


@pytest.mark.parametrize(
    ("path", "message", "readable"),
    [
        # The global repository is not an ordinary repository: not readable either (tests/api/test_global_repository.py).
        ("/repositories/1", "Record deletion failed: /repositories/1 is maintained by the system", 404),
        ("/vocabularies/1", "Record deletion failed: /vocabularies/1 is maintained by the system", 200),
    ],
)
def test_system_records_cannot_be_deleted(api, path, message, readable):
    response = api.delete(path)
    assert (response.status_code, response.json()) == (409, {"error": message})
    assert api.get(path).status_code == readable


def duplicate(api, path: str, body: dict) -> dict:
    api.create(path, body)
    response = api.post(path, json=body)
    assert response.status_code == 400, response.text
    return response.json()


def test_accession_identifier_is_unique_within_a_repository(api, repo):
    body = {"jsonmodel_type": "accession", "title": "Gift", "id_0": "2024.001"}
    error = duplicate(api, f"/repositories/{repo}/accessions", body)
    assert error["error"] == {"id_0": ["That ID is already in use"]}
    other = api.create_repository("ELSEWHERE")
    assert api.post(f"/repositories/{other}/accessions", json=body).status_code == 200
    assert api.post(f"/repositories/{repo}/accessions", json={**body, "id_1": "b"}).status_code == 200


def test_repo_code_is_unique(api, repo):
    body = {"jsonmodel_type": "repository", "repo_code": "MSS", "name": "Another"}
    response = api.post("/repositories", json=body)
    assert (response.status_code, response.json()["error"]) == (400, {"repo_code": ["short name already in use"]})


def test_barcode_is_unique_within_a_repository(api, repo):
    body = {"jsonmodel_type": "top_container", "indicator": "1", "barcode": "39002"}
    error = duplicate(api, f"/repositories/{repo}/top_containers", body)
    assert error["error"] == {"barcode": ["A barcode must be unique within a repository"]}
    other = api.create_repository("ELSEWHERE")
    assert api.post(f"/repositories/{other}/top_containers", json=body).status_code == 200


def test_location_profile_name_is_unique(api):
    error = duplicate(api, "/location_profiles", {"jsonmodel_type": "location_profile", "name": "Standard shelf"})
    assert error["error"] == {"name": ["Location profile name not unique"]}


def test_update_keeps_uniqueness(api, repo):
    path = f"/repositories/{repo}/accessions"
    api.create(path, {"jsonmodel_type": "accession", "title": "A", "id_0": "X1"})
    second = api.get(api.create(path, {"jsonmodel_type": "accession", "title": "B", "id_0": "X2"})["uri"]).json()
    response = api.post(second["uri"], json={**second, "id_0": "X1"})
    assert (response.status_code, response.json()["error"]) == (400, {"id_0": ["That ID is already in use"]})
    assert api.post(second["uri"], json=second).status_code == 200
