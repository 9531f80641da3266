"""`POST /repositories/{id}/batch_imports` and `fonds import`: records referring to each other by
temporary URIs, created in dependency order, all or none."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from tests.factories import make_user
from tests.records.helpers import make_resource
from tests.records.tree_helpers import add_children, titles_in_order
from tests.test_cli import run_cli


@pytest.fixture(params=["in the server", "in a process of its own"], autouse=True)
def validated(request, app):
    """Every test here runs twice: with the records validated in the server, and in the process
    that validates large imports (records/import_validation.py), started before the test."""
    if request.param == "in a process of its own":
        validation = app.state.fonds.records.import_validation
        validation.min_records = 1
        validation.start().result(timeout=120)
    return request.param


def archive(repo: int) -> list[dict]:
    """Given children before parents, so the import must order them itself."""
    base = f"/repositories/{repo}"
    return [
        {
            "jsonmodel_type": "archival_object",
            "uri": f"{base}/archival_objects/import_item",
            "title": "Item",
            "level": "item",
            "resource": {"ref": f"{base}/resources/import_r"},
            "parent": {"ref": f"{base}/archival_objects/import_series"},
        },
        {
            "jsonmodel_type": "archival_object",
            "uri": f"{base}/archival_objects/import_series",
            "title": "Series",
            "level": "series",
            "resource": {"ref": f"{base}/resources/import_r"},
            "subjects": [{"ref": "/subjects/import_s"}],
        },
        {
            "jsonmodel_type": "resource",
            "uri": f"{base}/resources/import_r",
            "title": "Papers",
            "id_0": "IMP-1",
            "level": "collection",
            "subjects": [{"ref": "/subjects/import_s"}],
        },
        {"jsonmodel_type": "subject", "uri": "/subjects/import_s", "title": "Imported topic", "source": "local", "terms": []},
    ]


def count(api, path: str) -> int:
    return len(api.get(path, params={"all_ids": "true"}).json())


def test_a_batch_is_created_in_dependency_order_and_maps_its_uris(api, repo):
    response = api.post(f"/repositories/{repo}/batch_imports", json=archive(repo))
    assert response.status_code == 200, response.text
    saved = response.json()[-1]["saved"]
    assert set(saved) == {
        f"/repositories/{repo}/archival_objects/import_item",
        f"/repositories/{repo}/archival_objects/import_series",
        f"/repositories/{repo}/resources/import_r",
        "/subjects/import_s",
    }
    uri = {key: value[0] for key, value in saved.items()}
    assert all(value[0].endswith(f"/{value[1]}") for value in saved.values())
    item = api.get(uri[f"/repositories/{repo}/archival_objects/import_item"]).json()
    assert item["parent"]["ref"] == uri[f"/repositories/{repo}/archival_objects/import_series"]
    assert item["resource"]["ref"] == uri[f"/repositories/{repo}/resources/import_r"]
    resource = api.get(uri[f"/repositories/{repo}/resources/import_r"], params={"resolve[]": "subjects"}).json()
    assert resource["subjects"][0]["_resolved"]["title"] == "Imported topic"


def test_components_interleaved_over_several_sibling_lists_are_each_appended_in_batch_order(api, repo):
    resource = make_resource(api, repo, id_0="INTERLEAVED")
    add_children(api, resource, ["Existing"])
    [existing] = api.get(f"{resource}/tree/root").json()["precomputed_waypoints"][""]["0"]
    add_children(api, existing["uri"], ["Old 1", "Old 2"])
    base = f"/repositories/{repo}/archival_objects"

    def component(name: str, parent: str | None) -> dict:
        record = {"jsonmodel_type": "archival_object", "uri": f"{base}/import_{name}", "title": name, "level": "file"}
        record["resource"] = {"ref": resource}
        if parent is not None:
            record["parent"] = {"ref": parent if parent.startswith("/") else f"{base}/import_{parent}"}
        return record

    records = [component("S1", None), component("S2", None)]
    records += [component(name, name[0].replace("a", "S1").replace("b", "S2")) for name in ("a1", "b1", "a2", "b2", "a3")]
    records += [component(name, existing["uri"]) for name in ("c1", "c2")]
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    uri = {key.rsplit("_", 1)[1]: value[0] for key, value in response.json()[-1]["saved"].items()}

    assert titles_in_order(api, resource) == ["Existing", "S1", "S2"]
    assert titles_in_order(api, resource, uri["S1"]) == ["a1", "a2", "a3"]
    assert titles_in_order(api, resource, uri["S2"]) == ["b1", "b2"]
    assert titles_in_order(api, resource, existing["uri"]) == ["Old 1", "Old 2", "c1", "c2"]
    # Each took a slot of its own: one moved between two of them stays there.
    moved = api.post(f"{uri['b2']}/parent", params={"parent": uri["S1"].rsplit("/", 1)[1], "position": 2})
    assert moved.status_code == 200, moved.text
    assert titles_in_order(api, resource, uri["S1"]) == ["a1", "a2", "b2", "a3"]

    # A child of another resource's series, named with this resource: refused, nothing kept.
    other = make_resource(api, repo, "Other", id_0="OTHER")
    stray = component("stray", uri["S1"]) | {"resource": {"ref": other}}
    refused = api.post(f"/repositories/{repo}/batch_imports", json=[component("fine", uri["S1"]), stray])
    assert refused.status_code == 400, refused.text
    assert "Parent must belong to the same resource" in json.dumps(refused.json())
    assert titles_in_order(api, resource, uri["S1"]) == ["a1", "a2", "b2", "a3"]


def test_one_bad_record_leaves_nothing_behind(api, repo):
    records = archive(repo)
    records[1]["level"] = "not-a-level-anyone-uses"
    records[1]["dates"] = [{"jsonmodel_type": "date", "date_type": "single"}]  # a date with neither begin nor expression
    before = (count(api, f"/repositories/{repo}/resources"), count(api, "/subjects"))
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 400, response.text
    assert any(path.startswith("batch_import/1/") for path in response.json()["error"])
    assert (count(api, f"/repositories/{repo}/resources"), count(api, "/subjects")) == before


def test_records_referring_to_each_other_in_a_cycle_are_refused_by_their_places(api, repo):
    base = f"/repositories/{repo}"
    item, series, resource, subject = archive(repo)
    series["parent"] = {"ref": item["uri"]}  # the item's parent is the series
    records = [subject, item, resource, series]
    before = (count(api, f"{base}/resources"), count(api, "/subjects"))
    response = api.post(f"{base}/batch_imports", json=records)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {"batch_import": ["Records [1, 3] refer to each other in a cycle: none can be created first"]}
    assert (count(api, f"{base}/resources"), count(api, "/subjects")) == before


def test_refused_batches_name_the_problem(api, repo):
    path = f"/repositories/{repo}/batch_imports"
    cycle = [
        {"jsonmodel_type": "archival_object", "uri": "/a", "title": "A", "parent": {"ref": "/b"}},
        {"jsonmodel_type": "archival_object", "uri": "/b", "title": "B", "parent": {"ref": "/a"}},
    ]
    assert "cycle" in json.dumps(api.post(path, json=cycle).json())
    unknown = api.post(path, json=[{"jsonmodel_type": "spaceship", "title": "x"}])
    assert unknown.status_code == 400 and "batch_import/0/jsonmodel_type" in unknown.json()["error"]
    users = api.post(path, json=[{"jsonmodel_type": "user", "username": "x", "name": "x"}])
    assert users.status_code == 400
    twice = api.post(path, json=[{"jsonmodel_type": "subject", "uri": "/s", "title": "a"}] * 2)
    assert twice.status_code == 400 and "batch_import/1/uri" in twice.json()["error"]
    for body in (b"", b"{}", b"[]", b"[1]", b"not json"):
        answer = api.post(path, content=body)
        assert answer.status_code == 400, (body, answer.text)


def test_each_record_needs_its_own_types_create_permission(api, repo):
    viewer = make_user(api, "batchviewer", groups=[api.group_uri(repo, "repository-viewers")])
    refused = viewer.post(f"/repositories/{repo}/batch_imports", json=archive(repo))
    assert refused.status_code == 403
    assert count(api, f"/repositories/{repo}/resources") == 0


def test_fonds_import_reads_json_lines_and_reports_the_mapping(app, api, repo, settings, tmp_path):
    lines = tmp_path / "archive.ndjson"
    lines.write_text("\n".join(json.dumps(record) for record in archive(repo)) + "\n")
    result = run_cli(settings, "import", str(lines), "--repository", str(repo))
    assert result.exit_code == 0, result.output
    assert "Imported 4 records" in result.output and "/subjects/import_s" in result.output
    # The progress shows both steps, each complete: every record is validated before any is written.
    assert re.search(r"validated\W+4/4", result.output) and re.search(r"written\W+4/4", result.output), result.output
    assert count(api, f"/repositories/{repo}/archival_objects") == 2
    again = run_cli(settings, "import", str(lines), "--repository", str(repo))
    assert again.exit_code == 1 and "Nothing imported" in again.output  # the resource identifier is taken now
    assert count(api, f"/repositories/{repo}/archival_objects") == 2


def test_temporary_uris_that_look_like_created_ones_are_each_replaced_once(api, repo):
    """Temporary URIs naming the ids the batch's records get, swapped: each ref still ends at the
    record that had its temporary URI (never replaced twice)."""
    path = f"/repositories/{repo}/batch_imports"
    probe = api.post(path, json=[{"jsonmodel_type": "subject", "uri": "/subjects/probe", "title": "Probe", "source": "local", "terms": []}])
    next_id = probe.json()[-1]["saved"]["/subjects/probe"][1] + 1
    first, second = f"/subjects/{next_id + 1}", f"/subjects/{next_id}"  # the ids the two subjects get, swapped
    records = [
        {"jsonmodel_type": "subject", "uri": first, "title": "First", "source": "local", "terms": []},
        {"jsonmodel_type": "subject", "uri": second, "title": "Second", "source": "local", "terms": []},
        {"jsonmodel_type": "accession", "title": "Swapped", "id_0": "SWAP-1", "subjects": [{"ref": first}, {"ref": second}]},
    ]
    response = api.post(path, json=records)
    assert response.status_code == 200, response.text
    saved = response.json()[-1]["saved"]
    accession = api.get(
        f"/repositories/{repo}/accessions/{max(api.get(f'/repositories/{repo}/accessions', params={'all_ids': 'true'}).json())}"
    )
    assert [ref["ref"] for ref in accession.json()["subjects"]] == [saved[first][0], saved[second][0]]
    assert api.get(saved[first][0]).json()["title"] == "First"


def test_every_imported_component_gets_its_own_random_uuid_ref_id(api, repo):
    """Hundreds in one batch: more than one read of the system's random source serves."""
    base = f"/repositories/{repo}"
    resource = {"jsonmodel_type": "resource", "uri": f"{base}/resources/import_r", "title": "R", "id_0": "REF-1", "level": "collection"}
    components = [
        {"jsonmodel_type": "archival_object", "uri": f"{base}/archival_objects/import_{n}", "title": f"C{n}", "level": "file"}
        | {"resource": {"ref": resource["uri"]}}
        for n in range(600)
    ]
    response = api.post(f"{base}/batch_imports", json=[resource, *components])
    assert response.status_code == 200, response.text
    ids = [value[1] for key, value in response.json()[-1]["saved"].items() if "/archival_objects/" in key]
    records = [
        record
        for start in range(0, len(ids), 9)
        for record in api.get(f"{base}/archival_objects", params={"id_set": ",".join(map(str, ids[start : start + 9]))}).json()
    ]
    ref_ids = [uuid.UUID(record["ref_id"]) for record in records]
    assert len(ref_ids) == 600 and len(set(ref_ids)) == 600
    assert all(
        ref_id.version == 4 and ref_id.variant == uuid.RFC_4122 and ref_id.hex == record["ref_id"]
        for ref_id, record in zip(ref_ids, records)
    )


