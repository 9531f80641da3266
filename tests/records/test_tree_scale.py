"""A resource of 3,000 components built through the batch children route (one node with 1,000
children, a branch six levels deep): waypoints, node paths, ordered_records, ArchivesSnake's
walk_tree and the older route's walk, moves to the front, middle and end, accept_children and
deletes keep order and counts exact. (bench/trees.py runs the same at 100,000.)"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from tests.records.helpers import count_rows, make_resource, read
from tests.records.tree_helpers import add_children, children, old_route_walk, record_id, titles_in_order, walk_tree

TOTAL = 3000
WIDE = 1000
BRANCH = 1 + 10 + 100 + 50 + 3 + 3  # S1 and everything below it


@pytest.fixture
def big(api, repo):
    resource = make_resource(api, repo, "Big papers", publish=True)
    add_children(api, resource, ["S0", "S1", "S2"], publish=True)
    s0, s1, s2 = (entry["uri"] for entry in read(api, f"{resource}/tree/waypoint", offset=0))
    add_children(api, s0, [f"big {i:04d}" for i in range(WIDE)], publish=True)
    add_children(api, s1, [f"sub {i}" for i in range(10)], publish=True)
    subs = [c["uri"] for c in children(api, s1)]
    for n, sub in enumerate(subs):
        add_children(api, sub, [f"file {n}.{j}" for j in range(10)], publish=True)
    files = [c["uri"] for c in children(api, subs[0])]
    for n, file in enumerate(files):
        add_children(api, file, [f"item {n}.{j}" for j in range(5)], publish=True)
    item = children(api, files[0])[0]["uri"]
    add_children(api, item, ["piece 0", "piece 1", "piece 2"], publish=True)
    piece = children(api, item)[0]["uri"]
    add_children(api, piece, ["leaf 0", "leaf 1", "leaf 2"], publish=True)
    leaf = children(api, piece)[2]["uri"]
    rest = TOTAL - (3 + WIDE + 10 + 100 + 50 + 3 + 3)
    add_children(api, s2, [f"rest {i:04d}" for i in range(rest)], publish=True)
    return {"resource": resource, "s0": s0, "s1": s1, "s2": s2, "leaf": leaf, "chain": [s1, subs[0], files[0], item, piece]}


def test_a_large_tree(api, app, big):
    """One build (it is the slow part), read and then changed."""
    _reads(api, big)
    _changes(api, app, big)


def _reads(api, big):
    resource, s0, leaf = big["resource"], big["s0"], big["leaf"]
    # The wide node: its waypoints, positions and order.
    node = read(api, f"{resource}/tree/node", node_uri=s0)
    assert (node["child_count"], node["waypoints"]) == (WIDE, 5)
    last = read(api, f"{resource}/tree/waypoint", offset=4, parent_node=s0)
    assert [e["position"] for e in last] == list(range(800, 1000))
    assert [e["title"] for e in last] == [f"big {i:04d}" for i in range(800, 1000)]
    assert titles_in_order(api, resource, s0) == [f"big {i:04d}" for i in range(WIDE)]
    # Paths to a deep node and to one far down the wide list.
    big_650 = read(api, f"{resource}/tree/waypoint", offset=3, parent_node=s0)[50]["uri"]
    paths = read(api, f"{resource}/tree/node_from_root", **{"node_ids[]": [record_id(leaf), record_id(big_650)]})
    assert [step["node"] for step in paths[str(record_id(leaf))]] == [None, *big["chain"]]
    assert [step["offset"] for step in paths[str(record_id(big_650))]] == [0, 3]
    node = read(api, f"{resource}/tree/node", node_uri=leaf)
    assert (node["position"], node["child_count"], node["title"]) == (3, 0, "leaf 2")
    assert [a["ref"] for a in read(api, leaf)["ancestors"]] == [*reversed(big["chain"]), resource]
    # Every walk returns every component, in one order.
    ordered = [entry["ref"] for entry in read(api, f"{resource}/ordered_records")["uris"]]
    assert len(ordered) == TOTAL + 1 and len(set(ordered)) == TOTAL + 1
    assert old_route_walk(read(api, f"{resource}/tree")) == ordered[1:]
    s1 = big["s1"]
    branch = [record["uri"] for record in walk_tree(api, s1)]
    start = ordered.index(s1)
    assert branch == ordered[start : start + len(branch)] and len(branch) == 1 + 10 + 100 + 50 + 3 + 3


def _changes(api, app, big):
    resource, s0, s1, s2 = big["resource"], big["s0"], big["s1"], big["s2"]
    # Moves to the front, the middle and the end of the wide list, one at a time.
    expected = [f"big {i:04d}" for i in range(WIDE)]
    uri = {
        entry["title"]: entry["uri"]
        for offset in range(5)
        for entry in read(api, f"{resource}/tree/waypoint", offset=offset, parent_node=s0)
    }
    for title, position in [("big 0999", 0), ("big 0000", 500), ("big 0500", 99_999), ("big 0998", 1)]:
        assert api.post(f"{uri[title]}/parent", params={"parent": record_id(s0), "position": position}).status_code == 200
        expected.remove(title)
        expected.insert(min(position, len(expected)), title)
        assert titles_in_order(api, resource, s0) == expected
    # A block of 150 from another series, into the middle.
    moving = [entry["uri"] for entry in read(api, f"{resource}/tree/waypoint", offset=0, parent_node=s2)[:150]]
    response = api.post(f"{s0}/accept_children", params={"children[]": moving, "position": 100})
    assert response.status_code == 200, response.text
    expected[100:100] = [f"rest {i:04d}" for i in range(150)]
    assert titles_in_order(api, resource, s0) == expected
    assert titles_in_order(api, resource, s2)[0] == "rest 0150"
    # Deleting a branch, then the resource.
    assert api.delete(s1).status_code == 200
    assert count_rows(app, "archival_object") == TOTAL - BRANCH
    assert titles_in_order(api, resource) == ["S0", "S2"]
    assert titles_in_order(api, resource, s0) == expected
    log = app.state.fonds.db.tables["change_log"]
    with app.state.fonds.db.engine.connect() as conn:
        start = conn.execute(select(func.max(log.c.seq))).scalar_one()
    assert api.delete(resource).status_code == 200
    assert count_rows(app, "archival_object") == 0
    with app.state.fonds.db.engine.connect() as conn:
        deleted = conn.execute(select(func.count()).where(log.c.seq > start, log.c.op == "deleted")).scalar_one()
    assert deleted == TOTAL - BRANCH + 1
    assert api.get(f"{resource}/tree/root").status_code == 404
