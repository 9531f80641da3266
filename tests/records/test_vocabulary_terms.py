"""Vocabulary terms: each (vocabulary, term, term type) a subject uses is one term record with a
stable URI, listed by `GET /vocabularies/<id>/terms` (backend/app/controllers/vocabulary.rb,
backend/app/model/term.rb)."""

from __future__ import annotations

from tests.records.helpers import read, update


def subject(*terms: tuple[str, str], vocabulary: str | None = None, **fields) -> dict:
    body = {
        "jsonmodel_type": "subject",
        "source": "local",
        "terms": [{"jsonmodel_type": "term", "term": t, "term_type": k} for t, k in terms],
        **fields,
    }
    if vocabulary:
        body["vocabulary"] = vocabulary
    return body


def test_terms_get_stable_uris_shared_between_subjects(api):
    first = read(api, api.create("/subjects", subject(("Maps", "genre_form"), ("Ohio", "geographic")))["uri"])
    second = read(api, api.create("/subjects", subject(("Ohio", "geographic"), ("Rivers", "topical")))["uri"])
    maps, ohio = (t["uri"] for t in first["terms"])
    assert maps.startswith("/terms/") and ohio.startswith("/terms/") and maps != ohio
    assert second["terms"][0]["uri"] == ohio
    assert second["terms"][1]["uri"] not in (maps, ohio)
    # The same words as another type are another term.
    third = read(api, api.create("/subjects", subject(("Ohio", "topical")))["uri"])
    assert third["terms"][0]["uri"] != ohio


def test_the_vocabulary_lists_its_distinct_terms(api):
    api.create("/subjects", subject(("Maps", "genre_form"), ("Ohio", "geographic")))
    api.create("/subjects", subject(("Ohio", "geographic"), ("Rivers", "topical")))
    response = api.get("/vocabularies/1/terms")
    assert response.status_code == 200
    terms = response.json()
    assert [(t["term"], t["term_type"]) for t in terms] == [("Maps", "genre_form"), ("Ohio", "geographic"), ("Rivers", "topical")]
    assert {t["vocabulary"] for t in terms} == {"/vocabularies/1"}
    assert {t["jsonmodel_type"] for t in terms} == {"term"}
    assert len({t["uri"] for t in terms}) == 3


def test_terms_belong_to_their_vocabulary(api):
    other = api.create("/vocabularies", {"jsonmodel_type": "vocabulary", "name": "Local", "ref_id": "local"})["uri"]
    api.create("/subjects", subject(("Ohio", "geographic"), vocabulary=other))
    api.create("/subjects", subject(("Ohio", "geographic")))
    local = api.get(f"{other}/terms").json()
    default = api.get("/vocabularies/1/terms").json()
    assert [t["vocabulary"] for t in local] == [other]
    assert local[0]["uri"] != default[0]["uri"]
    assert api.get(f"{other}/terms").json() == local  # stable


def test_a_read_back_subject_posts_back_without_warnings_and_keeps_its_term_uris(api):
    uri = api.create("/subjects", subject(("Maps", "genre_form")))["uri"]
    record = read(api, uri)
    response = api.post(uri, json=record)
    assert response.status_code == 200, response.text
    assert response.json()["warnings"] == []
    assert read(api, uri)["terms"][0]["uri"] == record["terms"][0]["uri"]
    assert update(api, uri, terms=[{"term": "Atlases", "term_type": "genre_form"}]).status_code == 200
    assert [t["term"] for t in api.get("/vocabularies/1/terms").json()] == ["Maps", "Atlases"]


def test_terms_of_a_missing_vocabulary_is_404(api):
    response = api.get("/vocabularies/999/terms")
    assert response.status_code == 404
    assert response.json() == {"error": "Vocabulary not found"}


def test_deleting_a_vocabulary_takes_its_terms(api, app):
    from tests.records.helpers import count_rows

    other = api.create("/vocabularies", {"jsonmodel_type": "vocabulary", "name": "Local", "ref_id": "local"})["uri"]
    subject_uri = api.create("/subjects", subject(("Ohio", "geographic"), vocabulary=other))["uri"]
    assert api.delete(other).status_code == 409  # a subject uses it
    assert api.delete(subject_uri).status_code == 200
    assert count_rows(app, "term") == 1
    assert api.delete(other).status_code == 200
    assert count_rows(app, "term") == 0


def test_a_batch_import_shares_terms_with_its_own_subjects_and_stored_ones(api, repo):
    stored = read(api, api.create("/subjects", subject(("Ohio", "geographic")))["uri"])
    records = [
        {**subject(("Ohio", "geographic"), ("Maps", "genre_form")), "uri": "/subjects/import_1"},
        {**subject(("Maps", "genre_form"), ("Rivers", "topical")), "uri": "/subjects/import_2"},
    ]
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    saved = response.json()[-1]["saved"]
    first, second = (read(api, saved[f"/subjects/import_{n}"][0]) for n in (1, 2))
    assert first["terms"][0]["uri"] == stored["terms"][0]["uri"]
    assert first["terms"][1]["uri"] == second["terms"][0]["uri"]
    terms = api.get("/vocabularies/1/terms").json()
    assert sorted((t["term"], t["term_type"]) for t in terms) == [("Maps", "genre_form"), ("Ohio", "geographic"), ("Rivers", "topical")]
