"""Locations, location profiles and container profiles through HTTP: derived titles and display
strings, ArchivesSpace's validation rules, function de-duplication, location batches and what
deleting them does (aspace-model.md §3.7–§3.9, backend/app/model/location.rb)."""

from __future__ import annotations

import pytest

from tests.records.helpers import read, update


def location(**fields) -> dict:
    return {"jsonmodel_type": "location", "building": "Main", **fields}


def container_profile(**fields) -> dict:
    body = {
        "jsonmodel_type": "container_profile",
        "name": "Hollinger",
        "dimension_units": "inches",
        "extent_dimension": "width",
        "height": "10",
        "width": "5.25",
        "depth": "15.5",
    }
    return {**body, **fields}


# -- location titles -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, title",
    [
        ({"barcode": "B1"}, "Main [B1]"),
        ({"floor": "2", "room": "201", "area": "East", "barcode": "B1"}, "Main, 2, 201, East [B1]"),
        ({"room": "Vault", "classification": "Q"}, "Main, Vault [Q]"),
        (
            {"barcode": "B1", "classification": "Q", "coordinate_1_label": "Range", "coordinate_1_indicator": "3"},
            "Main [B1, Q, Range: 3]",
        ),
        (
            {
                "coordinate_1_label": "Range",
                "coordinate_1_indicator": "3",
                "coordinate_2_label": "Shelf",
                "coordinate_2_indicator": "A",
                "coordinate_3_label": "Box",
            },
            "Main [Range: 3, Shelf: A, Box: ]",
        ),
    ],
)
def test_the_title_is_derived_as_archivesspace_derives_it(api, fields, title):
    created = api.create("/locations", location(**fields, title="ignored, it is read-only"))
    record = read(api, created["uri"])
    assert record["title"] == title
    assert created["warnings"] == []


def test_the_title_follows_an_update(api):
    uri = api.create("/locations", location(barcode="B1"))["uri"]
    assert update(api, uri, floor="3").status_code == 200
    assert read(api, uri)["title"] == "Main, 3 [B1]"


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"floor": "1"},
        {"coordinate_1_label": "Range"},
        {"coordinate_1_indicator": "1"},
        {"coordinate_2_label": "S", "coordinate_2_indicator": "1"},
    ],
)
def test_a_location_needs_a_barcode_a_classification_or_coordinate_1(api, fields):
    response = api.post("/locations", json=location(**fields))
    assert response.status_code == 400
    assert response.json()["error"] == {"coded_errors": ["location_fields_error"]}


def test_a_location_needs_a_building(api):
    response = api.post("/locations", json={"jsonmodel_type": "location", "barcode": "B1"})
    assert response.status_code == 400
    assert "building" in response.json()["error"]


def test_functions_are_kept_once_per_type(api):
    functions = [{"location_function_type": t} for t in ("shared", "arrivals", "shared", "arrivals", "av_materials")]
    uri = api.create("/locations", location(barcode="B1", functions=functions))["uri"]
    kept = [f["location_function_type"] for f in read(api, uri)["functions"]]
    assert kept == ["shared", "arrivals", "av_materials"]


def test_refs_to_a_profile_and_an_owner_repository_resolve(api, repo):
    profile = api.create("/location_profiles", {"jsonmodel_type": "location_profile", "name": "Shelf"})["uri"]
    body = location(barcode="B1", location_profile={"ref": profile}, owner_repo={"ref": f"/repositories/{repo}"}, temporary="loan")
    uri = api.create("/locations", body)["uri"]
    record = read(api, uri, **{"resolve[]": ["location_profile", "owner_repo"]})
    assert record["location_profile"]["_resolved"]["name"] == "Shelf"
    assert record["owner_repo"]["_resolved"]["repo_code"]
    assert record["temporary"] == "loan"
    bad = api.post("/locations", json=location(barcode="B2", location_profile={"ref": "/location_profiles/999"}))
    assert bad.status_code == 400 and "location_profile" in bad.json()["error"]


def test_deleting_a_location_profile_unlinks_it_from_its_locations(api):
    profile = api.create("/location_profiles", {"jsonmodel_type": "location_profile", "name": "Shelf"})["uri"]
    uri = api.create("/locations", location(barcode="B1", location_profile={"ref": profile}))["uri"]
    before = read(api, uri)["lock_version"]
    assert api.delete(profile).status_code == 200
    record = read(api, uri)
    assert "location_profile" not in record
    assert record["lock_version"] == before + 1


def test_location_profile_dimensions_must_be_numbers(api):
    response = api.post("/location_profiles", json={"jsonmodel_type": "location_profile", "name": "P", "depth": "1.234"})
    assert response.status_code == 400
    assert response.json()["error"] == {"depth": ["must be a number with no more than 2 decimal places"]}


# -- container profiles ----------------------------------------------------------------------


def test_a_container_profile_has_archivesspace_display_string(api):
    uri = api.create("/container_profiles", container_profile())["uri"]
    record = read(api, uri)
    assert record["display_string"] == "Hollinger [15.5d, 10h, 5.25w inches] extent measured by width"


