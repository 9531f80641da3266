"""A digital object and its components as a tree: ArchivesSpace's digital object tree routes
(tree/root, waypoint, node, node_from_root, the older …/tree), batch children, moves and
accept_children, with the shapes to the field (LargeTreeDigitalObject, DigitalObjectTrees)."""

from __future__ import annotations

import pytest

from tests.factories import make_user
from tests.records.helpers import read
from tests.records.tree_helpers import record_id

DATE = {"jsonmodel_type": "date", "date_type": "inclusive", "label": "creation", "expression": "1890s"}


def version(uri: str) -> dict:
    return {"jsonmodel_type": "file_version", "file_uri": uri, "publish": True}


def add_components(api, target: str, children: list[dict]):
    return api.post(f"{target}/children", json={"jsonmodel_type": "digital_record_children", "children": children})


def titles(api, target: str) -> list[str]:
    response = api.get(f"{target}/children")
    assert response.status_code == 200, response.text
    found = response.json()
    assert [child["position"] for child in found] == list(range(len(found)))
    return [child["display_string"] for child in found]


@pytest.fixture
def plates(api, repo):
    """A digital object with an album (three pages) and a box of loose prints."""
    body = {
        "jsonmodel_type": "digital_object",
        "title": "Glass plates",
        "digital_object_id": "GP-1",
        "level": "image",
        "digital_object_type": "still_image",
        "publish": True,
        "file_versions": [version("https://x.org/a.tif"), version("https://x.org/b.tif")],
    }
    digital_object = api.create(f"/repositories/{repo}/digital_objects", body)["uri"]
    album = {
        "title": "Album",
        "label": "A1",
        "component_id": "c1",
        "dates": [DATE],
        "publish": True,
        "file_versions": [version("https://x.org/album.tif")],
    }
    assert add_components(api, digital_object, [album, {"label": "Loose prints", "publish": False}]).status_code == 200
    album_uri = read(api, f"{digital_object}/tree/root")["precomputed_waypoints"][""]["0"][0]["uri"]
    pages = [{"title": f"Page {n}", "publish": True} for n in (1, 2, 3)]
    response = add_components(api, album_uri, pages)
    assert response.json() == {"status": "Updated", "id": record_id(album_uri), "lock_version": 0, "stale": None}
    return digital_object, album_uri


def test_root_shape(api, plates):
    digital_object, album = plates
    root = read(api, f"{digital_object}/tree/root")
    top = root.pop("precomputed_waypoints")[""]["0"]
    assert root == {
        "child_count": 2,
        "waypoints": 1,
        "waypoint_size": 200,
        "title": "Glass plates",
        "uri": digital_object,
        "slugged_url": "",
        "jsonmodel_type": "digital_object",
        "parsed_title": "Glass plates",
        "suppressed": 0,
        "has_digital_instance": False,
        "digital_object_type": "still_image",
        "file_uri_summary": "https://x.org/a.tif, https://x.org/b.tif",
    }
    assert [entry["uri"] for entry in top] == [album, top[1]["uri"]]


def test_waypoint_entry_shape(api, plates):
    digital_object, album = plates
    first, second = read(api, f"{digital_object}/tree/waypoint", offset=0)
    assert first == {
        "child_count": 3,
        "waypoints": 1,
        "waypoint_size": 200,
        "title": "Album",
        "slugged_url": "",
        "parsed_title": "Album",
        "uri": album,
        "position": 0,
        "parent_id": None,
        "suppressed": 0,
        "jsonmodel_type": "digital_object_component",
        "has_digital_instance": False,
        "label": "A1",
        "dates": [{"type": "inclusive", "label": "creation", "expression": "1890s"}],
        "file_uri_summary": "https://x.org/album.tif",
    }
    # A waypoint shows the title column (none here) and the label beside it.
    assert (second["title"], second["parsed_title"], second["label"], second["position"]) == (None, None, "Loose prints", 1)
    assert "dates" not in second and "file_uri_summary" not in second
    pages = read(api, f"{digital_object}/tree/waypoint", offset=0, parent_node=album)
    assert [(p["title"], p["position"], p["parent_id"]) for p in pages] == [
        ("Page 1", 0, record_id(album)),
        ("Page 2", 1, record_id(album)),
        ("Page 3", 2, record_id(album)),
    ]
    assert read(api, f"{digital_object}/tree/waypoint", offset=0, published_only="true") == [first]


def test_node_and_node_from_root_shapes(api, plates):
    digital_object, album = plates
    node = read(api, f"{digital_object}/tree/node", node_uri=album)
    waypoints = node.pop("precomputed_waypoints")
    assert node == {
        "child_count": 3,
        "waypoints": 1,
        "waypoint_size": 200,
        "title": "Album, 1890s",
        "uri": album,
        "position": 1,
        "jsonmodel_type": "digital_object_component",
        "has_digital_instance": False,
    }
    assert [entry["title"] for entry in waypoints[album]["0"]] == ["Page 1", "Page 2", "Page 3"]
    page = api.get(f"{album}/children").json()[2]["uri"]
    assert read(api, f"{digital_object}/tree/node_from_root", **{"node_ids[]": record_id(page)}) == {
        str(record_id(page)): [
            {
                "node": None,
                "root_record_uri": digital_object,
                "offset": 0,
                "jsonmodel_type": "digital_object",
                "title": "Glass plates",
                "parsed_title": "Glass plates",
            },
            {
                "node": album,
                "root_record_uri": digital_object,
                "jsonmodel_type": "digital_object_component",
                "title": "Album, 1890s",
                "offset": 0,
                "parsed_title": "Album, 1890s",
            },
        ]
    }


