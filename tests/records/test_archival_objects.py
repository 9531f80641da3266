"""Archival objects through HTTP: ref_id, tree positions, ancestors, children, find_by_id,
display strings, cascading deletes and moving subtrees between resources (aspace-model.md §6–§7, aspace-api.md §6–§8)."""

from __future__ import annotations

import re

import pytest

from tests.records.helpers import ao_body, count_rows, make_ao, make_resource, read, update

HEX32 = re.compile(r"^[0-9a-f]{32}$")


def aos(repo: int) -> str:
    return f"/repositories/{repo}/archival_objects"


def tree(api, repo: int, resource: str, titles: list[str], **extra) -> list[str]:
    """Append one AO per title under `resource` (and optional `parent`); returns their URIs."""
    return [make_ao(api, repo, title, resource=resource, **extra)["uri"] for title in titles]


def order(api, uris: list[str]) -> list[tuple[int, str]]:
    """(position, title) of each record, sorted by position."""
    records = [read(api, uri) for uri in uris]
    return sorted((record["position"], record["title"]) for record in records)


def date(**fields) -> dict:
    return {"jsonmodel_type": "date", "label": "creation", **fields}


# -- ref_id ----------------------------------------------------------------------------------


def test_ref_id_is_generated_and_the_create_is_stale(api, repo):
    resource = make_resource(api, repo)
    created = make_ao(api, repo, "Series 1", resource=resource)
    assert created["status"] == "Created"
    assert created["stale"] is True
    assert HEX32.match(read(api, created["uri"])["ref_id"])


def test_generated_ref_ids_differ(api, repo):
    resource = make_resource(api, repo)
    first, second = tree(api, repo, resource, ["A", "B"])
    assert read(api, first)["ref_id"] != read(api, second)["ref_id"]


def test_given_ref_id_is_kept(api, repo):
    resource = make_resource(api, repo)
    created = make_ao(api, repo, "Series 1", resource=resource, ref_id="my-ref_1.a:b")
    assert read(api, created["uri"])["ref_id"] == "my-ref_1.a:b"


def test_ref_id_is_unique_within_a_resource_only(api, repo):
    first, second = make_resource(api, repo, "One"), make_resource(api, repo, "Two")
    make_ao(api, repo, "A", resource=first, ref_id="dup")
    clash = api.post(aos(repo), json=ao_body("B", resource=first, ref_id="dup"))
    assert clash.status_code == 400, clash.text
    assert "ref_id" in clash.json()["error"]
    elsewhere = make_ao(api, repo, "C", resource=second, ref_id="dup")
    assert read(api, elsewhere["uri"])["ref_id"] == "dup"


def test_ref_id_cannot_be_changed_by_update(api, repo):
    created = make_ao(api, repo, "A", resource=make_resource(api, repo))
    original = read(api, created["uri"])["ref_id"]
    response = update(api, created["uri"], ref_id="changed", title="A2")
    assert response.status_code == 200, response.text
    record = read(api, created["uri"])
    assert record["ref_id"] == original
    assert record["title"] == "A2"


# -- positions -------------------------------------------------------------------------------


def test_appended_siblings_get_consecutive_positions(api, repo):
    resource = make_resource(api, repo)
    uris = tree(api, repo, resource, ["A", "B", "C"])
    assert [read(api, uri)["position"] for uri in uris] == [0, 1, 2]


def test_insert_at_position_shifts_later_siblings(api, repo):
    resource = make_resource(api, repo)
    uris = tree(api, repo, resource, ["A", "B", "C"])
    uris.append(make_ao(api, repo, "D", resource=resource, position=1)["uri"])
    assert order(api, uris) == [(0, "A"), (1, "D"), (2, "B"), (3, "C")]


def test_position_past_the_end_is_clamped_to_last(api, repo):
    resource = make_resource(api, repo)
    uris = tree(api, repo, resource, ["A", "B"])
    uris.append(make_ao(api, repo, "C", resource=resource, position=99)["uri"])
    assert order(api, uris) == [(0, "A"), (1, "B"), (2, "C")]


