"""The sibling bands' triggers (storage/siblings.py): a database whose node tables have an
earlier version's gets the current one in its place at start, never both."""

from __future__ import annotations

from fonds.storage import siblings
from fonds.storage.triggers import triggers_named
from tests.records.helpers import make_resource
from tests.records.test_tree_sibling_bands import check_bands
from tests.records.tree_helpers import add_children, waypoint_entries

ROOTS = {"archival_object": "resource_id"}


def test_the_triggers_of_an_earlier_version_are_replaced_by_the_current_ones(app, api, repo, monkeypatch):
    db = app.state.fonds.db
    monkeypatch.setattr(siblings, "VERSION", 1)
    with db.write() as conn:
        siblings._install_one(conn, "archival_object", "resource_id")
        assert sorted(triggers_named(conn, "archival_object", "fonds_siblings_")) == [
            f"fonds_siblings_v1_archival_object_{step}" for step in ("del", "ins", "move")
        ]
    monkeypatch.undo()
    siblings.install(db, ROOTS)
    with db.engine.connect() as conn:
        assert sorted(triggers_named(conn, "archival_object", "fonds_siblings_")) == [
            f"fonds_siblings_v{siblings.VERSION}_archival_object_{step}" for step in ("del", "ins", "move")
        ]
        if db.kind == "postgresql":
            left = conn.exec_driver_sql("SELECT proname FROM pg_proc WHERE proname LIKE 'fonds\\_siblings\\_v1\\_%%'").all()
            assert left == []
    # One trigger a change: a band counted twice (or not at all) would differ from a recount.
    resource = make_resource(api, repo)
    add_children(api, resource, [f"T{n}" for n in range(40)])
    add_children(api, resource, ["one"])
    for entry in waypoint_entries(api, resource)[:3]:
        assert api.delete(entry["uri"]).status_code == 200
    check_bands(app)
