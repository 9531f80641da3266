"""Listing parameters: page / id_set / all_ids and their precedence, their values, sizes and order."""

from __future__ import annotations

import pytest

from tests.factories import CRUD_TYPES, collection_path

REQUIRED = ["Parameter required but no value provided"]
PAGED_TYPES = [t for t in CRUD_TYPES if not t.list_is_plain_array]
ACCESSIONS = "/repositories/{repo}/accessions"


@pytest.fixture
def path(repo) -> str:
    return ACCESSIONS.format(repo=repo)


def add_accessions(api, path: str, count: int) -> list[int]:
    # Titles run backwards so that any ordering but by id shows.
    return [api.create(path, {"jsonmodel_type": "accession", "title": f"Accession {count - n:03}"})["id"] for n in range(count)]


def bad_request(response, *params: str) -> dict:
    """A 400 whose field errors name exactly `params`."""
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    errors = response.json()["error"]
    assert sorted(errors) == sorted(params), errors
    return errors


@pytest.mark.parametrize("rtype", PAGED_TYPES, ids=lambda t: t.name)
def test_one_of_page_id_set_all_ids_is_required(api, repo, rtype):
    response = api.get(collection_path(rtype, repo))
    errors = bad_request(response, "page", "id_set", "all_ids")
    assert errors == {"page": REQUIRED, "id_set": REQUIRED, "all_ids": REQUIRED}


def test_empty_values_do_not_count(api, path):
    bad_request(api.get(path, params={"all_ids": ""}), "page", "id_set", "all_ids")


@pytest.mark.parametrize(
    ("params", "mode"),
    [
        ({"all_ids": "True", "page": 1, "page_size": 100}, "page"),  # what ArchivesSnake sends
        ({"page": 1, "id_set": "1"}, "page"),
        ({"page": 2, "id_set": "1,a", "all_ids": 1}, "page"),  # the ignored ones are not even parsed
        ({"id_set": "1,2", "all_ids": 1}, "id_set"),
        ({"id_set[]": ["2"], "all_ids": 1}, "id_set"),
    ],
)
def test_several_modes_follow_archivesspace_precedence(api, path, params, mode):
    ids = add_accessions(api, path, 3)
    response = api.get(path, params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    if mode == "page":
        assert (body["this_page"], body["total"]) == (params["page"], 3)
        assert len(body["results"]) == (3 if params["page"] == 1 else 0)
    else:
        wanted = params["id_set"].split(",") if "id_set" in params else params["id_set[]"]
        assert [int(r["uri"].rsplit("/", 1)[1]) for r in body] == [ids[int(i) - 1] for i in wanted]


def test_archivessnake_listing_of_subjects_pages(api):
    for n in range(3):
        api.create("/subjects", {"jsonmodel_type": "subject", "title": f"Topic {n}", "source": "local", "terms": []})
    body = api.get("/subjects", params={"all_ids": True, "page": 1, "page_size": 100}).json()
    assert (body["first_page"], body["last_page"], body["this_page"], body["total"]) == (1, 1, 1, 3)
    assert [r["title"] for r in body["results"]] == ["Topic 0", "Topic 1", "Topic 2"]


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"page": 0}, "page"),
        ({"page": -1}, "page"),
        ({"page": "abc"}, "page"),
        ({"page": "1.5"}, "page"),
        ({"page": ""}, "page"),
        ({"page": 1, "page_size": 0}, "page_size"),
        ({"page": 1, "page_size": -1}, "page_size"),
        ({"page": 1, "page_size": "abc"}, "page_size"),
        ({"id_set": "1,a"}, "id_set"),
        ({"id_set": "0"}, "id_set"),
        ({"id_set[]": ["1", "x"]}, "id_set"),
    ],
)
def test_bad_values_are_400_naming_the_parameter(api, path, params, name):
    add_accessions(api, path, 1)
    errors = bad_request(api.get(path, params=params), name)
    assert isinstance(errors[name][0], str) and errors[name][0]


def test_default_page_size_is_ten(api, path):
    ids = add_accessions(api, path, 12)
    first = api.get(path, params={"page": 1}).json()
    assert (first["first_page"], first["last_page"], first["this_page"], first["total"]) == (1, 2, 1, 12)
    assert [r["uri"] for r in first["results"]] == [f"{path}/{i}" for i in ids[:10]]
    second = api.get(path, params={"page": 2}).json()
    assert [r["uri"] for r in second["results"]] == [f"{path}/{i}" for i in ids[10:]]


def test_page_size_is_honoured(api, path):
    ids = add_accessions(api, path, 7)
    page = api.get(path, params={"page": 2, "page_size": 3}).json()
    assert {k: page[k] for k in ("first_page", "last_page", "this_page", "total")} == {
        "first_page": 1,
        "last_page": 3,
        "this_page": 2,
        "total": 7,
    }
    assert [r["uri"] for r in page["results"]] == [f"{path}/{i}" for i in ids[3:6]]