def test_moving_by_position_keeps_positions_contiguous(api, repo):
    resource = make_resource(api, repo)
    uris = tree(api, repo, resource, ["A", "B", "C", "D"])
    assert update(api, uris[0], position=2).status_code == 200
    assert order(api, uris) == [(0, "B"), (1, "C"), (2, "A"), (3, "D")]
    assert update(api, uris[3], position=0).status_code == 200
    assert order(api, uris) == [(0, "D"), (1, "B"), (2, "C"), (3, "A")]


def test_reparenting_keeps_both_sibling_groups_contiguous(api, repo):
    resource = make_resource(api, repo)
    top = tree(api, repo, resource, ["A", "B", "C"])
    children = tree(api, repo, resource, ["A1", "A2"], parent=top[0])
    response = update(api, top[1], parent={"ref": top[0]}, position=None)
    assert response.status_code == 200, response.text
    assert order(api, [top[0], top[2]]) == [(0, "A"), (1, "C")]
    assert order(api, [*children, top[1]]) == [(0, "A1"), (1, "A2"), (2, "B")]
    assert read(api, top[1])["parent"] == {"ref": top[0]}


def test_reparenting_to_the_top_level(api, repo):
    resource = make_resource(api, repo)
    top = tree(api, repo, resource, ["A", "B"])
    children = tree(api, repo, resource, ["A1", "A2", "A3"], parent=top[0])
    response = update(api, children[0], parent=None, position=1)
    assert response.status_code == 200, response.text
    assert order(api, [*top, children[0]]) == [(0, "A"), (1, "A1"), (2, "B")]
    assert order(api, children[1:]) == [(0, "A2"), (1, "A3")]
    assert "parent" not in read(api, children[0])


# -- ancestors and children ------------------------------------------------------------------


def test_ancestors_list_the_parent_first_then_the_resource(api, repo):
    resource = make_resource(api, repo, level="collection")
    series = make_ao(api, repo, "Series", resource=resource, level="series")["uri"]
    file = make_ao(api, repo, "File", resource=resource, parent=series, level="file")["uri"]
    item = make_ao(api, repo, "Item", resource=resource, parent=file, level="item")["uri"]
    assert read(api, item)["ancestors"] == [
        {"ref": file, "level": "file"},
        {"ref": series, "level": "series"},
        {"ref": resource, "level": "collection"},
    ]
    assert read(api, series)["ancestors"] == [{"ref": resource, "level": "collection"}]


def test_children_returns_full_records_in_tree_order(api, repo):
    resource = make_resource(api, repo)
    parent = make_ao(api, repo, "Parent", resource=resource)["uri"]
    tree(api, repo, resource, ["One", "Two"], parent=parent)
    make_ao(api, repo, "Zero", resource=resource, parent=parent, position=0)
    response = api.get(f"{parent}/children")
    assert response.status_code == 200, response.text
    children = response.json()
    assert [c["title"] for c in children] == ["Zero", "One", "Two"]
    assert [c["position"] for c in children] == [0, 1, 2]
    assert all(c["jsonmodel_type"] == "archival_object" and c["parent"] == {"ref": parent} for c in children)
    assert all(HEX32.match(c["ref_id"]) for c in children)


def test_children_of_a_leaf_is_empty_and_of_an_unknown_id_404(api, repo):
    leaf = make_ao(api, repo, "Leaf", resource=make_resource(api, repo))["uri"]
    response = api.get(f"{leaf}/children")
    assert response.status_code == 200
    assert response.json() == []
    missing = api.get(f"{aos(repo)}/9999/children")
    assert missing.status_code == 404
    assert missing.json() == {"error": "ArchivalObject not found"}


# -- find_by_id ------------------------------------------------------------------------------


