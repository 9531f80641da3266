"""Changing trees through HTTP: batch children (all or none), the parent route, accept_children,
never one's own ancestor, deletes; order and positions 0..n-1 exact after each (records/trees)."""

from __future__ import annotations

from sqlalchemy import select

from tests.records.helpers import count_rows, make_ao, make_resource, read, update
from tests.records.tree_helpers import add_children, children, record_id, titles_in_order


def test_batch_children_are_appended_in_order(api, repo):
    resource = make_resource(api, repo)
    add_children(api, resource, ["A", "B"])
    add_children(api, resource, ["C", "D", "E"])
    assert titles_in_order(api, resource) == ["A", "B", "C", "D", "E"]
    series = titles_in_order(api, resource)  # unchanged by reading
    assert series == ["A", "B", "C", "D", "E"]


def test_batch_children_of_a_node_take_its_resource_and_parent(api, repo):
    resource = make_resource(api, repo)
    add_children(api, resource, ["Series"])
    series = children_of_root(api, resource)[0]
    response = api.post(
        f"{series}/children", json={"children": [{"title": "F", "level": "file", "resource": {"ref": "/repositories/2/resources/999"}}]}
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "Updated", "id": record_id(series), "lock_version": 0, "stale": None}
    [child] = children(api, series)
    assert (child["resource"], child["parent"], child["position"]) == ({"ref": resource}, {"ref": series}, 0)
    assert child["ancestors"] == [{"ref": series, "level": "file"}, {"ref": resource}]


def test_batch_children_are_all_or_none(api, repo, app):
    resource = make_resource(api, repo)
    before = count_rows(app, "archival_object"), count_rows(app, "change_log")
    bad = {"children": [{"title": "fine", "level": "file"}, {"title": "fine too", "level": "file"}, {"level": "file"}]}
    response = api.post(f"{resource}/children", json=bad)
    assert response.status_code == 400, response.text
    assert set(response.json()["error"]) == {"children/2/title", "children/2/dates"}
    clash = {"children": [{"title": "A", "level": "file", "ref_id": "same"}, {"title": "B", "level": "file", "ref_id": "same"}]}
    response = api.post(f"{resource}/children", json=clash)
    assert response.status_code == 400, response.text
    assert "children/1/ref_id" in response.json()["error"]
    assert (count_rows(app, "archival_object"), count_rows(app, "change_log")) == before


def test_batch_children_body_errors(api, repo):
    resource = make_resource(api, repo)
    for body, field in [
        ({}, "children"),
        ({"children": []}, "children"),
        ({"children": "x"}, "children"),
        ({"children": [1]}, "children/0"),
        ({"jsonmodel_type": "accession", "children": [{"title": "A"}]}, "jsonmodel_type"),
    ]:
        response = api.post(f"{resource}/children", json=body)
        assert response.status_code == 400, (body, response.text)
        assert field in response.json()["error"], (body, response.text)
    assert api.post(f"/repositories/{repo}/resources/999/children", json={"children": [{"title": "A"}]}).status_code == 404


def children_of_root(api, resource: str) -> list[str]:
    return [entry["uri"] for entry in read(api, f"{resource}/tree/waypoint", offset=0)]


def test_parent_route_moves_to_front_middle_and_end(api, repo):
    resource = make_resource(api, repo)
    add_children(api, resource, list("ABCDEF"))
    uri = dict(zip("ABCDEF", children_of_root(api, resource)))
    for letter, position, expected in [("E", 0, "EABCDF"), ("A", 3, "EBCADF"), ("E", 99, "BCADFE"), ("D", 2, "BCDAFE")]:
        response = api.post(f"{uri[letter]}/parent", params={"position": position})
        assert response.status_code == 200, response.text
        assert set(response.json()) == {"status", "id", "lock_version", "stale"}
        assert "".join(titles_in_order(api, resource)) == expected
        assert [read(api, uri[c])["position"] for c in expected] == list(range(6))