def validating_with(monkeypatch, meanwhile):
    """Imports run `meanwhile()` once their records are validated, before their write."""
    from fonds.records import imports

    validated = imports._validated

    def then_meanwhile(*args, **kwargs):
        items = validated(*args, **kwargs)
        meanwhile()
        return items

    monkeypatch.setattr(imports, "_validated", then_meanwhile)


def test_a_record_created_while_an_import_is_validated_leaves_every_ref_at_its_own_record(api, repo, monkeypatch):
    """The import's records are validated before their ids are reserved, outside the write lock
    (their refs to each other point at stand-ins meanwhile): a create meanwhile gets an id before
    theirs, and every ref of the import ends at its own record."""
    created = []

    def create_a_subject():
        body = {"jsonmodel_type": "subject", "title": "Meanwhile", "source": "local", "terms": []}
        response = api.post("/subjects", json=body)
        assert response.status_code == 200, response.text
        created.append(response.json())

    validating_with(monkeypatch, create_a_subject)
    response = api.post(f"/repositories/{repo}/batch_imports", json=archive(repo))
    assert response.status_code == 200, response.text
    saved = {key: value[0] for key, value in response.json()[-1]["saved"].items()}
    assert created[0]["id"] < int(saved["/subjects/import_s"].rsplit("/", 1)[1])
    assert api.get(saved["/subjects/import_s"]).json()["title"] == "Imported topic"
    assert api.get(created[0]["uri"]).json()["title"] == "Meanwhile"
    series = api.get(saved[f"/repositories/{repo}/archival_objects/import_series"]).json()
    assert series["subjects"] == [{"ref": saved["/subjects/import_s"]}]


def test_an_import_whose_value_lists_change_while_it_is_validated_is_checked_again_and_stored(api, repo, monkeypatch):
    from fonds.records import value_lists

    service = api.client.app.state.fonds.records

    def change_the_lists():
        with service.db.write() as conn:
            value_lists.bump_generation(conn)

    validating_with(monkeypatch, change_the_lists)
    response = api.post(f"/repositories/{repo}/batch_imports", json=archive(repo))
    assert response.status_code == 200, response.text
    saved = {key: value[0] for key, value in response.json()[-1]["saved"].items()}
    item = api.get(saved[f"/repositories/{repo}/archival_objects/import_item"]).json()
    assert (item["title"], item["level"]) == ("Item", "item")
    assert item["parent"]["ref"] == saved[f"/repositories/{repo}/archival_objects/import_series"]
