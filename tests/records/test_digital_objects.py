"""Digital objects and their components through HTTP: identifiers, file versions, display strings,
the instances of archival records that point at a digital object, and search."""

from __future__ import annotations

import pytest

from tests.records.helpers import instance, make_ao, make_resource, make_top_container, read
from tests.search.helpers import hits


def make_do(api, repo: int, digital_object_id: str, title: str = "Photographs", **extra) -> str:
    body = {"jsonmodel_type": "digital_object", "title": title, "digital_object_id": digital_object_id, **extra}
    return api.create(f"/repositories/{repo}/digital_objects", body)["uri"]


def make_doc(api, repo: int, digital_object: str, **extra) -> dict:
    body = {"jsonmodel_type": "digital_object_component", "digital_object": {"ref": digital_object}, **extra}
    return api.create(f"/repositories/{repo}/digital_object_components", body)


def do_instance(digital_object: str, **extra) -> dict:
    return {"jsonmodel_type": "instance", "instance_type": "digital_object", "digital_object": {"ref": digital_object}, **extra}


def file_version(uri: str, **extra) -> dict:
    return {"jsonmodel_type": "file_version", "file_uri": uri, **extra}


DATE = {"jsonmodel_type": "date", "date_type": "inclusive", "label": "creation", "begin": "1927", "end": "1929"}


def test_a_digital_object_keeps_its_fields_and_points_at_its_tree(api, repo):
    versions = [
        file_version(
            "https://example.org/a.tif",
            publish=True,
            use_statement="image-master",
            xlink_actuate_attribute="onRequest",
            xlink_show_attribute="new",
            file_format_name="tiff",
            file_format_version="6.0",
            file_size_bytes=123456,
            is_representative=True,
            checksum="abc",
            checksum_method="md5",
            caption="Front",
        )
    ]
    note = {"jsonmodel_type": "note_digital_object", "type": "summary", "content": ["Glass plates"]}
    uri = make_do(
        api,
        repo,
        "DO-1",
        level="image",
        digital_object_type="still_image",
        file_versions=versions,
        notes=[note],
        dates=[DATE],
        publish=True,
    )
    record = read(api, uri)
    assert record["digital_object_id"] == "DO-1"
    assert (record["level"], record["digital_object_type"]) == ("image", "still_image")
    assert record["file_versions"][0]["file_size_bytes"] == 123456
    assert record["file_versions"][0]["caption"] == "Front"
    assert record["notes"][0]["content"] == ["Glass plates"]
    assert record["tree"] == {"ref": f"{uri}/tree"}
    assert (record["linked_instances"], record["collection"]) == ([], [])


def test_digital_object_id_is_required_and_unique_in_its_repository(api, repo):
    make_do(api, repo, "DO-1")
    response = api.post(f"/repositories/{repo}/digital_objects", json={"jsonmodel_type": "digital_object", "title": "Other"})
    assert response.status_code == 400
    assert response.json()["error"] == {"digital_object_id": ["Property is required but was missing"]}
    response = api.post(
        f"/repositories/{repo}/digital_objects", json={"jsonmodel_type": "digital_object", "title": "Other", "digital_object_id": "DO-1"}
    )
    assert response.status_code == 400
    assert response.json()["error"] == {"digital_object_id": ["Must be unique"]}
    other_repo = api.create_repository("OTHER")
    make_do(api, other_repo, "DO-1")


def test_a_representative_file_version_must_be_published_and_alone(api, repo):
    path = f"/repositories/{repo}/digital_objects"
    body = {"jsonmodel_type": "digital_object", "title": "Scans", "digital_object_id": "DO-2"}
    unpublished = api.post(path, json={**body, "file_versions": [file_version("a.tif", is_representative=True)]})
    assert unpublished.status_code == 400
    assert unpublished.json()["error"] == {"file_versions/0/is_representative": ["representative_file_version_must_be_published"]}
    two = [file_version("a.tif", publish=True, is_representative=True), file_version("b.tif", publish=True, is_representative=True)]
    response = api.post(path, json={**body, "file_versions": two})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "file_versions/1/is_representative": ["A digital_object can have only one FileVersion defined as: is_representative"]
    }
    missing_uri = api.post(path, json={**body, "file_versions": [{"jsonmodel_type": "file_version", "publish": True}]})
    assert missing_uri.status_code == 400
    assert missing_uri.json()["error"] == {"file_versions/0/file_uri": ["Property is required but was missing"]}
    assert api.post(path, json={**body, "file_versions": [two[0], file_version("b.tif", publish=True)]}).status_code == 200