def test_parent_route_changes_parent_and_bumps_the_lock_version(api, repo):
    resource = make_resource(api, repo)
    add_children(api, resource, ["S1", "S2"])
    s1, s2 = children_of_root(api, resource)
    add_children(api, s1, ["F1", "F2"])
    stale_copy = read(api, s2)
    response = api.post(f"{s2}/parent", params={"parent": record_id(s1), "position": 1})
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "Updated", "id": record_id(s2), "lock_version": 1, "stale": None}
    assert titles_in_order(api, resource, s1) == ["F1", "S2", "F2"]
    assert read(api, s2)["parent"] == {"ref": s1}
    assert api.post(s2, json=stale_copy).status_code == 409  # the old copy would have moved it back
    back = api.post(f"{s2}/parent")  # no parent: the top level, at the end
    assert back.status_code == 200, back.text
    assert titles_in_order(api, resource) == ["S1", "S2"]
    assert "parent" not in read(api, s2)


def test_deleting_the_old_parent_spares_the_nodes_moved_away_from_it(api, repo):
    resource = make_resource(api, repo)
    add_children(api, resource, ["S1", "S2"])
    s1, s2 = children_of_root(api, resource)
    add_children(api, s1, ["F1", "F2"])
    f1, f2 = [child["uri"] for child in children(api, s1)]
    add_children(api, f1, ["I1"])
    assert api.post(f"{f1}/parent", params={"parent": record_id(s2)}).status_code == 200  # with its item
    assert api.post(f"{s2}/accept_children", params={"children[]": [f2], "position": 0}).status_code == 200
    assert api.delete(s1).status_code == 200
    assert titles_in_order(api, resource) == ["S2"]
    assert titles_in_order(api, resource, s2) == ["F2", "F1"]
    assert titles_in_order(api, resource, f1) == ["I1"]
    assert api.delete(s2).status_code == 200
    assert [api.get(uri).status_code for uri in (f1, f2)] == [404, 404]


def test_parent_route_errors(api, repo):
    resource, other = make_resource(api, repo), make_resource(api, repo, "Other")
    add_children(api, resource, ["S1"])
    add_children(api, other, ["X"])
    [s1], [x] = children_of_root(api, resource), children_of_root(api, other)
    assert api.post(f"{s1}/parent", params={"parent": record_id(x)}).status_code == 400
    assert api.post(f"{s1}/parent", params={"parent": 999}).status_code == 400
    assert api.post(f"{s1}/parent", params={"position": "first"}).status_code == 400
    assert api.post(f"/repositories/{repo}/archival_objects/999/parent", params={"position": 0}).status_code == 404


def test_a_node_never_becomes_its_own_ancestor(api, repo, app):
    resource = make_resource(api, repo)
    add_children(api, resource, ["Top"])
    [top] = children_of_root(api, resource)
    add_children(api, top, ["Mid"])
    mid = children(api, top)[0]["uri"]
    add_children(api, mid, ["Low"])
    low = children(api, mid)[0]["uri"]
    before = read(api, top), count_rows(app, "change_log")
    for response in (
        api.post(f"{top}/parent", params={"parent": record_id(top)}),
        api.post(f"{top}/parent", params={"parent": record_id(low)}),
        api.post(f"{low}/accept_children", params={"children[]": top, "position": 0}),
        update(api, top, parent={"ref": mid}),
    ):
        assert response.status_code == 409, response.text
        assert response.json() == {"error": "Can't make a parent into its own child"}
    assert (read(api, top), count_rows(app, "change_log")) == before


