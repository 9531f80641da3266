"""Concurrent appends and moves under one parent lose nothing and duplicate nothing (on
PostgreSQL the parent's row lock serialises them; on SQLite the write lock does)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.factories import Api, new_client
from tests.records.helpers import make_resource
from tests.records.tree_helpers import add_children, record_id, titles_in_order

WRITERS = 6
ROUNDS = 6


def _listed_positions(api, repo: int, parent: str) -> list[int]:
    """The `position` each child of `parent` reads with (computed per record, not from a list index)."""
    found, page = [], 1
    while True:
        body = api.get(f"/repositories/{repo}/archival_objects", params={"page": page, "page_size": 250}).json()
        found += [r["position"] for r in body["results"] if r.get("parent") == {"ref": parent}]
        if body["this_page"] >= body["last_page"]:
            return found
        page += 1


def test_concurrent_appends_and_moves_under_one_parent(api, repo):
    resource = make_resource(api, repo)
    add_children(api, resource, ["Series"])
    series = api.get(f"{resource}/tree/waypoint", params={"offset": 0}).json()[0]["uri"]
    add_children(api, series, [f"seed {n}" for n in range(10)])
    seeds = [entry["uri"] for entry in api.get(f"{resource}/tree/waypoint", params={"offset": 0, "parent_node": series}).json()]
    clients = [Api(new_client(api.client.app), api.token) for _ in range(WRITERS)]
    for client in clients:
        client.client.headers["X-ArchivesSpace-Session"] = api.token

    def append(writer: int) -> list[int]:
        statuses = []
        for n in range(ROUNDS):
            titles = [f"w{writer} r{n} c{c}" for c in range(3)]
            body = {"children": [{"title": t, "level": "file"} for t in titles]}
            statuses.append(clients[writer].post(f"{series}/children", json=body).status_code)
            single = {"jsonmodel_type": "archival_object", "title": f"w{writer} r{n} single", "level": "file", "parent": {"ref": series}}
            statuses.append(
                clients[writer].post(f"/repositories/{repo}/archival_objects", json={**single, "resource": {"ref": resource}}).status_code
            )
        return statuses

    def move(writer: int) -> list[int]:
        return [
            clients[writer]
            .post(f"{seeds[(writer + n) % len(seeds)]}/parent", params={"parent": record_id(series), "position": n % 3})
            .status_code
            for n in range(ROUNDS * 2)
        ]

    with ThreadPoolExecutor(WRITERS) as pool:
        results = list(pool.map(lambda w: append(w) if w % 2 == 0 else move(w), range(WRITERS)))
    assert all(status == 200 for statuses in results for status in statuses), results
    titles = titles_in_order(api, resource, series)
    appended = {f"w{w} r{n} c{c}" for w in range(0, WRITERS, 2) for n in range(ROUNDS) for c in range(3)}
    appended |= {f"w{w} r{n} single" for w in range(0, WRITERS, 2) for n in range(ROUNDS)}
    assert len(titles) == len(set(titles)) == 10 + len(appended)
    assert set(titles) == appended | {f"seed {n}" for n in range(10)}
    assert sorted(_listed_positions(api, repo, series)) == list(range(len(titles)))
