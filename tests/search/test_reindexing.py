"""Changes that alter other records' documents reach them: a renamed subject, a moved subtree,
siblings whose positions shift, deleted records (which leave no document). Each test runs with
the indexer building documents in its usual slices and one record a slice, so that a batch's
changes and their dependents spread over many slices."""

from __future__ import annotations

import pytest

from fonds.search import indexer
from tests.records.helpers import make_ao, make_resource, make_subject, read, update
from tests.search.helpers import accession, hits, search


@pytest.fixture(autouse=True, params=[indexer.BUILD_SLICE, 1], ids=["usual slices", "one record a slice"])
def build_slice(request, monkeypatch):
    monkeypatch.setattr(indexer, "BUILD_SLICE", request.param)


def _doc(api, repo, uri) -> dict:
    [doc] = search(api, f"/repositories/{repo}/search", **{"filter_query[]": [f'id:"{uri}"']}).json()["results"]
    return doc


def test_a_renamed_subject_shows_its_new_name_in_linking_records(api, repo):
    subject = make_subject(api, "Whaling")
    linked = accession(api, repo, "Logbooks", subjects=[{"ref": subject}])["uri"]
    assert _doc(api, repo, linked)["subjects"] == ["Whaling"]
    record = read(api, subject)
    record["terms"][0]["term"] = "Whale fisheries"
    assert api.post(subject, json=record).status_code == 200
    assert _doc(api, repo, linked)["subjects"] == ["Whale fisheries"]
    assert hits(api, f"/repositories/{repo}/search", q="subjects_text:fisheries", **{"type[]": ["accession"]}) == [linked]
    assert hits(api, f"/repositories/{repo}/search", q="subjects_text:whaling", **{"type[]": ["accession"]}) == []


def test_a_moved_subtree_gets_its_new_ancestors(api, repo):
    resource = make_resource(api, repo, "Ship papers")
    first = make_ao(api, repo, "First voyage", resource=resource)["uri"]
    second = make_ao(api, repo, "Second voyage", resource=resource)["uri"]
    leg = make_ao(api, repo, "Outward leg", resource=resource, parent=first)["uri"]
    day = make_ao(api, repo, "Day one", resource=resource, parent=leg)["uri"]
    assert _doc(api, repo, day)["ancestors"] == [leg, first, resource]
    assert update(api, leg, parent={"ref": second}).status_code == 200
    assert _doc(api, repo, day)["ancestors"] == [leg, second, resource]
    assert _doc(api, repo, leg)["ancestors"] == [second, resource]
    assert set(hits(api, f"/repositories/{repo}/search", q=f'ancestors:"{second}"')) == {leg, day}


def test_siblings_positions_stay_what_get_returns(api, repo):
    resource = make_resource(api, repo, "Letters")
    a = make_ao(api, repo, "A", resource=resource)["uri"]
    b = make_ao(api, repo, "B", resource=resource)["uri"]
    make_ao(api, repo, "Z", resource=resource, position=0)
    for uri in (a, b):
        assert _doc(api, repo, uri)["json"] == api.get(uri).text
    assert api.delete(a).status_code == 200
    assert _doc(api, repo, b)["json"] == api.get(b).text


def test_siblings_positions_stay_what_get_returns_after_moves_within_the_list(api, repo):
    resource = make_resource(api, repo, "Ledgers")
    nodes = [make_ao(api, repo, name, resource=resource)["uri"] for name in "ABCDE"]
    for moved, position in ((nodes[1], 3), (nodes[4], 0), (nodes[2], 4)):  # later, to the front, to the end
        assert api.post(f"{moved}/parent", params={"position": position}).status_code == 200
        for uri in nodes:
            assert _doc(api, repo, uri)["json"] == api.get(uri).text


def test_deleted_records_leave_no_document(api, repo):
    resource = make_resource(api, repo, "Doomed papers")
    child = make_ao(api, repo, "Doomed part", resource=resource)["uri"]
    kept = accession(api, repo, "Kept papers")["uri"]
    assert set(hits(api, f"/repositories/{repo}/search", q="doomed")) == {resource, child}
    assert api.delete(resource).status_code == 200
    assert hits(api, f"/repositories/{repo}/search", q="doomed") == []
    assert hits(api, f"/repositories/{repo}/search", q="kept") == [kept]
    # A whole repository's records go with it.
    assert api.delete(f"/repositories/{repo}").status_code == 200
    assert hits(api, "/search", q="kept") == []


def test_an_imported_batch_and_a_rename_reach_every_record_of_the_batch(api, repo):
    base = f"/repositories/{repo}"
    subject = {
        "jsonmodel_type": "subject",
        "uri": "/subjects/tmp_1",
        "source": "local",
        "terms": [{"term": "Whaling", "term_type": "topical"}],
    }
    records = [subject] + [
        {
            "jsonmodel_type": "accession",
            "uri": f"{base}/accessions/tmp_{n}",
            "title": f"Logbook {n}",
            "id_0": f"L{n}",
            "subjects": [{"ref": "/subjects/tmp_1"}],
        }
        for n in range(5)
    ]
    response = api.post(f"{base}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    created = {temporary: uri for temporary, (uri, _) in response.json()[-1]["saved"].items()}
    linked = sorted(created[f"{base}/accessions/tmp_{n}"] for n in range(5))
    assert sorted(hits(api, f"{base}/search", q="subjects_text:whaling", **{"type[]": ["accession"]})) == linked
    renamed = read(api, created["/subjects/tmp_1"])
    renamed["terms"][0]["term"] = "Whale fisheries"
    assert api.post(created["/subjects/tmp_1"], json=renamed).status_code == 200
    assert sorted(hits(api, f"{base}/search", q="subjects_text:fisheries", **{"type[]": ["accession"]})) == linked
    assert hits(api, f"{base}/search", q="subjects_text:whaling", **{"type[]": ["accession"]}) == []
