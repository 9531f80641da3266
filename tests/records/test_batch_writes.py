"""The batch write path (records/writes.py) through HTTP: batch imports of hundreds of records
that refer to each other, batch children, unique keys within a batch and against stored rows,
and the change log feeding search for every record of a batch."""

from __future__ import annotations

import gc
import time

import pytest

from fonds.records.writes import NewRecord, _Derived
from tests.records.tree_helpers import add_children, titles_in_order
from tests.search.helpers import search

SERIES = 30
ITEMS_PER_SERIES = 8
ACCESSIONS = 26


def node(base: str, key: str, title: str, level: str, resource: str, parent: str | None = None) -> dict:
    """An archival object of a batch, named `tmp_<key>`, under `tmp_<parent>` or at the top."""
    found = {
        "jsonmodel_type": "archival_object",
        "uri": f"{base}/archival_objects/tmp_{key}",
        "title": title,
        "level": level,
        "resource": {"ref": resource},
    }
    return found | ({"parent": {"ref": f"{base}/archival_objects/tmp_{parent}"}} if parent is not None else {})


def big_archive(repo: int) -> list[dict]:
    """A resource, subjects, series under it and items under each series (children listed first),
    accessions: 300 records referring to each other by temporary URIs."""
    base = f"/repositories/{repo}"
    resource = f"{base}/resources/tmp_r"
    records = []
    for s in range(SERIES):
        for i in range(ITEMS_PER_SERIES):
            item = node(base, f"{s}_{i}", f"Batchwrite item {s}-{i}", "item", resource, parent=str(s))
            records.append({**item, "subjects": [{"ref": f"/subjects/tmp_s{i % 3}"}]})
    records += [node(base, str(s), f"Batchwrite series {s}", "series", resource) for s in range(SERIES)]
    records.append({"jsonmodel_type": "resource", "uri": resource, "title": "Batchwrite papers", "id_0": "BW-1", "level": "collection"})
    records += [
        {
            "jsonmodel_type": "subject",
            "uri": f"/subjects/tmp_s{n}",
            "source": "local",
            "terms": [{"term": f"Batchwrite {n}", "term_type": "topical"}],
        }
        for n in range(3)
    ]
    records += [{"jsonmodel_type": "accession", "title": f"Batchwrite accession {n}", "id_0": f"BW-A{n}"} for n in range(ACCESSIONS)]
    return records


def import_records(api, repo: int, records: list[dict]):
    return api.post(f"/repositories/{repo}/batch_imports", json=records)


def count(api, path: str) -> int:
    return len(api.get(path, params={"all_ids": "true"}).json())


def counts(api, repo: int) -> tuple[int, ...]:
    return tuple(count(api, f"/repositories/{repo}/{kind}") for kind in ("resources", "archival_objects", "accessions")) + (
        count(api, "/subjects"),
    )


def test_a_batch_of_hundreds_maps_every_uri_and_keeps_its_tree(api, repo):
    records = big_archive(repo)
    assert len(records) == 300
    response = import_records(api, repo, records)
    assert response.status_code == 200, response.text
    saved = response.json()[-1]["saved"]
    assert set(saved) == {r["uri"] for r in records if "uri" in r}
    created = {temporary: uri for temporary, (uri, _) in saved.items()}
    assert len(set(created.values())) == len(created)
    base = f"/repositories/{repo}"
    resource = created[f"{base}/resources/tmp_r"]
    assert titles_in_order(api, resource) == [f"Batchwrite series {s}" for s in range(SERIES)]
    series = created[f"{base}/archival_objects/tmp_7"]
    assert titles_in_order(api, resource, series) == [f"Batchwrite item 7-{i}" for i in range(ITEMS_PER_SERIES)]
    item = api.get(created[f"{base}/archival_objects/tmp_7_4"], params={"resolve[]": "subjects"}).json()
    assert item["parent"]["ref"] == series and item["resource"]["ref"] == resource
    assert item["subjects"][0]["_resolved"]["title"] == "Batchwrite 1"
    assert [a["ref"] for a in item["ancestors"]] == [series, resource]


