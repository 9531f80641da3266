"""The search routes and their parameters over HTTP: envelope, paging, type[], sort, facets,
filters, fields[], highlighting, advanced queries, /search/records, top containers (aspace-api §9)."""

from __future__ import annotations

import json

import orjson
import pytest

from tests.records.helpers import instance, make_ao, make_resource, make_subject, make_top_container, read
from tests.search.helpers import accession, hits, search


@pytest.fixture
def corpus(api, repo):
    """Three accessions, a resource with two archival objects, a subject, a top container."""
    subject = make_subject(api, "Whaling")
    made = {
        "smith": accession(
            api, repo, "Smith family papers", id_0="2024", id_1="001", accession_date="2024-05-01", subjects=[{"ref": subject}]
        )["uri"],
        "jones": accession(api, repo, "Jones letters", id_0="2024", id_1="002", accession_date="2023-01-15")["uri"],
        "brown": accession(api, repo, "Brown diaries", id_0="2019", id_1="007", accession_date="2019-07-04")["uri"],
        "subject": subject,
    }
    made["resource"] = make_resource(api, repo, "Smith whaling logs", id_0="MS-1", level="collection")
    made["series"] = make_ao(api, repo, "Voyages", resource=made["resource"], level="series", component_id="S1")["uri"]
    made["file"] = make_ao(api, repo, "Log of the Essex", resource=made["resource"], parent=made["series"], level="file")["uri"]
    made["box"] = make_top_container(api, repo, "42")
    return made


def test_envelope_and_document_fields(api, repo, corpus):
    response = search(api, f"/repositories/{repo}/search", q="jones")
    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in ("page_size", "first_page", "last_page", "this_page", "offset_first", "offset_last", "total_hits")} == {
        "page_size": 10,
        "first_page": 1,
        "last_page": 1,
        "this_page": 1,
        "offset_first": 1,
        "offset_last": 1,
        "total_hits": 1,
    }
    assert body["facets"] == {"facet_queries": {}, "facet_fields": {}, "facet_ranges": {}, "facet_intervals": {}, "facet_heatmaps": {}}
    [doc] = body["results"]
    assert "jsonmodel_type" not in doc
    assert doc["id"] == doc["uri"] == corpus["jones"]
    assert (doc["title"], doc["primary_type"], doc["types"], doc["repository"]) == (
        "Jones letters",
        "accession",
        ["accession"],
        f"/repositories/{repo}",
    )
    assert (doc["identifier"], doc["publish"], doc["suppressed"], doc["created_by"]) == ("2024-002", False, False, "admin")
    # `json` is exactly what GET returns.
    assert doc["json"] == api.get(corpus["jones"]).text
    assert json.loads(doc["json"]) == read(api, corpus["jones"])


def test_no_hits_has_last_page_zero_and_a_missing_page_is_refused(api, repo, corpus):
    body = search(api, f"/repositories/{repo}/search", q="nonexistentword").json()
    assert (body["total_hits"], body["last_page"], body["results"]) == (0, 0, [])
    missing = api.get(f"/repositories/{repo}/search", params={"q": "smith"})
    assert missing.status_code == 400
    assert missing.json() == {"error": {"page": ["Parameter required but no value provided"]}, "warning": {}}
    for bad in ({"page": "0"}, {"page": "x"}, {"page": "1", "page_size": "-3"}, {"page": "1", "hl": "perhaps"}):
        response = api.get(f"/repositories/{repo}/search", params=bad)
        assert response.status_code == 400, bad
        assert list(response.json()["error"]) == [next(k for k in bad if k != "page" or len(bad) == 1)]


def test_paging_with_sort(api, repo, corpus):
    path = f"/repositories/{repo}/search"
    first = search(api, path, **{"type[]": ["accession"], "page_size": 2, "sort": "title_sort asc"}).json()
    second = search(api, path, **{"type[]": ["accession"], "page_size": 2, "sort": "title_sort asc", "page": 2}).json()
    assert [d["title"] for d in first["results"]] == ["Brown diaries", "Jones letters"]
    assert [d["title"] for d in second["results"]] == ["Smith family papers"]
    assert (first["last_page"], first["offset_first"], first["offset_last"], first["total_hits"]) == (2, 1, 2, 3)
    assert (second["this_page"], second["offset_first"], second["offset_last"]) == (2, 3, 3)
    newest = hits(api, path, **{"type[]": ["accession"], "sort": "accession_date desc"})
    assert newest == [corpus["smith"], corpus["jones"], corpus["brown"]]
    bad = search(api, path, sort="no_such_field asc")
    assert bad.status_code == 400 and "sort" in bad.json()["error"]


def test_type_filter_is_a_list(api, repo, corpus):
    path = f"/repositories/{repo}/search"
    assert set(hits(api, path, **{"type[]": ["archival_object"]})) == {corpus["series"], corpus["file"]}
    assert set(hits(api, path, **{"type[]": ["resource", "top_container"]})) == {corpus["resource"], corpus["box"]}
    # Global records (subjects) are found in a repository's search.
    assert hits(api, path, **{"type[]": ["subject"]}) == [corpus["subject"]]


