"""References between records: checks on write, `resolve[]` on read, links dropped when their
target is deleted, the default vocabulary and subjects (decisions.md "Records")."""

from __future__ import annotations

import pytest

from tests.records.helpers import ao_body, instance, make_ao, make_resource, make_subject, make_top_container, read


def accessions(repo: int) -> str:
    return f"/repositories/{repo}/accessions"


def make_accession(api, repo: int, title: str = "Gift", **extra) -> str:
    return api.create(accessions(repo), {"jsonmodel_type": "accession", "title": title, **extra})["uri"]


def refused(api, path: str, body: dict) -> dict:
    """POST that must fail with 400; returns the `error` object."""
    response = api.post(path, json=body)
    assert response.status_code == 400, response.text
    return response.json()["error"]


def top_container_refs(record: dict) -> list[str]:
    return [i["sub_container"]["top_container"]["ref"] for i in record.get("instances", [])]


# -- checks on write -------------------------------------------------------------------------


def test_ref_to_a_missing_record_names_the_field_path(api, repo):
    subject = make_subject(api, "Cats")
    body = {"jsonmodel_type": "accession", "title": "x", "subjects": [{"ref": subject}, {"ref": "/subjects/999"}]}
    error = refused(api, accessions(repo), body)
    assert list(error) == ["subjects/1"]
    assert "/subjects/999" in error["subjects/1"][0]
    assert api.get(accessions(repo), params={"all_ids": "true"}).json() == []


def test_nested_ref_to_a_missing_top_container_names_the_nested_path(api, repo):
    body = {"jsonmodel_type": "accession", "title": "x", "instances": [instance(f"/repositories/{repo}/top_containers/999")]}
    error = refused(api, accessions(repo), body)
    assert list(error) == ["instances/0/sub_container/top_container"]


def test_missing_ref_is_refused_on_update_too(api, repo):
    uri = make_accession(api, repo)
    record = read(api, uri)
    record["subjects"] = [{"ref": "/subjects/424242"}]
    response = api.post(uri, json=record)
    assert response.status_code == 400
    assert "subjects/0" in response.json()["error"]
    assert read(api, uri)["lock_version"] == 0


def test_ref_to_a_record_of_another_repository_is_refused(api, repo):
    other = api.create_repository("OTHER")
    foreign_container = make_top_container(api, other, "1")
    error = refused(api, accessions(repo), {"jsonmodel_type": "accession", "title": "x", "instances": [instance(foreign_container)]})
    assert list(error) == ["instances/0/sub_container/top_container"]
    foreign_resource = make_resource(api, other)
    error = refused(api, f"/repositories/{repo}/archival_objects", ao_body("AO", resource=foreign_resource))
    assert list(error) == ["resource"]


def test_ref_with_a_wrong_repository_id_in_the_uri_is_refused(api, repo):
    other = api.create_repository("OTHER")
    container = make_top_container(api, repo, "1")
    # The same id, but claimed to live in the other repository.
    forged = container.replace(f"/repositories/{repo}/", f"/repositories/{other}/")
    error = refused(api, accessions(repo), {"jsonmodel_type": "accession", "title": "x", "instances": [instance(forged)]})
    assert list(error) == ["instances/0/sub_container/top_container"]


def test_ref_of_the_wrong_type_is_refused(api, repo):
    subject = make_subject(api, "Cats")
    error = refused(api, f"/repositories/{repo}/archival_objects", ao_body("AO", resource=subject))
    assert list(error) == ["resource/ref"]
    assert "resource" in error["resource/ref"][0]
    error = refused(api, accessions(repo), {"jsonmodel_type": "accession", "title": "x", "subjects": [{"ref": make_resource(api, repo)}]})
    assert list(error) == ["subjects/0/ref"]


@pytest.mark.parametrize(
    "uri",
    [
        "/repositories/{repo}/agents/people/1",  # a global type's path inside a repository
        "/agents/people/01",  # not canonical
        "/repositories/0{repo}/resources/1",
        "/repositories/{repo}/resources/1/",
        "/repositories/{repo}/resources/1\n",
        "/repositories/{repo}/resources",
        "/repositories/{repo}/subjects/1",
        "resources/1",
    ],
)
def test_refs_that_are_not_uris_of_an_allowed_type_are_refused_by_their_shape(api, repo, uri):
    """The compiled schemas check a ref's type by a pattern of the URIs of its types: every shape
    the URI parser refuses is refused by it too, with the worded message."""
    body = {"jsonmodel_type": "accession", "title": "x", "linked_agents": [{"ref": uri.format(repo=repo), "role": "creator"}]}
    error = refused(api, accessions(repo), body)
    assert list(error) == ["linked_agents/0/ref"]
    assert "agent" in error["linked_agents/0/ref"][0]


# -- resolve[] -------------------------------------------------------------------------------


def test_resolve_attaches_every_match_and_nothing_without_it(api, repo):
    cats, dogs = make_subject(api, "Cats"), make_subject(api, "Dogs")
    uri = make_accession(api, repo, subjects=[{"ref": cats}, {"ref": dogs}])
    plain = api.get(uri)
    assert "_resolved" not in plain.text
    record = read(api, uri, **{"resolve[]": "subjects"})
    assert [s["_resolved"]["title"] for s in record["subjects"]] == ["Cats", "Dogs"]
    assert record["subjects"][0]["_resolved"]["uri"] == cats
    assert "_resolved" not in record["repository"]


def test_resolve_matches_keys_at_any_depth(api, repo):
    container = make_top_container(api, repo, "42")
    uri = make_accession(api, repo, instances=[instance(container), instance(container)])
    record = read(api, uri, **{"resolve[]": "top_container"})
    resolved = [i["sub_container"]["top_container"]["_resolved"] for i in record["instances"]]
    assert [r["indicator"] for r in resolved] == ["42", "42"]
    assert resolved[0]["uri"] == container


