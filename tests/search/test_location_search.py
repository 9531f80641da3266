"""Locations, container profiles and top containers in search: their own fields, the location
titles and profile of a container, and containers' documents following the records that point at
them (indexer_common.rb's field names)."""

from __future__ import annotations

from tests.records.helpers import instance, make_ao, make_resource, read, update
from tests.search.helpers import hits, search


def make_location(api, **fields) -> str:
    return api.create("/locations", {"jsonmodel_type": "location", "building": "Main Library", **fields})["uri"]


def test_locations_are_found_by_title_building_and_barcode(api, repo):
    profile = api.create("/location_profiles", {"jsonmodel_type": "location_profile", "name": "Compact shelving"})["uri"]
    vault = make_location(api, room="Vault", barcode="LOC-77", location_profile={"ref": profile}, temporary="exhibit")
    annex = make_location(api, building="Annex", coordinate_1_label="Range", coordinate_1_indicator="4")
    assert set(hits(api, "/search", **{"type[]": ["location"]})) == {vault, annex}
    assert hits(api, "/search", q="vault", **{"type[]": ["location"]}) == [vault]
    assert hits(api, "/search", q='building:"Annex"') == [annex]
    assert hits(api, "/search", q="LOC-77") == [vault]
    assert hits(api, "/search", q="temporary:exhibit") == [vault]
    [doc] = search(api, "/search", q="vault", **{"type[]": ["location"]}).json()["results"]
    assert doc["title"] == "Main Library, Vault [LOC-77]"
    assert doc["location_profile_display_string_u_sstr"] == ["Compact shelving"]
    assert doc["repository"] == "global"
    # A repository's search includes global records such as locations.
    assert vault in hits(api, f"/repositories/{repo}/search", q="vault")


def test_container_profiles_are_searchable(api):
    uri = api.create(
        "/container_profiles",
        {
            "jsonmodel_type": "container_profile",
            "name": "Hollinger box",
            "dimension_units": "inches",
            "extent_dimension": "width",
            "height": "10",
            "width": "5",
            "depth": "15",
        },
    )["uri"]
    [doc] = search(api, "/search", q="hollinger", **{"type[]": ["container_profile"]}).json()["results"]
    assert doc["uri"] == uri
    assert doc["title"] == "Hollinger box [15d, 10h, 5w inches] extent measured by width"
    assert doc["container_profile_width_u_sstr"] == "5"


def test_a_containers_document_shows_its_locations_profile_and_collection(api, repo):
    location = make_location(api, room="Stacks", barcode="S-1")
    profile = api.create(
        "/container_profiles",
        {
            "jsonmodel_type": "container_profile",
            "name": "Carton",
            "dimension_units": "inches",
            "extent_dimension": "depth",
            "height": "1",
            "width": "1",
            "depth": "1",
        },
    )["uri"]
    box = api.create(
        f"/repositories/{repo}/top_containers",
        {
            "jsonmodel_type": "top_container",
            "indicator": "9",
            "type": "box",
            "container_profile": {"ref": profile},
            "container_locations": [{"ref": location, "start_date": "2024-01-01"}],
        },
    )["uri"]
    path = f"/repositories/{repo}/top_containers/search"
    [doc] = api.get(path, params={"q": "stacks"}).json()["response"]["docs"]
    assert doc["uri"] == box
    assert doc["location_display_string_u_sstr"] == ["Main Library, Stacks [S-1]"]
    assert doc["location_uri_u_sstr"] == [location]
    assert doc["container_profile_uri_u_sstr"] == profile
    assert doc["has_location_u_sbool"] is True and doc["empty_u_sbool"] is True
    # A renamed location is shown in the documents of the containers kept there.
    assert update(api, location, room="Vault").status_code == 200
    assert [d["uri"] for d in api.get(path, params={"q": "vault"}).json()["response"]["docs"]] == [box]
    # A record pointing at the box puts its collection in the box's document.
    resource = make_resource(api, repo, "Whaling logs", id_0="MS", id_1="9")
    make_ao(api, repo, "Log", resource=resource, level="file", instances=[instance(box)])
    assert read(api, box)["collection"][0]["ref"] == resource
    [doc] = api.get(path, params={"q": f'collection_uri_u_sstr:"{resource}"'}).json()["response"]["docs"]
    assert doc["collection_identifier_stored_u_sstr"] == ["MS--9"] and doc["empty_u_sbool"] is False


def test_containers_follow_their_collection_and_series_when_those_change(api, repo):
    box = api.create(f"/repositories/{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": "3"})["uri"]
    resource = make_resource(api, repo, "Whaling logs", id_0="MS", id_1="9")
    series = make_ao(api, repo, "Voyages", resource=resource, level="series", component_id="S1")["uri"]
    make_ao(api, repo, "Log", resource=resource, parent=series, level="file", instances=[instance(box)])
    path = f"/repositories/{repo}/top_containers/search"

    def doc() -> dict:
        [found] = api.get(path, params={"q": f'collection_uri_u_sstr:"{resource}"'}).json()["response"]["docs"]
        return found

    assert (doc()["collection_display_string_u_sstr"], doc()["series_identifier_stored_u_sstr"]) == (["Whaling logs"], ["S1"])
    assert update(api, resource, title="Sealing logs").status_code == 200
    assert doc()["collection_display_string_u_sstr"] == ["Sealing logs"]
    assert update(api, series, component_id="S2").status_code == 200
    assert (doc()["collection_display_string_u_sstr"], doc()["series_identifier_stored_u_sstr"]) == (["Sealing logs"], ["S2"])
    assert doc()["title"] == read(api, box)["long_display_string"] == "3, MS--9, Sealing logs, Series S2"
