"""The tree routes' JSON shapes, to the field (aspace-api.md §10.1, §10.3), their parameters
and errors, published_only, and who may call them."""

from __future__ import annotations

import pytest

from tests.factories import make_user
from tests.records.helpers import instance, make_resource, read
from tests.records.tree_helpers import add_children, children, old_route_walk, record_id

WAYPOINT_KEYS = {
    "child_count",
    "waypoints",
    "waypoint_size",
    "title",
    "slugged_url",
    "parsed_title",
    "uri",
    "position",
    "parent_id",
    "suppressed",
    "jsonmodel_type",
    "has_digital_instance",
    "identifier",
    "level",
}


@pytest.fixture
def papers(api, repo):
    """A resource with a box, two series (the first with dates, a component id and three files)."""
    box = api.create(
        f"/repositories/{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": "7", "type": "box", "barcode": "B7"}
    )["uri"]
    resource = make_resource(api, repo, "Smith papers", id_0="MS", id_1="1", level="collection", publish=True, instances=[instance(box)])
    date = {"jsonmodel_type": "date", "date_type": "inclusive", "label": "creation", "expression": "1927-1929"}
    body = {
        "jsonmodel_type": "archival_record_children",
        "children": [
            {"title": "Letters", "level": "series", "component_id": "s1", "publish": True, "dates": [date], "instances": [instance(box)]},
            {"title": "Diaries & notes", "level": "otherlevel", "other_level": "group", "publish": False},
        ],
    }
    assert api.post(f"{resource}/children", json=body).status_code == 200
    letters = read(api, resource + "/tree/root")["precomputed_waypoints"][""]["0"][0]["uri"]
    add_children(api, letters, ["File A", "File B", "File C"], publish=True)
    return resource, letters, box


def test_root_shape(api, papers):
    resource, letters, _ = papers
    root = read(api, f"{resource}/tree/root")
    top = root.pop("precomputed_waypoints")[""]["0"]
    assert root == {
        "child_count": 2,
        "waypoints": 1,
        "waypoint_size": 200,
        "title": "Smith papers",
        "uri": resource,
        "slugged_url": "",
        "jsonmodel_type": "resource",
        "parsed_title": "Smith papers",
        "suppressed": 0,
        "has_digital_instance": False,
        "level": "collection",
        "identifier": "MS-1",
        "containers": [
            {
                "instance_type": "mixed_materials",
                "top_container_type": "box",
                "top_container_indicator": "7",
                "top_container_barcode": "B7",
            }
        ],
    }
    assert [entry["uri"] for entry in top] == [letters, top[1]["uri"]]


def test_waypoint_entry_shape(api, papers):
    resource, letters, _ = papers
    [first, second] = read(api, f"{resource}/tree/waypoint", offset=0)
    assert set(first) == WAYPOINT_KEYS | {"dates", "containers"}
    assert first == {
        "child_count": 3,
        "waypoints": 1,
        "waypoint_size": 200,
        "title": "Letters",
        "slugged_url": "",
        "parsed_title": "Letters",
        "uri": letters,
        "position": 0,
        "parent_id": None,
        "suppressed": 0,
        "jsonmodel_type": "archival_object",
        "has_digital_instance": False,
        "identifier": "s1",
        "level": "series",
        "dates": [{"type": "inclusive", "label": "creation", "expression": "1927-1929"}],
        "containers": [
            {"instance_type": "mixed_materials", "top_container_type": "box", "top_container_indicator": "7", "top_container_barcode": "B7"}
        ],
    }
    # other_level stands in for `otherlevel`; a title is escaped as XHTML in parsed_title.
    assert (second["level"], second["identifier"], second["position"]) == ("group", None, 1)
    assert (second["title"], second["parsed_title"]) == ("Diaries & notes", "Diaries &amp; notes")
    files = read(api, f"{resource}/tree/waypoint", offset=0, parent_node=letters)
    assert [(f["title"], f["position"], f["parent_id"]) for f in files] == [
        ("File A", 0, record_id(letters)),
        ("File B", 1, record_id(letters)),
        ("File C", 2, record_id(letters)),
    ]
    assert read(api, f"{resource}/tree/waypoint", offset=1) == []