def test_the_representative_file_version_is_chosen_as_archivesspace_does(api, repo):
    thumbnail = file_version("https://x.org/t.jpg", publish=True, use_statement="image-thumbnail")
    master = file_version("https://x.org/m.tif", publish=True, is_representative=True)
    following = file_version("https://x.org/big.tif", publish=True)
    body = {"jsonmodel_type": "digital_object", "title": "Scans", "digital_object_id": "DO-R"}
    response = api.post(
        f"/repositories/{repo}/digital_objects",
        json={**body, "file_versions": [thumbnail, master, following], "representative_file_version": {"file_uri": "mine"}},
    )
    assert response.status_code == 200 and response.json()["warnings"] == []
    assert read(api, response.json()["uri"])["representative_file_version"] == {**master, "link_uri": "https://x.org/big.tif"}
    # Without a representative one, a published thumbnail stands in; unpublished files never do.
    uri = make_do(api, repo, "DO-S", file_versions=[{**master, "publish": False, "is_representative": False}, thumbnail])
    # Filled with its schema defaults, as every file version is.
    assert read(api, uri)["representative_file_version"] == {**thumbnail, "is_representative": False}
    assert "representative_file_version" not in read(api, make_do(api, repo, "DO-T", file_versions=[file_version("a.tif")]))


def test_components_follow_the_same_file_version_rules(api, repo):
    digital_object = make_do(api, repo, "DO-3")
    body = {
        "jsonmodel_type": "digital_object_component",
        "digital_object": {"ref": digital_object},
        "label": "Side A",
        "file_versions": [file_version("a.wav", is_representative=True)],
    }
    response = api.post(f"/repositories/{repo}/digital_object_components", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == {"file_versions/0/is_representative": ["representative_file_version_must_be_published"]}


def test_a_component_needs_its_digital_object_and_a_label_title_or_date(api, repo):
    path = f"/repositories/{repo}/digital_object_components"
    response = api.post(path, json={"jsonmodel_type": "digital_object_component", "label": "Side A"})
    assert response.status_code == 400
    assert response.json()["error"] == {"digital_object": ["Property is required but was missing"]}
    digital_object = make_do(api, repo, "DO-4")
    response = api.post(path, json={"jsonmodel_type": "digital_object_component", "digital_object": {"ref": digital_object}})
    assert response.status_code == 400
    assert response.json()["error"] == {field: ["you must provide a label, title or date"] for field in ("label", "title", "dates")}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"title": "Reel 1", "label": "R1", "dates": [DATE]}, "Reel 1, 1927 - 1929"),
        ({"label": "Side A"}, "Side A"),
        ({"label": "Side A", "dates": [DATE]}, "Side A, 1927 - 1929"),
        ({"dates": [DATE, {**DATE, "date_type": "bulk", "expression": "1928"}]}, "1927 - 1929, bulk: 1928"),
    ],
)
def test_component_display_string(api, repo, fields, expected):
    digital_object = make_do(api, repo, "DO-5")
    uri = make_doc(api, repo, digital_object, **fields)["uri"]
    assert read(api, uri)["display_string"] == expected


def test_component_ids_are_unique_within_a_digital_object(api, repo):
    first, second = make_do(api, repo, "DO-6"), make_do(api, repo, "DO-7")
    make_doc(api, repo, first, label="A", component_id="c1")
    response = api.post(
        f"/repositories/{repo}/digital_object_components",
        json={"jsonmodel_type": "digital_object_component", "digital_object": {"ref": first}, "label": "B", "component_id": "c1"},
    )
    assert response.status_code == 400
    assert response.json()["error"] == {"component_id": ["A Digital Object Component ID must be unique to its Digital Object"]}
    make_doc(api, repo, second, label="B", component_id="c1")


def test_component_ancestors_and_position(api, repo):
    digital_object = make_do(api, repo, "DO-8")
    parent = make_doc(api, repo, digital_object, label="Album")["uri"]
    make_doc(api, repo, digital_object, label="Page 1", parent={"ref": parent})
    page = make_doc(api, repo, digital_object, label="Page 2", parent={"ref": parent})["uri"]
    record = read(api, page)
    assert record["position"] == 1
    # ArchivesSpace's digital object component ancestors carry no level.
    assert record["ancestors"] == [{"ref": parent}, {"ref": digital_object}]


def test_deleting_a_digital_object_takes_its_components(api, repo):
    digital_object = make_do(api, repo, "DO-9")
    parent = make_doc(api, repo, digital_object, label="Album")["uri"]
    child = make_doc(api, repo, digital_object, label="Page", parent={"ref": parent})["uri"]
    assert api.delete(digital_object).json() == {"status": "Deleted", "id": int(digital_object.rsplit("/", 1)[1])}
    assert api.get(parent).status_code == 404
    assert api.get(child).status_code == 404


