"""A unique value taken by another transaction between the pre-check and the write (a race of
two writers) is refused by the database; the client gets the pre-check's 400, never a 500. The
race is forced by switching the pre-check off, so the database's constraint decides."""

from __future__ import annotations

import pytest

from fonds.records import uniqueness
from tests.records.helpers import count_rows


@pytest.fixture
def racing(monkeypatch):
    """Every write behaves as if another transaction took its unique value after its pre-check."""
    monkeypatch.setattr(uniqueness, "check", lambda *args, **kwargs: None)


def test_a_racing_create_gets_the_pre_checks_400(api, repo):
    path = f"/repositories/{repo}/top_containers"
    first = api.create(path, {"jsonmodel_type": "top_container", "indicator": "1", "barcode": "B-1"})
    checked = api.post(path, json={"jsonmodel_type": "top_container", "indicator": "2", "barcode": "B-1"})
    assert checked.status_code == 400
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(uniqueness, "check", lambda *args, **kwargs: None)
        raced = api.post(path, json={"jsonmodel_type": "top_container", "indicator": "2", "barcode": "B-1"})
    assert raced.status_code == 400, raced.text
    assert raced.json() == checked.json()
    assert raced.json()["error"] == {"barcode": ["A barcode must be unique within a repository"]}
    assert api.get(path, params={"all_ids": "true"}).json() == [first["id"]]


def test_a_racing_subject_names_the_conflicting_record(api, racing):
    body = {"jsonmodel_type": "subject", "title": "Maps", "source": "local"}
    first = api.create("/subjects", body)
    raced = api.post("/subjects", json=body)
    assert raced.status_code == 400, raced.text
    assert raced.json()["error"] == {"terms": ["Subject must be unique"], "conflicting_record": [first["uri"]]}


def test_a_racing_update_gets_the_400_and_changes_nothing(app, api, repo, racing):
    path = f"/repositories/{repo}/accessions"
    api.create(path, {"jsonmodel_type": "accession", "title": "One", "id_0": "2024", "id_1": "1"})
    second = api.create(path, {"jsonmodel_type": "accession", "title": "Two", "id_0": "2024", "id_1": "2"})
    record = api.get(second["uri"]).json()
    raced = api.post(second["uri"], json={**record, "id_1": "1"})
    assert raced.status_code == 400, raced.text
    assert raced.json()["error"] == {"id_0": ["That ID is already in use"]}
    assert api.get(second["uri"]).json() == record
    assert count_rows(app, "accession") == 2