def test_node_shape(api, papers):
    resource, letters, _ = papers
    node = read(api, f"{resource}/tree/node", node_uri=letters)
    waypoints = node.pop("precomputed_waypoints")
    assert node == {
        "child_count": 3,
        "waypoints": 1,
        "waypoint_size": 200,
        "title": "Letters, 1927-1929",
        "uri": letters,
        "position": 1,
        "jsonmodel_type": "archival_object",
        "has_digital_instance": False,
        "identifier": "s1",
    }
    assert list(waypoints) == [letters]
    assert [entry["title"] for entry in waypoints[letters]["0"]] == ["File A", "File B", "File C"]
    leaf = children(api, letters)[2]["uri"]
    assert read(api, f"{resource}/tree/node", node_uri=leaf)["precomputed_waypoints"] == {}
    assert read(api, f"{resource}/tree/node", node_uri=leaf)["position"] == 3


def test_node_from_root_shape(api, papers):
    resource, letters, _ = papers
    file_c = children(api, letters)[2]["uri"]
    paths = read(api, f"{resource}/tree/node_from_root", **{"node_ids[]": [record_id(file_c), record_id(letters)]})
    assert paths == {
        str(record_id(file_c)): [
            {
                "node": None,
                "root_record_uri": resource,
                "offset": 0,
                "jsonmodel_type": "resource",
                "title": "Smith papers",
                "parsed_title": "Smith papers",
            },
            {
                "node": letters,
                "root_record_uri": resource,
                "jsonmodel_type": "archival_object",
                "title": "Letters, 1927-1929",
                "offset": 0,
                "parsed_title": "Letters, 1927-1929",
            },
        ],
        str(record_id(letters)): [
            {
                "node": None,
                "root_record_uri": resource,
                "offset": 0,
                "jsonmodel_type": "resource",
                "title": "Smith papers",
                "parsed_title": "Smith papers",
            }
        ],
    }


def test_empty_resource(api, repo):
    resource = make_resource(api, repo)
    root = read(api, f"{resource}/tree/root")
    assert (root["child_count"], root["waypoints"], root["precomputed_waypoints"]) == (0, 0, {})
    assert "containers" not in root
    assert read(api, f"{resource}/tree")["children"] == []


def test_ordered_records_lists_published_records_in_tree_order(api, papers):
    resource, letters, _ = papers
    files = children(api, letters)
    assert read(api, f"{resource}/ordered_records") == {
        "uris": [
            {"ref": resource, "display_string": "Smith papers", "depth": 0, "level": "collection"},
            {"ref": letters, "display_string": "Letters, 1927-1929", "depth": 1, "level": "series"},
            *({"ref": f["uri"], "display_string": f["title"], "depth": 2, "level": "file"} for f in files),
        ],
        "jsonmodel_type": "resource_ordered_records",
    }


def test_ordered_records_leave_out_what_is_below_an_unpublished_node(api, papers):
    resource, letters, _ = papers
    record = read(api, letters)
    record["publish"] = False
    assert api.post(letters, json=record).status_code == 200
    assert [entry["ref"] for entry in read(api, f"{resource}/ordered_records")["uris"]] == [resource]


def test_ordered_records_of_an_unpublished_resource_are_empty(api, repo):
    resource = make_resource(api, repo, publish=False)
    add_children(api, resource, ["A"], publish=True)
    assert read(api, f"{resource}/ordered_records") == {"uris": [], "jsonmodel_type": "resource_ordered_records"}


def test_published_only(api, papers):
    resource, letters, _ = papers
    root = read(api, f"{resource}/tree/root", published_only="true")
    assert root["child_count"] == 1
    assert [entry["uri"] for entry in root["precomputed_waypoints"][""]["0"]] == [letters]
    assert read(api, f"{resource}/tree/root", published_only="false")["child_count"] == 2
    hidden = read(api, f"{resource}/tree/root")["precomputed_waypoints"][""]["0"][1]["uri"]
    response = api.get(f"{resource}/tree/node_from_root", params={"node_ids[]": record_id(hidden), "published_only": "true"})
    assert response.status_code == 404