def test_instances_pointing_at_a_digital_object_are_its_linked_instances(api, repo):
    digital_object = make_do(api, repo, "DO-10")
    resource = make_resource(api, repo, "Papers", instances=[do_instance(digital_object)])
    other = make_resource(api, repo, "Other papers")
    published = make_ao(api, repo, "Letters", resource=other, publish=True, instances=[do_instance(digital_object)])["uri"]
    hidden = make_ao(api, repo, "Drafts", resource=other, publish=False, instances=[do_instance(digital_object)])["uri"]
    accession = api.create(
        f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "Gift", "instances": [do_instance(digital_object)]}
    )["uri"]
    record = read(api, digital_object)
    assert record["linked_instances"] == [{"ref": resource}, {"ref": published}, {"ref": hidden}, {"ref": accession}]
    # An archival object gives its resource, and only while it is published (ArchivesSpace's ANW-1703).
    assert record["collection"] == [{"ref": resource}, {"ref": other}, {"ref": accession}]
    resolved = read(api, digital_object, **{"resolve[]": "linked_instances"})
    assert resolved["linked_instances"][0]["_resolved"]["title"] == "Papers"
    listed = api.get(f"/repositories/{repo}/digital_objects", params={"page": 1}).json()["results"]
    assert listed[0]["linked_instances"] == record["linked_instances"]
    assert read(api, resource, **{"resolve[]": "digital_object"})["instances"][0]["digital_object"]["_resolved"]["digital_object_id"] == (
        "DO-10"
    )


def test_instance_rules(api, repo):
    digital_object = make_do(api, repo, "DO-11")
    box = make_top_container(api, repo, "1")
    path = f"/repositories/{repo}/resources"
    cases = [
        ({"jsonmodel_type": "instance", "instance_type": "digital_object"}, {"instances/0/digital_object": ["Can't be empty"]}),
        (
            {**instance(box), "digital_object": {"ref": digital_object}},
            {"instances/0/instance_type": ["An instance with a digital object reference must be of type 'digital_object'"]},
        ),
        ({"jsonmodel_type": "instance", "instance_type": "mixed_materials"}, {"instances/0/sub_container": ["Can't be empty"]}),
    ]
    for given, errors in cases:
        response = api.post(path, json={"jsonmodel_type": "resource", "title": "Papers", "instances": [given]})
        assert response.status_code == 400, given
        assert response.json()["error"] == errors
    missing = api.post(path, json={"jsonmodel_type": "resource", "title": "Papers", "instances": [do_instance(f"{digital_object}9")]})
    assert missing.status_code == 400
    assert missing.json()["error"] == {"instances/0/digital_object": [f"Can't relate to non-existent record: {digital_object}9"]}


def test_deleting_a_digital_object_removes_the_instances_pointing_at_it(api, repo):
    digital_object = make_do(api, repo, "DO-12")
    box = make_top_container(api, repo, "1")
    resource = make_resource(api, repo, "Papers", instances=[instance(box), do_instance(digital_object)])
    component = make_ao(api, repo, "Letters", resource=resource, instances=[do_instance(digital_object)])["uri"]
    before = read(api, resource)["lock_version"]
    assert api.delete(digital_object).status_code == 200
    after = read(api, resource)
    assert [i["instance_type"] for i in after["instances"]] == ["mixed_materials"]
    assert after["lock_version"] == before + 1
    assert read(api, component)["instances"] == []


def test_search_finds_digital_objects_and_components(api, repo):
    versions = [file_version("https://example.org/scan-77.tif")]
    digital_object = make_do(api, repo, "PH-0077", "Harbour views", digital_object_type="still_image", file_versions=versions)
    component = make_doc(api, repo, digital_object, label="Plate 3", component_id="P3")["uri"]
    path = f"/repositories/{repo}/search"
    assert hits(api, path, q="PH-0077") == [digital_object]
    assert hits(api, path, q='digital_object_id:"PH-0077"') == [digital_object]
    assert hits(api, path, q="digital_object_type:still_image") == [digital_object]
    assert hits(api, path, q='file_uri:"https://example.org/scan-77.tif"') == [digital_object]
    assert hits(api, path, q="P3", **{"type[]": "digital_object_component"}) == [component]
    assert hits(api, path, q=f'ancestors:"{digital_object}"') == [component]
    assert hits(api, path, root_record=digital_object) == [component]


def test_search_follows_the_instances_pointing_at_a_digital_object(api, repo):
    digital_object = make_do(api, repo, "DO-13")
    resource = make_resource(api, repo, "Papers")
    component = make_ao(api, repo, "Letters", resource=resource, publish=True)["uri"]
    path = f"/repositories/{repo}/search"
    assert hits(api, path, q=f'linked_instance_uris:"{component}"') == []
    record = read(api, component)
    record["instances"] = [do_instance(digital_object)]
    assert api.post(component, json=record).status_code == 200
    # The digital object's row did not change; its document follows the archival object's.
    assert hits(api, path, q=f'linked_instance_uris:"{component}"') == [digital_object]
    assert hits(api, path, q=f'collection_uri_u_sstr:"{resource}"') == [digital_object]
    assert hits(api, path, q=f'digital_object_uris:"{digital_object}"') == [component]
    record = read(api, component)
    record["publish"] = False
    assert api.post(component, json=record).status_code == 200
    assert hits(api, path, q=f'collection_uri_u_sstr:"{resource}"') == []