def test_find_by_ref_id(api, repo):
    resource = make_resource(api, repo)
    wanted = make_ao(api, repo, "Wanted", resource=resource, ref_id="abc123")["uri"]
    make_ao(api, repo, "Other", resource=resource, ref_id="zzz")
    path = f"/repositories/{repo}/find_by_id/archival_objects"
    response = api.get(path, params={"ref_id[]": "abc123"})
    assert response.status_code == 200, response.text
    assert response.json() == {"archival_objects": [{"ref": wanted}]}
    resolved = api.get(path, params={"ref_id[]": "abc123", "resolve[]": "archival_objects"}).json()
    [hit] = resolved["archival_objects"]
    assert hit["ref"] == wanted
    assert hit["_resolved"]["title"] == "Wanted"
    assert hit["_resolved"]["uri"] == wanted


def test_find_by_component_id_and_without_criteria(api, repo):
    resource = make_resource(api, repo)
    first = make_ao(api, repo, "First", resource=resource, component_id="C-1")["uri"]
    second = make_ao(api, repo, "Second", resource=resource, component_id="C-2")["uri"]
    path = f"/repositories/{repo}/find_by_id/archival_objects"
    both = api.get(path, params=[("component_id[]", "C-1"), ("component_id[]", "C-2")]).json()
    assert both == {"archival_objects": [{"ref": first}, {"ref": second}]}
    assert api.get(path, params={"component_id[]": "C-1"}).json() == {"archival_objects": [{"ref": first}]}
    assert api.get(path, params={"component_id[]": "nope"}).json() == {"archival_objects": []}
    nothing = api.get(path)
    assert nothing.status_code == 200
    assert nothing.json() == {"archival_objects": []}


# -- tree consistency ------------------------------------------------------------------------


def test_parent_in_another_resource_is_refused(api, repo):
    parent = make_ao(api, repo, "Parent", resource=make_resource(api, repo, "One"))["uri"]
    other = make_resource(api, repo, "Two")
    response = api.post(aos(repo), json=ao_body("Child", resource=other, parent=parent))
    assert response.status_code == 400, response.text
    assert "parent" in response.json()["error"]
    assert api.get(f"{parent}/children").json() == []


def test_a_node_cannot_become_its_own_descendant(api, repo):
    resource = make_resource(api, repo)
    top = make_ao(api, repo, "Top", resource=resource)["uri"]
    middle = make_ao(api, repo, "Middle", resource=resource, parent=top)["uri"]
    bottom = make_ao(api, repo, "Bottom", resource=resource, parent=middle)["uri"]
    response = update(api, top, parent={"ref": bottom})
    assert response.status_code == 409, response.text
    assert response.json() == {"error": "Can't make a parent into its own child"}
    record = read(api, top)
    assert "parent" not in record
    assert record["lock_version"] == 0


def test_parent_without_resource_takes_the_parents_resource(api, repo):
    resource = make_resource(api, repo)
    parent = make_ao(api, repo, "Parent", resource=resource)["uri"]
    created = make_ao(api, repo, "Child", parent=parent, ref_id="given")
    assert created["stale"] is True
    assert "resource" not in created["warnings"]
    record = read(api, created["uri"])
    assert record["resource"] == {"ref": resource}
    assert [a["ref"] for a in record["ancestors"]] == [parent, resource]


# -- display_string --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "dates", "expected"),
    [
        ("Letters", [date(date_type="inclusive", begin="1927", end="1929")], "Letters, 1927 - 1929"),
        (None, [date(date_type="single", expression="circa 1900")], "circa 1900"),
        (
            None,
            [date(date_type="inclusive", begin="1927", end="1929"), date(date_type="bulk", expression="1928")],
            "1927 - 1929, bulk: 1928",
        ),
        ("Letters", [], "Letters"),
        ("Diary", [date(date_type="single", begin="1901")], "Diary, 1901"),
    ],
)
def test_display_string_from_title_and_dates(api, repo, title, dates, expected):
    created = make_ao(api, repo, title, resource=make_resource(api, repo), dates=dates)
    assert read(api, created["uri"])["display_string"] == expected


def test_display_string_follows_updates(api, repo):
    created = make_ao(api, repo, "Letters", resource=make_resource(api, repo))
    update(api, created["uri"], title="Postcards", dates=[date(date_type="single", expression="1950s")])
    assert read(api, created["uri"])["display_string"] == "Postcards, 1950s"