def test_older_tree_route_shape(api, papers):
    resource, letters, _ = papers
    tree = read(api, read(api, resource)["tree"]["ref"])
    first = tree["children"][0]
    assert {k: v for k, v in tree.items() if k != "children"} == {
        "jsonmodel_type": "resource_tree",
        "title": "Smith papers",
        "id": record_id(resource),
        "node_type": "resource",
        "publish": True,
        "suppressed": False,
        "record_uri": resource,
        "level": "collection",
    }
    assert {k: v for k, v in first.items() if k != "children"} == {
        "title": "Letters, 1927-1929",
        "id": record_id(letters),
        "record_uri": letters,
        "publish": True,
        "suppressed": False,
        "node_type": "archival_object",
        "level": "series",
        "component_id": "s1",
        "has_children": True,
        "instance_types": ["mixed_materials"],
        "containers": [
            {
                "type_1": "box",
                "indicator_1": "7 [B7]",
                "type_2": None,
                "indicator_2": None,
                "barcode_2": None,
                "type_3": None,
                "indicator_3": None,
            }
        ],
    }
    assert tree["children"][1]["level"] == "group"
    assert [c["title"] for c in first["children"]] == ["File A", "File B", "File C"]
    assert first["children"][0]["children"] == [] and first["children"][0]["has_children"] is False


def test_older_tree_route_limit_to(api, papers):
    resource, letters, _ = papers
    file_b = children(api, letters)[1]["uri"]
    add_children(api, file_b, ["Item 1"])
    add_children(api, children(api, file_b)[0]["uri"], ["Deeper"])
    partial = read(api, f"{resource}/tree", limit_to=file_b)
    assert [c["record_uri"] for c in partial["children"]] == [letters, partial["children"][1]["record_uri"]]
    files = partial["children"][0]["children"]
    assert [f["title"] for f in files] == ["File A", "File B", "File C"]
    item = files[1]["children"][0]
    assert (item["title"], item["has_children"], item["children"]) == ("Item 1", True, [])
    assert partial["containers"][0]["indicator_1"] == "7 [B7]"  # the root's instances, with limit_to only
    top_only = read(api, f"{resource}/tree", limit_to="root")
    assert [(c["has_children"], c["children"]) for c in top_only["children"]] == [(True, []), (False, [])]
    assert "containers" not in read(api, f"{resource}/tree")


def test_older_route_walk_matches_ordered_tree(api, papers):
    resource, letters, _ = papers
    tree = read(api, f"{resource}/tree")
    assert old_route_walk(tree) == [letters, *(c["uri"] for c in children(api, letters)), tree["children"][1]["record_uri"]]


@pytest.mark.parametrize(
    ("route", "params", "field"),
    [
        ("tree/waypoint", {}, "offset"),
        ("tree/waypoint", {"offset": "x"}, "offset"),
        ("tree/waypoint", {"offset": "-1"}, "offset"),
        ("tree/waypoint", {"offset": "0", "parent_node": "/subjects/1"}, "parent_node"),
        ("tree/node", {}, "node_uri"),
        ("tree/node", {"node_uri": "nonsense"}, "node_uri"),
        ("tree/node_from_root", {}, "node_ids"),
        ("tree/node_from_root", {"node_ids[]": "x"}, "node_ids"),
        ("tree/root", {"published_only": "maybe"}, "published_only"),
        ("tree", {"limit_to": "nonsense"}, "limit_to"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(api, papers, route, params, field):
    resource, _, _ = papers
    response = api.get(f"{resource}/{route}", params=params)
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]


def test_unknown_resource_and_foreign_node_are_404(api, repo, papers):
    _, letters, _ = papers
    assert api.get(f"/repositories/{repo}/resources/999/tree/root").status_code == 404
    other = make_resource(api, repo, "Other")
    assert api.get(f"{other}/tree/node", params={"node_uri": letters}).status_code == 404
    assert api.get(f"{other}/tree/node_from_root", params={"node_ids[]": record_id(letters)}).status_code == 404
    assert api.get(f"/repositories/{repo}/archival_objects/999/children").status_code == 404


def test_viewers_read_trees_but_cannot_change_them(api, repo, papers):
    resource, letters, _ = papers
    viewer = make_user(api, "viewer", groups=[(repo, "repository-viewers")])
    assert viewer.get(f"{resource}/tree/root").status_code == 200
    assert viewer.get(f"{resource}/tree").status_code == 200
    assert viewer.get(f"{letters}/children").status_code == 200
    body = {"jsonmodel_type": "archival_record_children", "children": [{"title": "X", "level": "file"}]}
    assert viewer.post(f"{resource}/children", json=body).status_code == 403
    assert viewer.post(f"{letters}/parent", params={"position": 0}).status_code == 403
    assert viewer.post(f"{resource}/accept_children", params={"children[]": letters, "position": 0}).status_code == 403
    other_repo = api.create_repository("OTHER")
    stranger = make_user(api, "stranger", groups=[(other_repo, "repository-viewers")])
    assert stranger.get(f"{resource}/tree/root").status_code == 403