def test_resolve_nests_with_double_colon(api, repo):
    subject = make_subject(api, "Cats")
    resource = make_resource(api, repo, subjects=[{"ref": subject}])
    ao = make_ao(api, repo, "AO", resource=resource)["uri"]
    shallow = read(api, ao, **{"resolve[]": "resource"})
    assert shallow["resource"]["_resolved"]["subjects"] == [{"ref": subject}]
    nested = read(api, ao, **{"resolve[]": "resource::subjects"})
    [linked] = nested["resource"]["_resolved"]["subjects"]
    assert linked["_resolved"]["title"] == "Cats"


def test_resolve_repository(api, repo):
    record = read(api, make_accession(api, repo), **{"resolve[]": "repository"})
    assert record["repository"]["ref"] == f"/repositories/{repo}"
    assert record["repository"]["_resolved"]["repo_code"] == "MSS"


def test_resolve_on_listings(api, repo):
    subject = make_subject(api, "Cats")
    make_accession(api, repo, subjects=[{"ref": subject}])
    page = api.get(accessions(repo), params={"page": 1, "resolve[]": "subjects"}).json()
    assert page["results"][0]["subjects"][0]["_resolved"]["title"] == "Cats"


def test_unknown_resolve_keys_are_ignored(api, repo):
    uri = make_accession(api, repo, subjects=[{"ref": make_subject(api, "Cats")}])
    plain = read(api, uri)
    assert read(api, uri, **{"resolve[]": ["nonsense", "also::nothing"]}) == plain


# -- deleting a target -----------------------------------------------------------------------


def test_deleting_a_subject_removes_it_from_linking_records(api, repo):
    cats, dogs = make_subject(api, "Cats"), make_subject(api, "Dogs")
    accession = make_accession(api, repo, subjects=[{"ref": cats}, {"ref": dogs}])
    ao = make_ao(api, repo, "AO", resource=make_resource(api, repo), subjects=[{"ref": cats}])["uri"]
    response = api.delete(cats)
    assert response.status_code == 200
    assert response.json() == {"status": "Deleted", "id": int(cats.rsplit("/", 1)[1])}
    assert api.get(cats).status_code == 404
    record = read(api, accession)
    assert record["subjects"] == [{"ref": dogs}]
    assert record["lock_version"] == 1
    assert read(api, ao)["subjects"] == []
    assert read(api, ao)["lock_version"] == 1
    # The remaining link is still live: deleting it too leaves nothing behind.
    api.delete(dogs)
    assert read(api, accession)["subjects"] == []


def test_a_record_updated_after_a_subject_delete_keeps_working(api, repo):
    cats = make_subject(api, "Cats")
    accession = make_accession(api, repo, subjects=[{"ref": cats}])
    api.delete(cats)
    record = read(api, accession)
    record["title"] = "Renamed"
    response = api.post(accession, json=record)
    assert response.status_code == 200, response.text
    assert response.json()["lock_version"] == 2


def test_deleting_a_top_container_removes_the_instances_pointing_at_it(api, repo):
    doomed, kept = make_top_container(api, repo, "1"), make_top_container(api, repo, "2")
    accession = make_accession(api, repo, instances=[instance(doomed), instance(kept)])
    resource = make_resource(api, repo, instances=[instance(doomed)])
    ao = make_ao(api, repo, "AO", resource=resource, instances=[instance(kept), instance(doomed)])["uri"]
    assert api.delete(doomed).status_code == 200
    assert api.get(doomed).status_code == 404
    assert top_container_refs(read(api, accession)) == [kept]
    assert top_container_refs(read(api, resource)) == []
    assert top_container_refs(read(api, ao)) == [kept]
    assert read(api, accession)["instances"][0]["instance_type"] == "mixed_materials"
    assert read(api, kept)["indicator"] == "2"


# -- vocabularies and subjects ---------------------------------------------------------------


def test_the_default_vocabulary_exists_and_cannot_be_deleted(api):
    vocabulary = read(api, "/vocabularies/1")
    assert vocabulary["ref_id"] == "global"
    assert vocabulary["uri"] == "/vocabularies/1"
    response = api.delete("/vocabularies/1")
    assert response.status_code == 409
    assert "/vocabularies/1" in response.json()["error"]
    assert read(api, "/vocabularies/1")["lock_version"] == vocabulary["lock_version"]


def test_subject_title_is_its_terms_joined(api):
    terms = [{"term": "Cats", "term_type": "topical"}, {"term": "History", "term_type": "temporal"}]
    uri = api.create("/subjects", {"jsonmodel_type": "subject", "source": "local", "terms": terms})["uri"]
    subject = read(api, uri)
    assert subject["title"] == "Cats -- History"
    assert subject["vocabulary"] == "/vocabularies/1"
    assert [t["term"] for t in subject["terms"]] == ["Cats", "History"]


def test_subjects_with_the_same_source_and_terms_conflict(api):
    first = make_subject(api, "Cats", source="local")
    body = {"jsonmodel_type": "subject", "source": "local", "terms": [{"term": "Cats", "term_type": "topical"}]}
    error = refused(api, "/subjects", body)
    assert error["conflicting_record"] == [first]
    assert "terms" in error
    other_source = make_subject(api, "Cats", source="lcsh")
    assert other_source != first


@pytest.mark.parametrize("path", ["/subjects/999", "/vocabularies/999"])
def test_deleting_a_missing_global_record_is_404(api, path):
    response = api.delete(path)
    assert response.status_code == 404
    assert response.json()["error"].endswith("not found")