def test_neither_title_nor_dates_is_refused(api, repo):
    response = api.post(aos(repo), json=ao_body(resource=make_resource(api, repo), level="file"))
    assert response.status_code == 400
    assert {"title", "dates"} <= response.json()["error"].keys()


# -- deletes ---------------------------------------------------------------------------------


def test_deleting_a_resource_deletes_its_archival_objects(api, repo):
    resource = make_resource(api, repo)
    top = make_ao(api, repo, "Top", resource=resource)["uri"]
    child = make_ao(api, repo, "Child", resource=resource, parent=top)["uri"]
    response = api.delete(resource)
    assert response.status_code == 200
    assert response.json() == {"status": "Deleted", "id": int(resource.rsplit("/", 1)[1])}
    for uri in (resource, top, child):
        assert api.get(uri).status_code == 404


def test_deleting_an_archival_object_takes_its_descendants_and_closes_the_gap(api, repo):
    resource = make_resource(api, repo)
    top = tree(api, repo, resource, ["A", "B", "C", "D"])
    child = make_ao(api, repo, "B1", resource=resource, parent=top[1])["uri"]
    grandchild = make_ao(api, repo, "B11", resource=resource, parent=child)["uri"]
    response = api.delete(top[1])
    assert response.status_code == 200
    for uri in (top[1], child, grandchild):
        assert api.get(uri).status_code == 404
    assert order(api, [top[0], top[2], top[3]]) == [(0, "A"), (1, "C"), (2, "D")]
    appended = make_ao(api, repo, "E", resource=resource)["uri"]
    assert read(api, appended)["position"] == 3


def test_deleting_a_child_closes_the_gap_among_its_siblings(api, repo):
    resource = make_resource(api, repo)
    parent = make_ao(api, repo, "P", resource=resource)["uri"]
    children = tree(api, repo, resource, ["X", "Y", "Z"], parent=parent)
    assert api.delete(children[0]).status_code == 200
    assert [(c["position"], c["title"]) for c in api.get(f"{parent}/children").json()] == [(0, "Y"), (1, "Z")]
    assert read(api, parent)["position"] == 0


def test_moving_a_node_to_another_resource_takes_its_descendants(api, repo):
    old, new = make_resource(api, repo, "Old"), make_resource(api, repo, "New")
    node = make_ao(api, repo, "Node", resource=old)["uri"]
    child = make_ao(api, repo, "Child", resource=old, parent=node)["uri"]
    assert update(api, node, resource={"ref": new}, position=None).status_code == 200
    record = read(api, child)
    assert record["resource"] == {"ref": new}
    assert [a["ref"] for a in record["ancestors"]] == [node, new]
    assert update(api, child, title="Child 2").status_code == 200
    assert api.delete(old).status_code == 200
    assert api.get(child).status_code == 200


# -- moving a subtree to another resource ----------------------------------------------------


def subtree(api, repo: int, resource: str, **ref_ids) -> dict[str, str]:
    """Node > Child > Grandchild, plus Sibling beside Child; returns their URIs by lower-case name."""
    node = make_ao(api, repo, "Node", resource=resource, ref_id=ref_ids.get("node"))["uri"]
    child = make_ao(api, repo, "Child", resource=resource, parent=node, ref_id=ref_ids.get("child"))["uri"]
    sibling = make_ao(api, repo, "Sibling", resource=resource, parent=node)["uri"]
    grandchild = make_ao(api, repo, "Grandchild", resource=resource, parent=child, ref_id=ref_ids.get("grandchild"))["uri"]
    return {"node": node, "child": child, "sibling": sibling, "grandchild": grandchild}


def move(api, uri: str, resource: str):
    return update(api, uri, resource={"ref": resource}, position=None)