@pytest.mark.parametrize(
    "fields, errors",
    [
        ({"height": "ten"}, {"height": ["must be a number with no more than 2 decimal places"]}),
        (
            {"width": "1.005", "depth": "."},
            {
                "width": ["must be a number with no more than 2 decimal places"],
                "depth": ["must be a number with no more than 2 decimal places"],
            },
        ),
        ({"stacking_limit": "-1"}, {"stacking_limit": ["must be a positive integer"]}),
        ({"stacking_limit": "2.5"}, {"stacking_limit": ["must be a positive integer"]}),
        ({"extent_dimension": "girth"}, None),
        ({"dimension_units": "furlongs"}, None),
    ],
)
def test_container_profile_values_are_checked(api, fields, errors):
    response = api.post("/container_profiles", json=container_profile(**fields))
    assert response.status_code == 400
    if errors is not None:
        assert response.json()["error"] == errors
    else:
        assert list(response.json()["error"]) == list(fields)


@pytest.mark.parametrize("missing", ["name", "dimension_units", "extent_dimension", "height", "width", "depth"])
def test_container_profile_required_fields(api, missing):
    body = container_profile()
    del body[missing]
    response = api.post("/container_profiles", json=body)
    assert response.status_code == 400
    assert missing in response.json()["error"]


def test_container_profile_names_are_unique(api):
    api.create("/container_profiles", container_profile(stacking_limit="4", url="https://example.org/box", notes="acid free"))
    response = api.post("/container_profiles", json=container_profile())
    assert response.status_code == 400
    assert response.json()["error"] == {"name": ["container profile name not unique"]}


# -- batches ---------------------------------------------------------------------------------


def test_a_batch_dry_run_lists_the_titles_and_creates_nothing(api):
    batch = {
        "jsonmodel_type": "location_batch",
        "building": "Annex",
        "floor": "1",
        "coordinate_1_range": {"label": "Range", "start": "1", "end": "2"},
        "coordinate_2_range": {"label": "Shelf", "start": "a", "end": "c", "prefix": "S-"},
    }
    response = api.post("/locations/batch", params={"dry_run": "true"}, json=batch)
    assert response.status_code == 200, response.text
    assert response.json() == [f"Annex, 1 [Range: {r}, Shelf: S-{s}]" for r in ("1", "2") for s in "abc"]
    assert api.get("/locations", params={"all_ids": "true"}).json() == []


def test_a_batch_creates_every_combination(api):
    batch = {"building": "Annex", "temporary": "exhibit", "coordinate_1_range": {"label": "Bay", "start": "08", "end": "11", "suffix": "x"}}
    uris = api.post("/locations/batch", json=batch).json()
    assert len(uris) == 4
    titles = [read(api, uri)["title"] for uri in uris]
    assert titles == ["Annex [Bay: 08x]", "Annex [Bay: 09x]", "Annex [Bay: 10x]", "Annex [Bay: 11x]"]
    assert {read(api, uri)["temporary"] for uri in uris} == {"exhibit"}


@pytest.mark.parametrize(
    "batch, field",
    [
        ({"building": "Annex"}, "coordinate_1_range"),
        ({"building": "Annex", "coordinate_1_range": {"label": "Bay", "start": "1"}}, "coordinate_1_range/end"),
        ({"coordinate_1_range": {"label": "Bay", "start": "1", "end": "2"}}, "building"),
        ({"building": "A", "barcode": "x" * 300, "coordinate_1_range": {"label": "Bay", "start": "1", "end": "2"}}, "barcode"),
        (
            {
                "building": "A",
                "coordinate_1_range": {"label": "B", "start": "1", "end": "200"},
                "coordinate_2_range": {"label": "C", "start": "1", "end": "200"},
            },
            "coordinate_1_range",
        ),
    ],
)
def test_a_bad_batch_is_refused_naming_the_field(api, batch, field):
    response = api.post("/locations/batch", json=batch)
    assert response.status_code == 400
    assert field in response.json()["error"]
    assert api.get("/locations", params={"all_ids": "true"}).json() == []


def test_a_batch_update_sets_fields_on_every_location(api):
    uris = [api.create("/locations", location(barcode=f"B{n}"))["uri"] for n in range(3)]
    response = api.post(
        "/locations/batch_update", json={"jsonmodel_type": "location_batch_update", "record_uris": uris[:2], "building": "Annex"}
    )
    assert response.status_code == 200, response.text
    assert [r["status"] for r in response.json()] == ["Updated", "Updated"]
    assert [read(api, uri)["title"] for uri in uris] == ["Annex [B0]", "Annex [B1]", "Main [B2]"]
    bad = api.post("/locations/batch_update", json={"record_uris": ["/subjects/1"], "building": "X"})
    assert bad.status_code == 400 and "record_uris/0" in bad.json()["error"]


def test_batches_need_update_location_record(api, repo):
    from tests.factories import make_user

    archivist = make_user(api, "archivist", groups=[(repo, "repository-archivists")])
    manager = make_user(api, "manager", groups=[(repo, "repository-managers")])
    batch = {"building": "Annex", "coordinate_1_range": {"label": "Bay", "start": "1", "end": "1"}}
    assert archivist.post("/locations/batch", json=batch).status_code == 403
    assert manager.post("/locations/batch", json=batch).status_code == 200


def test_schemas_of_the_new_types_and_subrecords_are_served(client):
    everything = client.get("/schemas").json()
    served = ("location", "location_function", "container_profile", "container_location", "location_profile", "term", "top_container")
    for name in (*served, "location_batch", "location_batch_update"):
        assert name in everything
        response = client.get(f"/schemas/{name}")
        assert response.status_code == 200 and response.json() == everything[name]
    assert everything["top_container"]["properties"]["container_locations"]["items"] == {"$ref": "container_location"}
