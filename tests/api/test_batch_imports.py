"""`POST /repositories/{id}/batch_imports` and `fonds import`: records referring to each other by
temporary URIs, created in dependency order, all or none."""

from __future__ import annotations

import json
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from fonds.app import create_app
from fonds.records import import_validation
from fonds.records.id_leases import IdLeases
from tests.factories import ADMIN_PASSWORD, Api, make_user
from tests.records.helpers import instance, make_resource, make_subject
from tests.records.tree_helpers import add_children, titles_in_order
from tests.test_cli import run_cli

IN_THE_SERVER, VALIDATED_ELSEWHERE, WRITTEN_ELSEWHERE = "in the server", "in a process of its own", "by the processes writing imports"


@pytest.fixture(params=[IN_THE_SERVER, VALIDATED_ELSEWHERE, WRITTEN_ELSEWHERE], autouse=True)
def validated(request, app):
    """Every test here runs three times: with the records validated and written in the server;
    validated in the process that validates large imports (records/import_validation.py) and
    written in the server, as with a database in memory; and read, validated and written by the
    processes writing large imports, as on a SQLite file and on PostgreSQL. The processes are
    started before the test."""
    validation = app.state.fonds.records.import_validation
    if request.param == WRITTEN_ELSEWHERE and validation.writer is None:
        pytest.skip("imports are written by processes of their own on a database file or server only")
    if request.param == VALIDATED_ELSEWHERE:
        validation.writer = None
    if request.param != IN_THE_SERVER:
        validation.min_records = 1
        validation.start().result(timeout=120)
    return request.param


@pytest.fixture
def written_here(validated):
    """For a test that changes the server's own import path: imports written in the server."""
    if validated == WRITTEN_ELSEWHERE:
        pytest.skip("the import is written by another process, which the test cannot change")


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


def test_every_imported_component_gets_its_own_time_ordered_uuid_ref_id(api, repo):
    """Hundreds in one batch (more than one read of the system's random source serves): each a
    version 7 UUID (RFC 9562) of the time it was made, later ones sorting later."""
    base = f"/repositories/{repo}"
    resource = {"jsonmodel_type": "resource", "uri": f"{base}/resources/import_r", "title": "R", "id_0": "REF-1", "level": "collection"}
    components = [
        {"jsonmodel_type": "archival_object", "uri": f"{base}/archival_objects/import_{n}", "title": f"C{n}", "level": "file"}
        | {"resource": {"ref": resource["uri"]}}
        for n in range(600)
    ]
    response = api.post(f"{base}/batch_imports", json=[resource, *components])
    assert response.status_code == 200, response.text
    ids = sorted(value[1] for key, value in response.json()[-1]["saved"].items() if "/archival_objects/" in key)
    records = [
        record
        for start in range(0, len(ids), 9)
        for record in api.get(f"{base}/archival_objects", params={"id_set": ",".join(map(str, ids[start : start + 9]))}).json()
    ]
    assert [record["uri"] for record in records] == [f"{base}/archival_objects/{i}" for i in ids]
    ref_ids = [uuid.UUID(record["ref_id"]) for record in records]
    assert len(ref_ids) == 600 and len(set(ref_ids)) == 600
    assert all(
        ref_id.version == 7 and ref_id.variant == uuid.RFC_4122 and ref_id.hex == record["ref_id"]
        for ref_id, record in zip(ref_ids, records)
    )
    assert ref_ids == sorted(ref_ids)  # made in the order the records were created
    # The first 48 bits: milliseconds since 1970, when the id was made (ids are made ahead, 256
    # at a time, so maybe by an earlier test of this process).
    made_at = [(ref_id.int >> 80) / 1000 for ref_id in ref_ids]
    assert time.time() - 3600 <= made_at[0] and made_at[-1] <= time.time() + 1


def validating_with(monkeypatch, meanwhile):
    """Imports run `meanwhile()` once their records are validated, before their write."""
    from fonds.records import imports

    validated = imports._validated

    def then_meanwhile(*args, **kwargs):
        items = validated(*args, **kwargs)
        meanwhile()
        return items

    monkeypatch.setattr(imports, "_validated", then_meanwhile)


@pytest.mark.usefixtures("written_here")
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


@pytest.mark.usefixtures("written_here")
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