def test_accept_children_moves_a_block_in_the_given_order(api, repo):
    resource = make_resource(api, repo)
    add_children(api, resource, ["S1", "S2", "S3"])
    s1, s2, s3 = children_of_root(api, resource)
    add_children(api, s1, ["F1", "F2", "F3"])
    f1, f2, f3 = (c["uri"] for c in children(api, s1))
    response = api.post(f"{s2}/accept_children", params={"children[]": [f3, s3, f1], "position": 0})
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "Updated", "id": record_id(s2), "lock_version": 0, "stale": None}
    assert titles_in_order(api, resource, s2) == ["F3", "S3", "F1"]
    assert titles_in_order(api, resource, s1) == ["F2"]
    assert titles_in_order(api, resource) == ["S1", "S2"]
    # Within one list, and to the top level of the resource.
    assert api.post(f"{s2}/accept_children", params={"children[]": [f3], "position": 2}).status_code == 200
    assert titles_in_order(api, resource, s2) == ["S3", "F1", "F3"]
    assert api.post(f"{resource}/accept_children", params={"children[]": [f1, f2], "position": 1}).status_code == 200
    assert titles_in_order(api, resource) == ["S1", "F1", "F2", "S2"]
    assert read(api, f1)["ancestors"] == [{"ref": resource}]


def test_accept_children_errors(api, repo):
    resource, other = make_resource(api, repo), make_resource(api, repo, "Other")
    add_children(api, resource, ["S1", "S2"])
    add_children(api, other, ["X"])
    s1, s2 = children_of_root(api, resource)
    [x] = children_of_root(api, other)
    cases = [
        ({"position": 0}, "children"),
        ({"children[]": s2}, "position"),
        ({"children[]": x, "position": 0}, "children"),
        ({"children[]": "/subjects/1", "position": 0}, "children"),
        ({"children[]": f"/repositories/{repo}/archival_objects/999", "position": 0}, "children"),
        ({"children[]": [s2, s2], "position": 0}, "children"),
    ]
    for params, field in cases:
        response = api.post(f"{s1}/accept_children", params=params)
        assert response.status_code == 400, (params, response.text)
        assert field in response.json()["error"]
    assert titles_in_order(api, resource) == ["S1", "S2"]


def test_inserting_at_one_place_again_and_again_keeps_order_exact(api, repo):
    """Far more inserts at one spot than the gap between two positions holds."""
    resource = make_resource(api, repo)
    add_children(api, resource, ["first", "last"])
    for n in range(15):
        make_ao(api, repo, f"x{n}", resource=resource, position=1)
    assert titles_in_order(api, resource) == ["first", *(f"x{n}" for n in reversed(range(15))), "last"]
    uris = children_of_root(api, resource)
    for n in range(15):
        assert api.post(f"{uris[-1]}/parent", params={"position": 1}).status_code == 200
        uris = children_of_root(api, resource)
    assert [read(api, uri)["position"] for uri in uris] == list(range(17))


def test_deletes_keep_positions_exact(api, repo):
    resource = make_resource(api, repo)
    add_children(api, resource, list("ABCDE"))
    uris = dict(zip("ABCDE", children_of_root(api, resource)))
    add_children(api, uris["B"], ["B1", "B2"])
    assert api.delete(uris["B"]).status_code == 200
    assert api.delete(uris["D"]).status_code == 200
    assert titles_in_order(api, resource) == ["A", "C", "E"]
    assert [read(api, uris[c])["position"] for c in "ACE"] == [0, 1, 2]
    add_children(api, resource, ["F"])
    assert titles_in_order(api, resource) == ["A", "C", "E", "F"]


def test_moves_log_a_change_for_every_node_below(api, repo, app):
    resource = make_resource(api, repo)
    add_children(api, resource, ["S1", "S2"])
    s1, s2 = children_of_root(api, resource)
    add_children(api, s1, ["F1", "F2"])
    f1 = children(api, s1)[0]["uri"]
    add_children(api, f1, ["I1"])
    log = app.state.fonds.db.tables["change_log"]
    with app.state.fonds.db.engine.connect() as conn:
        start = conn.execute(select(log.c.seq).order_by(log.c.seq.desc()).limit(1)).scalar()
    assert api.post(f"{s1}/parent", params={"parent": record_id(s2)}).status_code == 200
    with app.state.fonds.db.engine.connect() as conn:
        logged = conn.execute(select(log.c.uri, log.c.op).where(log.c.seq > start)).all()
    below = {c["uri"] for c in children(api, s1)} | {children(api, f1)[0]["uri"]}
    assert sorted(logged) == sorted([(s1, "updated"), *((uri, "updated") for uri in below)])
