"""Top containers' locations and profile, and the fields computed from the records pointing at
them: collection, series, is_linked_to_published_record, subcontainer_barcodes and the display
strings (backend/app/model/top_container.rb, aspace-model.md §3.6)."""

from __future__ import annotations

import threading

from tests.records.helpers import make_ao, make_resource, read, update


def containers(repo: int) -> str:
    return f"/repositories/{repo}/top_containers"


def make_location(api, barcode: str, **fields) -> str:
    return api.create("/locations", {"jsonmodel_type": "location", "building": "Main", "barcode": barcode, **fields})["uri"]


def place(location: str, **fields) -> dict:
    return {"jsonmodel_type": "container_location", "ref": location, "start_date": "2024-01-01", **fields}


def make_container(api, repo: int, indicator: str = "1", **fields) -> str:
    return api.create(containers(repo), {"jsonmodel_type": "top_container", "indicator": indicator, **fields})["uri"]


def instance(container: str, **sub) -> dict:
    return {"jsonmodel_type": "instance", "instance_type": "mixed_materials", "sub_container": {"top_container": {"ref": container}, **sub}}


# -- container_locations and container_profile ------------------------------------------------


def test_a_container_location_defaults_to_current_and_resolves(api, repo):
    location = make_location(api, "L1")
    uri = make_container(api, repo, container_locations=[place(location, note="top shelf")])
    record = read(api, uri, **{"resolve[]": ["container_locations"]})
    [found] = record["container_locations"]
    assert found["status"] == "current"
    assert found["start_date"] == "2024-01-01" and found["note"] == "top shelf"
    assert found["_resolved"]["title"] == "Main [L1]"


def test_a_container_location_needs_a_start_date_and_a_location(api, repo):
    location = make_location(api, "L1")
    no_date = api.post(
        containers(repo), json={"jsonmodel_type": "top_container", "indicator": "1", "container_locations": [{"ref": location}]}
    )
    assert no_date.status_code == 400 and "container_locations/0/start_date" in no_date.json()["error"]
    wrong = api.post(
        containers(repo), json={"jsonmodel_type": "top_container", "indicator": "1", "container_locations": [place("/subjects/1")]}
    )
    assert wrong.status_code == 400 and "container_locations/0/ref" in wrong.json()["error"]
    gone = api.post(
        containers(repo), json={"jsonmodel_type": "top_container", "indicator": "1", "container_locations": [place("/locations/999")]}
    )
    assert gone.status_code == 400 and "container_locations/0" in gone.json()["error"]


def test_a_previous_location_needs_an_end_date_and_a_temporary_location(api, repo):
    shelf = make_location(api, "L1")
    loan = make_location(api, "L2", temporary="loan")
    body = {"jsonmodel_type": "top_container", "indicator": "1"}
    no_end = api.post(containers(repo), json={**body, "container_locations": [place(loan, status="previous")]})
    assert no_end.status_code == 400
    assert no_end.json()["error"] == {"container_locations/0/end_date": ["is required if status is previous"]}
    permanent = api.post(
        containers(repo), json={**body, "container_locations": [place(loan), place(shelf, status="previous", end_date="2024-02-01")]}
    )
    assert permanent.status_code == 400
    assert permanent.json()["error"] == {"container_locations/1/status": ["cannot be previous if Location is not temporary"]}
    fine = api.post(
        containers(repo), json={**body, "container_locations": [place(shelf), place(loan, status="previous", end_date="2024-02-01")]}
    )
    assert fine.status_code == 200, fine.text


def test_deleting_a_location_in_use_is_refused(api, repo):
    location = make_location(api, "L1")
    uri = make_container(api, repo, container_locations=[place(location)])
    response = api.delete(location)
    assert response.status_code == 409
    assert response.json() == {"error": "Location cannot be deleted if linked"}
    assert read(api, location)["title"] == "Main [L1]"
    assert update(api, uri, container_locations=[]).status_code == 200
    assert api.delete(location).status_code == 200


def test_deleting_a_container_profile_unlinks_it(api, repo):
    profile = api.create(
        "/container_profiles",
        {
            "jsonmodel_type": "container_profile",
            "name": "Record carton",
            "dimension_units": "inches",
            "extent_dimension": "depth",
            "height": "10",
            "width": "12",
            "depth": "15",
        },
    )["uri"]
    uri = make_container(api, repo, type="box", container_profile={"ref": profile})
    record = read(api, uri, **{"resolve[]": ["container_profile"]})
    assert record["container_profile"]["_resolved"]["name"] == "Record carton"
    assert record["long_display_string"] == "Box 1, Record carton"
    assert api.delete(profile).status_code == 200
    record = read(api, uri)
    assert "container_profile" not in record
    assert record["long_display_string"] == "Box 1"


# -- computed from the records pointing at the container ----------------------------------------


def test_a_lone_container_has_empty_computed_fields(api, repo):
    record = read(api, make_container(api, repo, type="box", barcode="39001"))
    assert record["collection"] == [] and record["series"] == []
    assert record["is_linked_to_published_record"] is False
    assert record["subcontainer_barcodes"] == ""
    assert record["display_string"] == "Box 1: [Barcode: 39001]"
    assert record["long_display_string"] == "Box 1 [Barcode: 39001]"