def import_subjects(api, repo: int, prefix: str, n: int) -> list[int]:
    """The ids of `n` subjects imported in one batch, in the order given."""
    records = [
        {"jsonmodel_type": "subject", "uri": f"/subjects/{prefix}{i}", "title": f"{prefix} {i}", "source": "local", "terms": []}
        for i in range(n)
    ]
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    saved = response.json()[-1]["saved"]
    return [saved[f"/subjects/{prefix}{i}"][1] for i in range(n)]


@pytest.fixture
def leases_from_two_records(monkeypatch):
    """Ids reserved ahead from an import of two records on (`IdLeases`), not five hundred."""
    monkeypatch.setattr(IdLeases, "LEAST", 2)


@pytest.mark.usefixtures("leases_from_two_records", "written_here")
def test_ids_reserved_ahead_by_an_import_go_to_the_next_and_to_no_other_writer(app, api, repo):
    first = import_subjects(api, repo, "first", 3)
    created = int(make_subject(api, "Single").rsplit("/", 1)[1])
    second = import_subjects(api, repo, "second", 3)
    third = import_subjects(api, repo, "third", 4)  # more than the second import left reserved
    ids = first + [created] + second + third
    assert len(set(ids)) == len(ids)
    assert second == list(range(second[0], second[0] + 3)) and third == sorted(third)
    if app.state.fonds.db.kind == "sqlite":
        # The create was handed an id past those the first import reserved for the second.
        assert first[-1] < second[0] < created
    for i, subject in enumerate(second):
        assert api.get(f"/subjects/{subject}").json()["title"] == f"second {i}"


@pytest.mark.usefixtures("leases_from_two_records", "written_here")  # LEAST=2 reaches the server only
def test_an_import_refused_as_it_is_validated_leaves_the_ids_reserved_ahead_to_the_next(api, repo):
    first = import_subjects(api, repo, "first", 3)
    refused = [{"jsonmodel_type": "subject", "uri": f"/subjects/r{i}", "title": f"R {i}", "source": "local", "terms": []} for i in range(3)]
    refused[2]["terms"] = "not a list"
    answer = api.post(f"/repositories/{repo}/batch_imports", json=refused)
    assert answer.status_code == 400 and "batch_import/2/terms" in answer.json()["error"], answer.text
    assert import_subjects(api, repo, "third", 3) == list(range(first[-1] + 1, first[-1] + 4))


@pytest.mark.usefixtures("leases_from_two_records", "written_here")  # LEAST=2 reaches the server only
def test_ids_reserved_ahead_by_a_refused_import_or_a_stopped_server_are_never_handed_out_twice(app, api, repo, settings):
    first = import_subjects(api, repo, "first", 3)
    refused = archive(repo)
    refused[2]["subjects"].append({"ref": "/subjects/999999999"})
    answer = api.post(f"/repositories/{repo}/batch_imports", json=refused)
    assert answer.status_code == 400 and "non-existent" in answer.text  # refused by the write
    second = import_subjects(api, repo, "second", 3)
    # A server started anew on the same database knows nothing of what the last one reserved ahead.
    with TestClient(create_app(settings)) as client:
        again = Api.login(client, "admin", ADMIN_PASSWORD)
        third = import_subjects(again, repo, "third", 3)
        created = int(make_subject(again, "Single").rsplit("/", 1)[1])
    ids = first + second + third + [created]
    assert len(set(ids)) == len(ids)
    assert [api.get(f"/subjects/{i}").status_code for i in ids] == [200] * len(ids)


@pytest.mark.usefixtures("leases_from_two_records", "written_here")  # LEAST=2 reaches the server only
def test_an_import_given_the_ids_reserved_ahead_refers_to_its_own_records_by_the_uris_they_get(api, repo):
    """In the process validating imports, such an import's records get their URIs as they are validated."""
    base = f"/repositories/{repo}"
    for n in range(3):  # the first reserves ahead, the second and third take what the one before reserved
        records = archive(repo)
        records[2]["id_0"] = f"IMP-{n}"
        records[3]["title"] = f"Imported topic {n}"
        response = api.post(f"{base}/batch_imports", json=records)
        assert response.status_code == 200, response.text
        uri = {temporary: created[0] for temporary, created in response.json()[-1]["saved"].items()}
        item = api.get(uri[f"{base}/archival_objects/import_item"]).json()
        series = api.get(uri[f"{base}/archival_objects/import_series"], params={"resolve[]": "subjects"}).json()
        resource = uri[f"{base}/resources/import_r"]
        assert item["parent"]["ref"] == series["uri"] and item["resource"]["ref"] == series["resource"]["ref"] == resource
        assert series["subjects"][0]["_resolved"]["title"] == f"Imported topic {n}"
        assert titles_in_order(api, resource) == ["Series"] and titles_in_order(api, resource, series["uri"]) == ["Item"]


