"""No archival object can become its own ancestor, by create or update; and a cycle stored by
other means (a database edited by hand) cannot make a read hang. Every request here runs under
a time limit: a hang is a failure, not a stuck suite."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import update as sql_update

from tests.records.helpers import ao_body, count_rows, make_ao, make_resource, read, update

LIMIT_SECONDS = 60
OWN_ANCESTOR = {"error": "Can't make a parent into its own child"}


def within_limit(call):
    """The result of `call()`, failing the test if it has not answered within the limit."""
    result = {}

    def run():
        result["value"] = call()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(LIMIT_SECONDS)
    assert not worker.is_alive(), f"no answer within {LIMIT_SECONDS} s"
    return result["value"]


def aos(repo: int) -> str:
    return f"/repositories/{repo}/archival_objects"


@pytest.mark.parametrize("with_resource", [True, False])
def test_a_record_cannot_be_created_as_its_own_parent(api, repo, with_resource):
    resource = make_resource(api, repo) if with_resource else None
    last = make_ao(api, repo, "Before", resource=resource)
    before = count_rows(api.client.app, "archival_object")
    own_uri = f"{aos(repo)}/{last['id'] + 1}"  # the id the next create gets
    response = within_limit(lambda: api.post(aos(repo), json=ao_body("Loop", resource=resource, parent=own_uri)))
    assert (response.status_code, response.json()) == (409, OWN_ANCESTOR)
    assert count_rows(api.client.app, "archival_object") == before
    assert within_limit(lambda: api.get(own_uri)).status_code == 404
    listing = within_limit(lambda: api.get(aos(repo), params={"page": 1}))
    assert listing.status_code == 200
    assert [r["title"] for r in listing.json()["results"]] == ["Before"]


def test_a_record_cannot_be_moved_below_itself(api, repo):
    resource = make_resource(api, repo)
    top = make_ao(api, repo, "Top", resource=resource)["uri"]
    middle = make_ao(api, repo, "Middle", resource=resource, parent=top)["uri"]
    bottom = make_ao(api, repo, "Bottom", resource=resource, parent=middle)["uri"]
    before = read(api, top)
    for new_parent in (top, middle, bottom):
        response = within_limit(lambda new_parent=new_parent: update(api, top, parent={"ref": new_parent}))
        assert (response.status_code, response.json()) == (409, OWN_ANCESTOR)
    assert read(api, top) == before


def test_a_stored_cycle_does_not_hang_reads_or_writes(api, repo):
    resource = make_resource(api, repo)
    first = make_ao(api, repo, "First", resource=resource)
    second = make_ao(api, repo, "Second", resource=resource, parent=first["uri"])
    outside = make_ao(api, repo, "Outside", resource=resource)
    db = api.client.app.state.fonds.db
    table = db.tables["archival_object"]
    with db.write() as conn:  # no write allows this; a hand-edited database might hold it
        conn.execute(sql_update(table).where(table.c.id == first["id"]).values(parent_id=second["id"]))
    for uri in (first["uri"], second["uri"]):
        response = within_limit(lambda uri=uri: api.get(uri))
        assert response.status_code == 200
        ancestors = [a["ref"] for a in response.json()["ancestors"]]
        assert len(ancestors) == len(set(ancestors)) <= 3
    listing = within_limit(lambda: api.get(aos(repo), params={"page": 1}))
    assert listing.status_code == 200
    assert within_limit(lambda: api.get(f"{first['uri']}/children")).status_code == 200
    # Moving a record under the cycle is refused, and moving a node of it to another resource ends.
    moved = within_limit(lambda: update(api, outside["uri"], parent={"ref": second["uri"]}))
    assert moved.status_code == 409
    other = make_resource(api, repo, "Other")
    within_limit(lambda: update(api, second["uri"], resource={"ref": other}, parent=None))
    within_limit(lambda: api.delete(first["uri"]))