def test_moving_a_node_moves_every_level_below_it(api, app, repo):
    old, new = make_resource(api, repo, "Old"), make_resource(api, repo, "New")
    stays = make_ao(api, repo, "Stays", resource=old)["uri"]
    nodes = subtree(api, repo, old)
    changes = count_rows(app, "change_log")
    assert move(api, nodes["node"], new).status_code == 200
    grandchild = read(api, nodes["grandchild"])
    assert grandchild["resource"] == {"ref": new}
    assert [a["ref"] for a in grandchild["ancestors"]] == [nodes["child"], nodes["node"], new]
    assert grandchild["last_modified_by"] == "admin"
    assert order(api, [nodes["child"], nodes["sibling"]]) == [(0, "Child"), (1, "Sibling")]
    assert read(api, nodes["sibling"])["resource"] == {"ref": new}
    assert read(api, stays)["resource"] == {"ref": old}
    # One "updated" change per moved record, so the search index sees every descendant move.
    assert count_rows(app, "change_log") == changes + 4


def test_a_moved_descendant_has_a_new_lock_version(api, repo):
    old, new = make_resource(api, repo, "Old"), make_resource(api, repo, "New")
    nodes = subtree(api, repo, old)
    held = read(api, nodes["grandchild"])
    assert move(api, nodes["node"], new).status_code == 200
    assert read(api, nodes["grandchild"])["lock_version"] == held["lock_version"] + 1
    stale = api.post(nodes["grandchild"], json={**held, "title": "Overwrite"})
    assert stale.status_code == 409, stale.text
    assert read(api, nodes["grandchild"])["resource"] == {"ref": new}


def test_deleting_the_old_resource_leaves_the_moved_subtree(api, repo):
    old, new = make_resource(api, repo, "Old"), make_resource(api, repo, "New")
    nodes = subtree(api, repo, old)
    assert move(api, nodes["node"], new).status_code == 200
    assert api.delete(old).status_code == 200
    for uri in nodes.values():
        assert read(api, uri)["resource"] == {"ref": new}


def test_deleting_the_new_resource_deletes_the_moved_subtree(api, repo):
    old, new = make_resource(api, repo, "Old"), make_resource(api, repo, "New")
    nodes = subtree(api, repo, old)
    assert move(api, nodes["node"], new).status_code == 200
    assert api.delete(new).status_code == 200
    for uri in nodes.values():
        assert api.get(uri).status_code == 404
    assert api.get(old).status_code == 200


def test_a_ref_id_taken_in_the_target_resource_refuses_the_whole_move(api, repo):
    old, new = make_resource(api, repo, "Old"), make_resource(api, repo, "New")
    make_ao(api, repo, "Already there", resource=new, ref_id="dup")
    nodes = subtree(api, repo, old, grandchild="dup")
    before = {uri: read(api, uri) for uri in nodes.values()}
    response = move(api, nodes["node"], new)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {"ref_id": ["An Archival Object Ref ID must be unique to its resource"]}
    assert {uri: read(api, uri) for uri in nodes.values()} == before
    assert read(api, make_ao(api, repo, "Appended", resource=new)["uri"])["position"] == 1
    assert api.delete(old).status_code == 200
    for uri in nodes.values():
        assert api.get(uri).status_code == 404


def test_an_unattached_subtree_given_a_resource_takes_it_down(api, repo):
    resource = make_resource(api, repo)
    node = make_ao(api, repo, "Node")["uri"]
    child = make_ao(api, repo, "Child", parent=node)["uri"]
    assert "resource" not in read(api, child)
    assert move(api, node, resource).status_code == 200
    record = read(api, child)
    assert record["resource"] == {"ref": resource}
    assert [a["ref"] for a in record["ancestors"]] == [node, resource]
    assert api.delete(resource).status_code == 200
    assert api.get(child).status_code == 404


def test_a_node_leaving_its_resource_detaches_its_descendants(api, repo):
    resource = make_resource(api, repo)
    nodes = subtree(api, repo, resource)
    assert update(api, nodes["node"], resource=None, position=None).status_code == 200
    record = read(api, nodes["grandchild"])
    assert "resource" not in record
    assert [a["ref"] for a in record["ancestors"]] == [nodes["child"], nodes["node"]]
    assert api.delete(resource).status_code == 200
    assert read(api, nodes["grandchild"])["title"] == "Grandchild"