def test_facets_in_solr_flat_shape(api, repo, corpus):
    body = search(api, f"/repositories/{repo}/search", **{"facet[]": ["primary_type", "level"], "page_size": 1}).json()
    facets = body["facets"]["facet_fields"]
    assert dict(zip(facets["primary_type"][::2], facets["primary_type"][1::2])) == {
        "accession": 3,
        "archival_object": 2,
        "resource": 1,
        "subject": 1,
        "top_container": 1,
        "repository": 1,  # the repository itself
    }
    assert facets["primary_type"][:2] == ["accession", 3]  # largest count first
    assert dict(zip(facets["level"][::2], facets["level"][1::2])) == {"collection": 1, "series": 1, "file": 1}
    mincount = search(api, f"/repositories/{repo}/search", **{"facet[]": ["primary_type"], "facet_mincount": 3}).json()
    assert mincount["facets"]["facet_fields"]["primary_type"] == ["accession", 3]
    refused = search(api, f"/repositories/{repo}/search", **{"facet[]": ["title"]})
    assert refused.status_code == 400 and "facet[]" in refused.json()["error"]


def test_filter_query_exclude_root_record_and_fields(api, repo, corpus):
    path = f"/repositories/{repo}/search"
    assert hits(api, path, **{"filter_query[]": ["primary_type:accession", "identifier:2024-001"]}) == [corpus["smith"]]
    assert set(hits(api, path, **{"type[]": ["accession"], "exclude[]": [corpus["smith"], corpus["jones"]]})) == {corpus["brown"]}
    assert set(hits(api, path, root_record=corpus["resource"])) == {corpus["series"], corpus["file"]}
    doc = search(api, path, q="jones", **{"fields[]": ["uri", "title"]}).json()["results"][0]
    assert doc == {"uri": corpus["jones"], "title": "Jones letters"}


def test_highlighting_marks_the_matched_words(api, repo, corpus):
    body = search(api, f"/repositories/{repo}/search", q="diaries", hl="true").json()
    assert body["highlighting"] == {corpus["brown"]: {"title": ['Brown <span class="searchterm">diaries</span>']}}
    assert "highlighting" not in search(api, f"/repositories/{repo}/search", q="diaries").json()


def test_advanced_query_and_filter(api, repo, corpus):
    path = f"/repositories/{repo}/search"
    aq = {
        "query": {
            "jsonmodel_type": "boolean_query",
            "op": "AND",
            "subqueries": [
                {"jsonmodel_type": "field_query", "field": "primary_type", "value": "accession", "literal": True},
                {"jsonmodel_type": "field_query", "field": "title", "value": "papers"},
            ],
        }
    }
    assert hits(api, path, aq=json.dumps(aq)) == [corpus["smith"]]
    by_date = {
        "query": {"jsonmodel_type": "date_field_query", "field": "accession_date", "comparator": "lesser_than", "value": "2020-01-01"}
    }
    assert hits(api, path, aq=json.dumps(by_date)) == [corpus["brown"]]
    literal = {"query": {"jsonmodel_type": "field_query", "field": "level", "value": "series"}}
    assert hits(api, path, filter=json.dumps(literal)) == [corpus["series"]]
    for bad in (
        "{not json",
        '{"query": {"jsonmodel_type": "mystery_query"}}',
        '{"query": {"jsonmodel_type": "boolean_query", "op": "XOR", "subqueries": []}}',
    ):
        response = search(api, path, aq=bad)
        assert response.status_code == 400, bad
        assert list(response.json()["error"]) == ["aq"]


def test_post_with_a_form_body_works_like_get(api, repo, corpus):
    response = api.post(f"/repositories/{repo}/search", data={"page": "1", "q": "jones", "type[]": "accession"})
    assert response.status_code == 200
    assert [d["uri"] for d in response.json()["results"]] == [corpus["jones"]]


def test_search_records_returns_documents_in_the_order_asked(api, repo, corpus):
    wanted = [corpus["brown"], corpus["subject"], corpus["smith"], f"/repositories/{repo}/accessions/9999"]
    response = api.get("/search/records", params={"uri[]": wanted})
    assert response.status_code == 200
    assert [d["uri"] for d in response.json()["results"]] == wanted[:3]
    assert api.get("/search/records").status_code == 400


def test_top_container_search_has_a_solr_response_block(api, repo, corpus):
    other = make_top_container(api, repo, "43")
    accession(api, repo, "Boxed", instances=[instance(other)])
    response = api.get(f"/repositories/{repo}/top_containers/search", params={"q": "indicator:43"})
    assert response.status_code == 200
    body = response.json()
    assert body["response"]["numFound"] == 1 and body["response"]["start"] == 0
    assert [d["uri"] for d in body["response"]["docs"]] == [other] == [d["uri"] for d in body["results"]]
    everything = api.get(f"/repositories/{repo}/top_containers/search").json()
    assert {d["uri"] for d in everything["response"]["docs"]} == {corpus["box"], other}


def test_global_search_routes(api, repo, corpus):
    assert hits(api, "/search/subjects") == [corpus["subject"]]
    assert hits(api, "/search/repositories") == [f"/repositories/{repo}"]  # the hidden global repository is not a search result
    profile = api.create(
        "/location_profiles", {"jsonmodel_type": "location_profile", "name": "Flat file", "depth": "30", "height": "5", "width": "40"}
    )
    [doc] = search(api, "/search/location_profile").json()["results"]
    assert (doc["uri"], doc["location_profile_depth"], doc["location_profile_width"]) == (profile["uri"], "30", "40")
    assert set(hits(api, "/search", **{"type[]": ["accession"]})) == {corpus["smith"], corpus["jones"], corpus["brown"]}


def test_search_status_for_administrators(api, repo, corpus):
    search(api, "/search")  # waits until the index has caught up
    status = api.get("/search/status").json()
    assert status["lag"] == 0 and status["applied_sequence"] == status["head_sequence"] > 0
    assert status["documents"] >= 8 and status["size_bytes"] > 0 and status["writer"] is True
    assert orjson.loads(api.get("/search/status").content)["generation"].startswith("gen-")