def test_an_answered_import_leaves_none_of_its_records_in_memory(api, repo):
    """A batch's records, rows included, are freed once it is answered (on a thread of their own,
    records/imports.py), with the cyclic collector off as it is while imports run: a reference
    cycle among them would keep every batch of a bulk load (a million records held 11 GB)."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        response = import_records(api, repo, big_archive(repo))
        assert response.status_code == 200, response.text
        deadline = time.monotonic() + 30
        while (held := _alive(NewRecord, _Derived)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert held == 0
    finally:
        if was_enabled:
            gc.enable()


def _alive(*kinds) -> int:
    return sum(1 for found in gc.get_objects() if isinstance(found, kinds))


class TestSearch:
    @pytest.fixture
    def settings_overrides(self):
        # Hundreds of documents on a busy machine can take the indexer longer than the default wait.
        return {"search_wait_seconds": 60.0}

    def test_every_record_of_a_batch_is_found_by_search(self, api, repo):
        response = import_records(api, repo, big_archive(repo))
        assert response.status_code == 200, response.text
        saved = {uri for uri, _ in response.json()[-1]["saved"].values()}
        path = f"/repositories/{repo}/search"
        scoped = search(api, path, q="batchwrite", page_size=10, **{"type[]": ["archival_object", "resource", "accession"]})
        assert scoped.status_code == 200, scoped.text
        assert scoped.json()["total_hits"] == SERIES * ITEMS_PER_SERIES + SERIES + 1 + ACCESSIONS
        # Subjects are global: other tests' subjects may match too, so look for these three.
        subjects = search(api, path, q="batchwrite", page_size=250, **{"type[]": ["subject"]}).json()["results"]
        assert {s for s in saved if s.startswith("/subjects/")} <= {doc["uri"] for doc in subjects}


def test_one_bad_record_among_hundreds_stores_nothing(api, repo):
    before = counts(api, repo)
    records = big_archive(repo)
    records[123]["title"] = 5
    response = import_records(api, repo, records)
    assert response.status_code == 400, response.text
    assert list(response.json()["error"]) == ["batch_import/123/title"]
    assert counts(api, repo) == before


def test_a_ref_to_nothing_names_the_member_and_stores_nothing(api, repo):
    before = counts(api, repo)
    records = big_archive(repo)
    records[5]["subjects"] = [{"ref": "/subjects/999999"}]
    response = import_records(api, repo, records)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {"batch_import/5/subjects/0": ["Can't relate to non-existent record: /subjects/999999"]}
    assert counts(api, repo) == before


def test_a_ref_to_a_stored_record_under_another_repository_than_it_lives_in_stores_nothing(api, repo):
    # The refs are worked out before the write, taking each target to live where its URI says; a
    # stored subject and a stored container elsewhere must still be told apart in the write.
    other = api.create_repository("ELSEWHERE")
    container = api.create(f"/repositories/{other}/top_containers", {"jsonmodel_type": "top_container", "indicator": "7"})["uri"]
    subject = api.create(
        "/subjects", {"jsonmodel_type": "subject", "source": "local", "terms": [{"term": "Stored", "term_type": "topical"}]}
    )
    claimed = container.replace(f"/repositories/{other}/", f"/repositories/{repo}/")
    before = counts(api, repo)
    records = big_archive(repo)
    records[7]["subjects"] = [{"ref": subject["uri"]}]
    records[9]["instances"] = [{"instance_type": "mixed_materials", "sub_container": {"top_container": {"ref": claimed}}}]
    response = import_records(api, repo, records)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {
        "batch_import/9/instances/0/sub_container/top_container": [f"Can't relate to non-existent record: {claimed}"]
    }
    assert counts(api, repo) == before
    del records[9]["instances"]
    saved = import_records(api, repo, records).raise_for_status().json()[-1]["saved"]
    stored = api.get(saved[records[7]["uri"]][0]).json()
    assert stored["subjects"] == [{"ref": subject["uri"]}]


def test_a_unique_key_clash_within_one_batch_is_400(api, repo):
    before = counts(api, repo)
    records = big_archive(repo)
    records[-1]["id_0"] = records[-2]["id_0"]
    response = import_records(api, repo, records)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {f"batch_import/{len(records) - 1}/id_0": ["That ID is already in use"]}
    assert counts(api, repo) == before


def test_a_unique_key_clash_with_a_stored_record_is_400(api, repo):
    api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "Stored", "id_0": "BW-A9"})
    api.create("/subjects", {"jsonmodel_type": "subject", "source": "local", "terms": [{"term": "Batchwrite 2", "term_type": "topical"}]})
    before = counts(api, repo)
    response = import_records(api, repo, big_archive(repo))
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    # The subject comes before the accessions in creation order (the items refer to it).
    subject_index = next(i for i, r in enumerate(big_archive(repo)) if r.get("uri") == "/subjects/tmp_s2")
    assert error[f"batch_import/{subject_index}/terms"] == ["Subject must be unique"]
    assert error[f"batch_import/{subject_index}/conflicting_record"][0].startswith("/subjects/")
    assert counts(api, repo) == before
    del_subject = [r for r in big_archive(repo) if r.get("uri") != "/subjects/tmp_s2"]
    for record in del_subject:
        record.pop("subjects", None)
    response = import_records(api, repo, del_subject)
    assert response.status_code == 400, response.text
    accession_index = next(i for i, r in enumerate(del_subject) if r.get("id_0") == "BW-A9")
    assert response.json()["error"] == {f"batch_import/{accession_index}/id_0": ["That ID is already in use"]}
    assert counts(api, repo) == before


def collection(base: str, name: str, series: int, files: int) -> list[dict]:
    """A resource with series and files under each, listed deepest first."""
    resource = f"{base}/resources/tmp_{name}"
    nodes = [
        node(base, f"{name}_{s}_{f}", f"{name} file {s}-{f}", "file", resource, parent=f"{name}_{s}")
        for s in range(series)
        for f in range(files)
    ]
    nodes += [node(base, f"{name}_{s}", f"{name} series {s}", "series", resource) for s in range(series)]
    return [*nodes, {"jsonmodel_type": "resource", "uri": resource, "title": f"{name} papers", "id_0": name, "level": "collection"}]


def test_whole_collections_of_one_batch_keep_their_trees_and_take_later_children_after_theirs(api, repo):
    # Enough nodes that the batch writes its rows in bulk (counts kept by the batch, not by triggers).
    base = f"/repositories/{repo}"
    records = collection(base, "BW-T1", 12, 25) + collection(base, "BW-T2", 3, 4)
    components = [
        {
            "jsonmodel_type": "digital_object_component",
            "uri": f"{base}/digital_object_components/tmp_page{n}",
            "title": f"Page {n}",
            "digital_object": {"ref": f"{base}/digital_objects/tmp_album"},
            "parent": {"ref": f"{base}/digital_object_components/tmp_volume"},
        }
        for n in range(3)
    ]
    components += [
        {
            "jsonmodel_type": "digital_object_component",
            "uri": f"{base}/digital_object_components/tmp_volume",
            "title": "Volume",
            "digital_object": {"ref": f"{base}/digital_objects/tmp_album"},
        },
        {"jsonmodel_type": "digital_object", "uri": f"{base}/digital_objects/tmp_album", "title": "Album", "digital_object_id": "BW-D1"},
    ]
    response = import_records(api, repo, records + components)
    assert response.status_code == 200, response.text
    created = {temporary: uri for temporary, (uri, _) in response.json()[-1]["saved"].items()}

    for name, series, files in (("BW-T1", 12, 25), ("BW-T2", 3, 4)):
        resource = created[f"{base}/resources/tmp_{name}"]
        assert titles_in_order(api, resource) == [f"{name} series {s}" for s in range(series)]
        assert api.get(f"{resource}/tree/root").json()["child_count"] == series
        last = created[f"{base}/archival_objects/tmp_{name}_{series - 1}"]
        assert titles_in_order(api, resource, last) == [f"{name} file {series - 1}-{f}" for f in range(files)]
        file = api.get(created[f"{base}/archival_objects/tmp_{name}_{series - 1}_{files - 1}"]).json()
        assert file["position"] == files - 1 and [a["ref"] for a in file["ancestors"]] == [last, resource]
        later = {"jsonmodel_type": "archival_object", "title": f"{name} later", "resource": {"ref": resource}, "parent": {"ref": last}}
        api.create(f"{base}/archival_objects", later)
        assert titles_in_order(api, resource, last)[-2:] == [f"{name} file {series - 1}-{files - 1}", f"{name} later"]

    album = created[f"{base}/digital_objects/tmp_album"]
    volume = api.get(f"{album}/tree/root").json()["precomputed_waypoints"][""]["0"]
    assert [entry["title"] for entry in volume] == ["Volume"]
    pages = api.get(f"{album}/tree/node", params={"node_uri": volume[0]["uri"]}).json()["precomputed_waypoints"][volume[0]["uri"]]["0"]
    assert [(entry["title"], entry["position"]) for entry in pages] == [("Page 0", 0), ("Page 1", 1), ("Page 2", 2)]


def test_a_later_import_appends_to_stored_lists_after_their_last_node(api, repo):
    base = f"/repositories/{repo}"
    first = import_records(api, repo, collection(base, "BW-L1", 2, 3))
    assert first.status_code == 200, first.text
    created = {temporary: uri for temporary, (uri, _) in first.json()[-1]["saved"].items()}
    resource, series = created[f"{base}/resources/tmp_BW-L1"], created[f"{base}/archival_objects/tmp_BW-L1_0"]

    def later(key: str, title: str, parent: str | None = None, **extra) -> dict:
        record = {"jsonmodel_type": "archival_object", "uri": f"{base}/archival_objects/tmp_{key}", "title": title, "level": "file"}
        return record | {"resource": {"ref": resource}} | ({"parent": {"ref": parent}} if parent else {}) | extra

    # Under a stored parent, at the top of a stored resource, at a position asked for, and
    # under a parent of the same import.
    second = [
        later("a", "Later 0", series),
        later("top", "Later series"),
        later("b", "Later 1", series),
        later("first", "Asked first", series, position=0),
        later("c", "Under later series", f"{base}/archival_objects/tmp_top"),
    ]
    response = import_records(api, repo, second)
    assert response.status_code == 200, response.text
    files = [f"BW-L1 file 0-{f}" for f in range(3)]
    assert titles_in_order(api, resource, series) == ["Asked first", *files, "Later 0", "Later 1"]
    assert titles_in_order(api, resource) == ["BW-L1 series 0", "BW-L1 series 1", "Later series"]
    top = {temporary: uri for temporary, (uri, _) in response.json()[-1]["saved"].items()}[f"{base}/archival_objects/tmp_top"]
    assert titles_in_order(api, resource, top) == ["Under later series"]


def test_batch_children_take_positions_in_order_after_the_existing_ones(api, repo):
    resource = api.create(f"/repositories/{repo}/resources", {"jsonmodel_type": "resource", "title": "Children"})["uri"]
    add_children(api, resource, [f"First {n}" for n in range(40)])
    add_children(api, resource, [f"Second {n}" for n in range(25)])
    assert titles_in_order(api, resource) == [f"First {n}" for n in range(40)] + [f"Second {n}" for n in range(25)]
    series = api.get(f"{resource}/tree/root").json()
    assert series["child_count"] == 65


def test_a_ref_id_clash_among_batch_children_is_400_and_stores_nothing(api, repo):
    resource = api.create(f"/repositories/{repo}/resources", {"jsonmodel_type": "resource", "title": "Clash"})["uri"]
    body = {
        "jsonmodel_type": "archival_record_children",
        "children": [{"title": "A", "ref_id": "same"}, {"title": "B", "ref_id": "other"}, {"title": "C", "ref_id": "same"}],
    }
    response = api.post(f"{resource}/children", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {"children/2/ref_id": ["An Archival Object Ref ID must be unique to its resource"]}
    assert api.get(f"{resource}/tree/root").json()["child_count"] == 0
    add_children(api, resource, ["Stored"], ref_id="taken")
    clash = api.post(
        f"{resource}/children",
        json={"jsonmodel_type": "archival_record_children", "children": [{"title": "X"}, {"title": "Y", "ref_id": "taken"}]},
    )
    assert clash.status_code == 400, clash.text
    assert list(clash.json()["error"]) == ["children/1/ref_id"]
    assert api.get(f"{resource}/tree/root").json()["child_count"] == 1


def test_single_creates_keep_their_answers(api, repo):
    first = api.post(f"/repositories/{repo}/accessions", json={"jsonmodel_type": "accession", "title": "One", "id_0": "BW-S1"})
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["status"] == "Created" and body["lock_version"] == 0 and body["uri"] == f"/repositories/{repo}/accessions/{body['id']}"
    again = api.post(f"/repositories/{repo}/accessions", json={"jsonmodel_type": "accession", "title": "Two", "id_0": "BW-S1"})
    assert again.status_code == 400 and again.json()["error"] == {"id_0": ["That ID is already in use"]}
    after = api.post(f"/repositories/{repo}/accessions", json={"jsonmodel_type": "accession", "title": "Three", "id_0": "BW-S3"})
    assert after.json()["id"] > body["id"]


def test_the_collector_is_back_on_once_an_import_is_answered_and_its_records_freed(api, repo):
    """Off while imports run (`BulkImports`), on again after the last, once the disposal thread
    has freed its records: never left off."""
    gc.enable()
    response = import_records(api, repo, big_archive(repo))
    assert response.status_code == 200, response.text
    deadline = time.monotonic() + 30
    while not gc.isenabled():
        assert time.monotonic() < deadline, "the cyclic garbage collector stayed off after the import"
        time.sleep(0.01)