def test_the_older_tree_route(api, plates):
    digital_object, album = plates
    tree = read(api, f"{digital_object}/tree")
    [album_node, loose] = tree.pop("children")
    assert tree == {
        "jsonmodel_type": "digital_object_tree",
        "title": "Glass plates",
        "id": record_id(digital_object),
        "node_type": "digital_object",
        "publish": True,
        "suppressed": False,
        "record_uri": digital_object,
        "level": "image",
        "digital_object_type": "still_image",
        "file_versions": read(api, digital_object)["file_versions"],
    }
    pages = album_node.pop("children")
    assert album_node == {
        "title": "Album, 1890s",
        "id": record_id(album),
        "record_uri": album,
        "publish": True,
        "suppressed": False,
        "node_type": "digital_object_component",
        "file_versions": read(api, album)["file_versions"],
        "has_children": True,
    }
    assert [p["title"] for p in pages] == ["Page 1", "Page 2", "Page 3"]
    assert (loose["title"], loose["publish"], loose["file_versions"], loose["children"]) == ("Loose prints", False, [], [])
    assert read(api, f"{digital_object}/tree", limit_to=pages[0]["record_uri"])["children"][0]["id"] == record_id(album)


def test_digital_objects_have_no_ordered_records_route(api, plates):
    digital_object, _ = plates
    assert api.get(f"{digital_object}/ordered_records").status_code == 404


def test_batch_children_are_all_or_none(api, plates):
    _, album = plates
    wrong = api.post(f"{album}/children", json={"jsonmodel_type": "archival_record_children", "children": [{"title": "x"}]})
    assert wrong.status_code == 400
    assert list(wrong.json()["error"]) == ["jsonmodel_type"]
    response = add_components(api, album, [{"title": "Page 4"}, {"component_id": "nameless"}])
    assert response.status_code == 400
    assert response.json()["error"] == {f"children/1/{f}": ["you must provide a label, title or date"] for f in ("label", "title", "dates")}
    assert titles(api, album) == ["Page 1", "Page 2", "Page 3"]


def test_moves_and_accept_children(api, plates):
    digital_object, album = plates
    pages = [child["uri"] for child in api.get(f"{album}/children").json()]
    moved = api.post(f"{pages[2]}/parent", params={"parent": record_id(album), "position": 0})
    assert moved.json() == {"status": "Updated", "id": record_id(pages[2]), "lock_version": 1, "stale": None}
    assert titles(api, album) == ["Page 3", "Page 1", "Page 2"]
    # To the top level of the digital object, between the album and the loose prints.
    accepted = api.post(f"{digital_object}/accept_children", params={"children[]": [pages[0]], "position": 1})
    assert accepted.status_code == 200, accepted.text
    top = read(api, f"{digital_object}/tree/waypoint", offset=0)
    assert [entry["uri"] for entry in top] == [album, pages[0], top[2]["uri"]]
    assert read(api, pages[0])["ancestors"] == [{"ref": digital_object}]
    assert api.post(f"{album}/accept_children", params={"children[]": [pages[0]], "position": 5}).status_code == 200
    assert titles(api, album) == ["Page 3", "Page 2", "Page 1"]
    loop = api.post(f"{album}/parent", params={"parent": record_id(pages[1])})
    assert (loop.status_code, loop.json()) == (409, {"error": "Can't make a parent into its own child"})


def test_a_parent_in_another_digital_object_is_refused(api, repo, plates):
    _, album = plates
    other = api.create(
        f"/repositories/{repo}/digital_objects", {"jsonmodel_type": "digital_object", "title": "Other", "digital_object_id": "GP-2"}
    )["uri"]
    body = {"jsonmodel_type": "digital_object_component", "digital_object": {"ref": other}, "parent": {"ref": album}, "label": "x"}
    response = api.post(f"/repositories/{repo}/digital_object_components", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == {"parent": ["Parent must belong to the same digital object as the record"]}


def test_moving_a_component_to_another_digital_object_takes_its_subtree(api, repo, plates):
    digital_object, album = plates
    other = api.create(
        f"/repositories/{repo}/digital_objects", {"jsonmodel_type": "digital_object", "title": "Other", "digital_object_id": "GP-3"}
    )["uri"]
    record = read(api, album)
    record["digital_object"] = {"ref": other}
    assert api.post(album, json=record).status_code == 200
    assert [entry["uri"] for entry in read(api, f"{other}/tree/waypoint", offset=0)] == [album]
    page = api.get(f"{album}/children").json()[0]
    assert page["digital_object"] == {"ref": other}
    assert page["ancestors"] == [{"ref": album}, {"ref": other}]
    assert read(api, f"{digital_object}/tree/root")["child_count"] == 1
    # A component id taken in the target digital object stops the move before anything changes.
    back = read(api, album)
    api.create(
        f"/repositories/{repo}/digital_object_components",
        {"jsonmodel_type": "digital_object_component", "digital_object": {"ref": digital_object}, "label": "y", "component_id": "c1"},
    )
    back["digital_object"] = {"ref": digital_object}
    refused = api.post(album, json=back)
    assert refused.status_code == 400
    assert refused.json()["error"] == {"component_id": ["A Digital Object Component ID must be unique to its Digital Object"]}


def test_reading_needs_view_repository_and_changing_needs_update_digital_object_record(api, repo, plates):
    digital_object, album = plates
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    clerk = make_user(api, "clerk", groups=[(repo, "repository-basic-data-entry")])
    assert viewer.get(f"{digital_object}/tree/root").status_code == 200
    assert viewer.get(f"{digital_object}/tree").status_code == 200
    assert add_components(viewer, album, [{"title": "Page 9"}]).status_code == 403
    assert add_components(clerk, album, [{"title": "Page 9"}]).status_code == 200
    assert clerk.delete(album).status_code == 403