def collection(repo: int, tag: str, components: int) -> list[dict]:
    """A subject, a resource and its components: a series, and files under it referring to the subject."""
    base = f"/repositories/{repo}"
    subject = {"jsonmodel_type": "subject", "uri": f"/subjects/{tag}", "title": f"Topic {tag}", "source": "local", "terms": []}
    resource = {"jsonmodel_type": "resource", "uri": f"{base}/resources/{tag}", "title": tag, "id_0": tag, "level": "collection"}
    series = {"jsonmodel_type": "archival_object", "uri": f"{base}/archival_objects/{tag}_s", "title": "Series", "level": "series"}
    files = [
        {"jsonmodel_type": "archival_object", "uri": f"{base}/archival_objects/{tag}_{n}", "title": f"File {n}", "level": "file"}
        | {"parent": {"ref": series["uri"]}, "subjects": [{"ref": subject["uri"]}]}
        for n in range(components - 1)
    ]
    return [subject, resource, *[component | {"resource": {"ref": resource["uri"]}} for component in [series, *files]]]


def test_imports_large_enough_to_reserve_ids_ahead_refer_to_their_own_records_among_creates(api, repo):
    """Imports of IdLeases.LEAST records and more reserve ids ahead for the ones after them
    (by the server, or by each process writing imports), with single creates in between."""
    imported, created = [], []
    for n in range(4):
        tag = f"big{n}"
        response = api.post(f"/repositories/{repo}/batch_imports", json=collection(repo, tag, IdLeases.LEAST))
        assert response.status_code == 200, response.text
        saved = response.json()[-1]["saved"]
        imported.append((tag, saved))
        created.append(make_subject(api, f"Single {n}"))
    ids = [(key.split("/")[-2], value[1]) for _, saved in imported for key, value in saved.items()]
    ids += [(uri.split("/")[-2], int(uri.rsplit("/", 1)[1])) for uri in created]
    assert len(set(ids)) == len(ids)
    for tag, saved in imported:
        uri = {temporary: value[0] for temporary, value in saved.items()}
        base = f"/repositories/{repo}"
        series = uri[f"{base}/archival_objects/{tag}_s"]
        last = api.get(uri[f"{base}/archival_objects/{tag}_{IdLeases.LEAST - 2}"]).json()
        assert (last["title"], last["parent"]["ref"], last["resource"]["ref"]) == (
            f"File {IdLeases.LEAST - 2}",
            series,
            uri[f"{base}/resources/{tag}"],
        )
        assert last["subjects"] == [{"ref": uri[f"/subjects/{tag}"]}]
        assert api.get(f"{series}/children").json()[-1]["uri"] == last["uri"]
    assert [api.get(uri).json()["title"] for uri in created] == [f"Single {n}" for n in range(4)]


def test_a_large_import_is_written_by_a_process_writing_imports(api, repo, validated, monkeypatch):
    """The server's own write path is not used (made to fail here), nor its ids reserved ahead."""
    from fonds.records import imports

    if validated != WRITTEN_ELSEWHERE:
        pytest.skip("a test of the processes writing imports")

    def fail(*_args, **_kwargs):
        raise AssertionError("written in the server")

    monkeypatch.setattr(imports, "_import", fail)
    written = []
    api.client.app.state.fonds.db.after_write.append(lambda: written.append(True))  # the search indexer's wake-up
    response = api.post(f"/repositories/{repo}/batch_imports", json=collection(repo, "elsewhere", 5))
    assert response.status_code == 200, response.text
    assert written
    saved = {temporary: value[0] for temporary, value in response.json()[-1]["saved"].items()}
    resource = saved[f"/repositories/{repo}/resources/elsewhere"]
    assert titles_in_order(api, resource) == ["Series"]
    assert api.get(resource).json()["title"] == "elsewhere"
    assert api.get(f"/repositories/{repo}/search", params={"q": "elsewhere", "type[]": "resource", "page": 1}).json()["total_hits"] == 1


