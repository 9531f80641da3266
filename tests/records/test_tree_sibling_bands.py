"""A node's logical position comes from the sibling bands the node tables' triggers keep
(fonds.storage.siblings) plus a count within its band: every write that changes a sibling list
(appends, bulk children, inserts between siblings, moves, deletes, renumbering) keeps the bands
equal to a recount, and positions read so equal those the ordinary path counts."""

from __future__ import annotations

from sqlalchemy import text

from fonds.records.trees import positions
from fonds.storage import siblings
from tests.api.test_fast_lane import ordinary, same_answer  # noqa: F401 - a fixture
from tests.records.helpers import make_ao, make_resource, read
from tests.records.tree_helpers import add_children, waypoint_entries

RECOUNT = """SELECT '{table}', COALESCE({root}, 0), COALESCE(parent_id, 0), position >> {shift}, count(*)
FROM "{table}" WHERE position IS NOT NULL GROUP BY 2, 3, 4"""
NODES = {"archival_object": "resource_id", "digital_object_component": "digital_object_id"}


def check_bands(app) -> None:
    with app.state.fonds.db.engine.connect() as conn:
        kept = {tuple(row[:4]): row[4] for row in conn.execute(text("SELECT * FROM sibling_bucket WHERE n != 0"))}
        counted = {}
        for table, root in NODES.items():
            rows = conn.execute(text(RECOUNT.format(table=table, root=root, shift=siblings.SHIFT)))
            counted.update((tuple(row[:4]), row[4]) for row in rows)
    assert kept == counted


def check_positions(api, ordinary, resource: str, parent: str | None = None) -> list[str]:  # noqa: F811
    uris = [entry["uri"] for entry in waypoint_entries(api, resource, parent)]
    for index in sorted({0, 1, 255, 256, 257, 299, 300, 511, 512, len(uris) - 2, len(uris) - 1}):
        if 0 <= index < len(uris):
            assert read(api, uris[index])["position"] == index
            same_answer(api, ordinary, uris[index])
    return uris


def test_bands_follow_every_change_to_a_sibling_list(app, api, ordinary, repo):  # noqa: F811
    resource, other = make_resource(api, repo), make_resource(api, repo, "Other")
    add_children(api, resource, [f"T{n}" for n in range(600)])  # one batch: the bulk insert path
    check_bands(app)
    uris = check_positions(api, ordinary, resource)
    # Inserts between two siblings until the gap closes (the later siblings shift), and moves.
    for n in range(12):
        make_ao(api, repo, f"x{n}", resource=resource, position=256)
    for uri, position in ((uris[-1], 0), (uris[3], 300), (uris[10], 599)):
        assert api.post(f"{uri}/parent", params={"position": position}).status_code == 200
    assert api.post(f"{uris[20]}/parent", params={"parent": uris[0].rsplit("/", 1)[1], "position": 0}).status_code == 200
    for uri in uris[400:405]:
        assert api.delete(uri).status_code == 200
    assert api.post(f"{uris[0]}/accept_children", params={"children[]": uris[100:103], "position": 1}).status_code == 200
    add_children(api, other, ["O1", "O2"])
    check_bands(app)
    check_positions(api, ordinary, resource)
    check_positions(api, ordinary, resource, uris[0])
    check_positions(api, ordinary, other)
    db = app.state.fonds.db
    table = db.tables["archival_object"]
    with db.write() as conn:
        positions.renumber(conn, positions.Siblings(table, "resource_id", int(resource.rsplit("/", 1)[1]), None))
    check_bands(app)
    check_positions(api, ordinary, resource)
    listing = f"/repositories/{repo}/archival_objects"
    for page in (1, 26, 27, 60, 61):
        same_answer(api, ordinary, listing, page=page, page_size=10)
    assert api.delete(resource).status_code == 200
    check_bands(app)