@pytest.mark.parametrize("settings_overrides", [{"max_page_size": 5, "default_page_size": 3}])
def test_page_size_above_the_maximum_is_clamped(api, path):
    add_accessions(api, path, 12)
    page = api.get(path, params={"page": 1, "page_size": 100}).json()
    assert len(page["results"]) == 5
    assert (page["last_page"], page["total"]) == (3, 12)
    assert len(api.get(path, params={"page": 3, "page_size": 100}).json()["results"]) == 2


def test_a_page_beyond_the_end_is_empty(api, path):
    add_accessions(api, path, 3)
    response = api.get(path, params={"page": 5})
    assert response.status_code == 200
    assert response.json() == {"first_page": 1, "last_page": 1, "this_page": 5, "total": 3, "results": []}


@pytest.mark.parametrize("form", ["comma", "brackets"])
def test_id_set_must_be_smaller_than_the_default_page_size(api, path, form):
    ids = add_accessions(api, path, 10)

    def get(wanted):
        return api.get(path, params={"id_set": ",".join(map(str, wanted))} if form == "comma" else {"id_set[]": wanted})

    bad_request(get(ids), "id_set")
    allowed = get(ids[:9])
    assert allowed.status_code == 200
    assert [r["uri"] for r in allowed.json()] == [f"{path}/{i}" for i in ids[:9]]


@pytest.mark.parametrize("settings_overrides", [{"default_page_size": 4}])
def test_id_set_limit_follows_the_configured_page_size(api, path):
    ids = add_accessions(api, path, 4)
    bad_request(api.get(path, params={"id_set": ",".join(map(str, ids))}), "id_set")
    assert len(api.get(path, params={"id_set": ",".join(map(str, ids[:3]))}).json()) == 3
    assert len(api.get(path, params={"page": 1}).json()["results"]) == 4


def test_id_set_is_ordered_by_id_and_skips_unknown_ids(api, path):
    ids = add_accessions(api, path, 4)
    response = api.get(path, params={"id_set": f"{ids[3]},999,{ids[0]}, {ids[2]}"})
    assert response.status_code == 200
    assert [r["uri"] for r in response.json()] == [f"{path}/{i}" for i in (ids[0], ids[2], ids[3])]


def test_results_are_ordered_by_id(api, path):
    ids = add_accessions(api, path, 6)
    # Renaming the first record (the update bumps its mtime) must not move it.
    first = api.get(f"{path}/{ids[0]}").json()
    assert api.post(first["uri"], json={**first, "title": "ZZZ last alphabetically"}).status_code == 200
    page = api.get(path, params={"page": 1}).json()
    assert [r["uri"] for r in page["results"]] == [f"{path}/{i}" for i in sorted(ids)]
    assert api.get(path, params={"all_ids": 1}).json() == sorted(ids)


def test_all_ids_takes_any_non_empty_value(api, path):
    ids = add_accessions(api, path, 2)
    assert api.get(path, params={"all_ids": "false"}).json() == ids


def test_unknown_query_parameters_are_ignored(api, path):
    add_accessions(api, path, 2)
    plain = api.get(path, params={"page": 1}).json()
    noisy = api.get(path, params={"page": 1, "colour": "blue", "sort": "title", "page[]": "x"})
    assert noisy.status_code == 200
    assert noisy.json() == plain


def test_listings_are_scoped_to_their_repository(api, repo, path):
    other = api.create_repository("OTHER")
    mine = add_accessions(api, path, 2)
    theirs = add_accessions(api, ACCESSIONS.format(repo=other), 3)
    assert api.get(path, params={"all_ids": 1}).json() == mine
    assert api.get(path, params={"page": 1}).json()["total"] == 2
    assert api.get(path, params={"id_set": ",".join(map(str, theirs[:2]))}).json() == []


@pytest.mark.parametrize("rtype", PAGED_TYPES, ids=lambda t: t.name)
def test_every_paged_type_follows_the_same_rules(api, repo, rtype):
    path = collection_path(rtype, repo)
    ids = [api.create(path, api.minimal(rtype, repo))["id"] for _ in range(3)]
    page = api.get(path, params={"page": 2, "page_size": 2}).json()
    assert (page["last_page"], page["this_page"], page["total"], len(page["results"])) == (2, 2, 3, 1)
    assert page["results"][0]["uri"] == rtype.uri(ids[2], repo)
    assert api.get(path, params={"all_ids": 1}).json() == ids
    bad_request(api.get(path, params={"page": 0}), "page")