def test_collection_and_series_come_from_an_archival_objects_instance(api, repo):
    location = make_location(api, "L1")
    box = make_container(api, repo, "7", type="box", container_locations=[place(location)])
    resource = make_resource(api, repo, "Smith papers", id_0="MS", id_1="12", publish=True)
    series = make_ao(api, repo, "Correspondence", resource=resource, level="series", component_id="S1", publish=True)["uri"]
    file = make_ao(api, repo, "Letters", resource=resource, parent=series, level="file", publish=True)["uri"]
    make_ao(
        api,
        repo,
        "Drafts",
        resource=resource,
        parent=file,
        level="item",
        instances=[instance(box, barcode_2="F-1", type_2="folder", indicator_2="1")],
    )
    record = read(api, box)
    assert record["collection"] == [{"ref": resource, "identifier": "MS--12", "display_string": "Smith papers"}]
    assert record["series"] == [
        {"ref": series, "identifier": "S1", "display_string": "Correspondence", "level_display_string": "Series", "publish": True}
    ]
    assert record["subcontainer_barcodes"] == "F-1 "
    assert record["display_string"] == "Box 7: Series S1"
    assert record["long_display_string"] == "Box 7, Main [L1], MS--12, Smith papers, Series S1"
    # The item itself is unpublished: nothing published points at the box.
    assert record["is_linked_to_published_record"] is False


def publish_repository(api, repo: int) -> None:
    """A record is published only within a published repository (ImpliedPublicationCalculator)."""
    assert update(api, f"/repositories/{repo}", publish=True).status_code == 200


def test_published_links_and_accessions(api, repo):
    box = make_container(api, repo, "2")
    publish_repository(api, repo)
    accession = api.create(
        f"/repositories/{repo}/accessions",
        {"jsonmodel_type": "accession", "title": "Gift", "id_0": "2024", "id_1": "5", "publish": True, "instances": [instance(box)]},
    )["uri"]
    record = read(api, box)
    assert record["collection"] == [{"ref": accession, "identifier": "2024--5", "display_string": "Gift"}]
    assert record["is_linked_to_published_record"] is True
    assert update(api, accession, publish=False).status_code == 200
    assert read(api, box)["is_linked_to_published_record"] is False
    assert update(api, accession, publish=True).status_code == 200
    assert update(api, f"/repositories/{repo}", publish=False).status_code == 200
    assert read(api, box)["is_linked_to_published_record"] is False


def test_an_otherlevel_accession_counts_as_a_series_and_an_unpublished_ancestor_hides(api, repo):
    box = make_container(api, repo, "3", type="box")
    publish_repository(api, repo)
    resource = make_resource(api, repo, "Jones records", id_0="R1", publish=True)
    group = make_ao(api, repo, "Acc 1", resource=resource, level="otherlevel", other_level="Accession", component_id="A1")["uri"]
    make_ao(api, repo, "Box list", resource=resource, parent=group, level="file", publish=True, instances=[instance(box)])
    record = read(api, box)
    assert [s["level_display_string"] for s in record["series"]] == ["Accession"]
    assert record["series"][0]["publish"] is False
    assert record["display_string"] == "Box 3: Accession A1"
    assert record["is_linked_to_published_record"] is False  # its parent is not published
    assert update(api, group, publish=True).status_code == 200
    assert read(api, box)["is_linked_to_published_record"] is True


def test_a_resource_linked_directly_and_through_objects_is_listed_once(api, repo):
    box = make_container(api, repo, "4")
    resource = make_resource(api, repo, "Papers", id_0="P1", instances=[instance(box)])
    make_ao(api, repo, "File", resource=resource, level="file", component_id="F1", instances=[instance(box, barcode_2="X")])
    make_ao(api, repo, "Other", resource=resource, level="file", instances=[instance(box, barcode_2="Y")])
    record = read(api, box)
    assert [c["ref"] for c in record["collection"]] == [resource]
    assert record["series"] == []  # level file is no series
    assert record["subcontainer_barcodes"] == "X Y "


def test_a_page_of_containers_costs_a_bounded_number_of_queries(api, repo, app):
    from sqlalchemy import event

    resource = make_resource(api, repo, "Big", id_0="B")
    series = make_ao(api, repo, "S", resource=resource, level="series", component_id="S")["uri"]
    for n in range(12):
        box = make_container(api, repo, f"b{n}")
        make_ao(api, repo, f"f{n}", resource=resource, parent=series, level="file", instances=[instance(box)])
    engine = app.state.fonds.db.engine

    # The indexer's own statements (it polls the change log in its thread) are not the listing's.
    def statements_for(size: int) -> tuple[int, list[dict]]:
        seen = []

        def listener(*args):
            if threading.current_thread().name != "fonds-indexer":
                seen.append(args[2])

        event.listen(engine, "before_cursor_execute", listener)
        try:
            results = api.get(containers(repo), params={"page": 1, "page_size": size}).json()["results"]
        finally:
            event.remove(engine, "before_cursor_execute", listener)
        return len(seen), results

    few, two = statements_for(2)
    many, twelve = statements_for(12)
    assert len(two) == 2 and len(twelve) == 12
    assert all(r["series"][0]["ref"] == series for r in twelve)
    assert many <= few
