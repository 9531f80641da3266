"""Building and checking trees through HTTP, for the tests of records/trees and api/trees."""

from __future__ import annotations


def record_id(uri: str) -> int:
    return int(uri.rsplit("/", 1)[1])


def add_children(api, target_uri: str, titles: list[str], **extra) -> None:
    """Batch-create one child per title under a resource or archival object."""
    body = {"jsonmodel_type": "archival_record_children", "children": [{"title": t, "level": "file", **extra} for t in titles]}
    response = api.post(f"{target_uri}/children", json=body)
    assert response.status_code == 200, response.text


def children(api, node_uri: str) -> list[dict]:
    response = api.get(f"{node_uri}/children")
    assert response.status_code == 200, response.text
    return response.json()


def waypoint_entries(api, resource_uri: str, parent_uri: str | None = None) -> list[dict]:
    """Every child of the root (or of `parent_uri`), through all its waypoints, as a client pages them."""
    start = api.get(f"{resource_uri}/tree/root" if parent_uri is None else f"{resource_uri}/tree/node", params={"node_uri": parent_uri})
    assert start.status_code == 200, start.text
    found = []
    for offset in range(start.json()["waypoints"]):
        params = {"offset": offset, **({"parent_node": parent_uri} if parent_uri else {})}
        response = api.get(f"{resource_uri}/tree/waypoint", params=params)
        assert response.status_code == 200, response.text
        found += response.json()
    return found


def titles_in_order(api, resource_uri: str, parent_uri: str | None = None) -> list[str]:
    """Titles of the children, checked to carry exactly positions 0..n-1 in order."""
    entries = waypoint_entries(api, resource_uri, parent_uri)
    assert [entry["position"] for entry in entries] == list(range(len(entries)))
    return [entry["title"] for entry in entries]


def walk_tree(api, uri: str):
    """ArchivesSnake's utils.walk_tree, call for call: from a resource or an archival object,
    each record, then the children of each of its waypoints."""
    params = {"offset": 0}
    if "archival_object" not in uri:
        resource_uri = uri
        start = api.get(f"{resource_uri}/tree/root", params=params).json()
    else:
        resource_uri = api.get(uri).json()["resource"]["ref"]
        start = api.get(f"{resource_uri}/tree/node", params={**params, "node_uri": uri}).json()
    yield from _handle_waypoint(api, f"{resource_uri}/tree/waypoint", start)


def _handle_waypoint(api, waypoints_uri: str, waypoint: dict):
    yield api.get(waypoint["uri"]).json()
    params = {} if "resources" in waypoint["uri"] else {"parent_node": waypoint["uri"]}
    for offset in range(waypoint["waypoints"]):
        for entry in api.get(waypoints_uri, params={**params, "offset": offset}).json():
            yield from _handle_waypoint(api, waypoints_uri, entry)


def old_route_walk(tree: dict) -> list[str]:
    """What scripts do with the older `…/tree` document: record_uri of every node, pre-order."""
    found, stack = [], list(reversed(tree["children"]))
    while stack:
        node = stack.pop()
        found.append(node["record_uri"])
        stack += reversed(node["children"])
    return found