def test_imports_sent_at_once_are_written_side_by_side_each_all_its_own(api, repo, validated, app):
    """Four imports at once, each large enough to reserve ids ahead, with single creates among
    them (written by both processes writing imports, the second started for them, or in the server)."""
    tags = [f"many{n}" for n in range(4)]
    with ThreadPoolExecutor(4) as clients:
        sent = [clients.submit(api.post, f"/repositories/{repo}/batch_imports", json=collection(repo, tag, IdLeases.LEAST)) for tag in tags]
        created = [make_subject(api, f"Among {n}") for n in range(3)]
        responses = [answer.result() for answer in sent]
    assert [response.status_code for response in responses] == [200] * 4, [r.text[:300] for r in responses]
    ids = [(key.split("/")[-2], value[1]) for r in responses for key, value in r.json()[-1]["saved"].items()]
    ids += [(uri.split("/")[-2], int(uri.rsplit("/", 1)[1])) for uri in created]
    assert len(set(ids)) == len(ids) == 4 * (IdLeases.LEAST + 2) + 3  # a subject and a resource each
    base = f"/repositories/{repo}"
    for tag, response in zip(tags, responses):
        uri = {temporary: value[0] for temporary, value in response.json()[-1]["saved"].items()}
        series = uri[f"{base}/archival_objects/{tag}_s"]
        children = api.get(f"{series}/children").json()
        assert [child["title"] for child in children] == [f"File {n}" for n in range(IdLeases.LEAST - 1)]
        assert {child["subjects"][0]["ref"] for child in children} == {uri[f"/subjects/{tag}"]}
    validation = app.state.fonds.records.import_validation
    if validated == WRITTEN_ELSEWHERE:
        assert len(validation._pool._processes) == import_validation.WRITERS


def subjects_and_an_accession(repo: int, *extra_refs: dict) -> list[dict]:
    """Three subjects, and an accession referring to the first and to `extra_refs` (subjects or top containers)."""
    tag = uuid.uuid4().hex[:8]
    records: list[dict] = [
        {"jsonmodel_type": "subject", "uri": f"/subjects/t{i}", "title": f"{tag} {i}", "source": "local", "terms": []} for i in range(3)
    ]
    subjects = [{"ref": "/subjects/t0"}] + [ref for ref in extra_refs if ref["ref"].startswith("/subjects/")]
    containers = [ref["ref"] for ref in extra_refs if "/top_containers/" in ref["ref"]]
    accession = {"jsonmodel_type": "accession", "uri": f"/repositories/{repo}/accessions/a", "title": "Refers", "id_0": tag}
    records.append(accession | {"accession_date": "2020-01-01", "subjects": subjects, "instances": [instance(c) for c in containers]})
    return records


@pytest.mark.usefixtures("leases_from_two_records")
def test_refs_of_an_import_given_the_ids_reserved_ahead_are_checked_as_any_imports(api, repo):
    """Planned in the process validating imports, its refs are confirmed in the write, and a
    missing or misplaced target is refused there, named by the record's place in the batch."""
    path = f"/repositories/{repo}/batch_imports"
    elsewhere = api.create_repository("OTHER")
    foreign = api.create(f"/repositories/{elsewhere}/top_containers", {"jsonmodel_type": "top_container", "indicator": "1"})["uri"]
    cases = [
        ({"ref": "/subjects/999999999"}, "Can't relate to non-existent record: /subjects/999999999"),
        ({"ref": f"/repositories/{repo}/top_containers/999999999"}, "Can't relate to non-existent record"),
        ({"ref": foreign}, f"Invalid URI reference for this ({repo}) repo: '{foreign}'"),
    ]
    for target, message in cases:
        # Each reserves ahead for the one after it (a refused import reserves none).
        assert api.post(path, json=subjects_and_an_accession(repo)).status_code == 200
        answer = api.post(path, json=subjects_and_an_accession(repo, target))
        assert answer.status_code == 400, answer.text
        errors = json.dumps(answer.json()["error"])
        assert message in errors and "batch_import/3/" in errors, answer.text
