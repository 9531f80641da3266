"""Revision 0004_tree_positions: down to contiguous positions and back up to gapped ones, with
`publish` and `display_string` copied from the stored JSON, the order of every list kept."""

from __future__ import annotations

import warnings

from alembic import command
from sqlalchemy import select

from fonds.model import database_metadata
from fonds.storage import migrate
from fonds.storage.db import Database
from tests.factories import Api, running_app
from tests.records.helpers import make_resource, read
from tests.records.tree_helpers import add_children, titles_in_order

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def _build(settings) -> str:
    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        repo = api.create_repository("MSS")
        resource = make_resource(api, repo, "Papers", publish=True)
        add_children(api, resource, ["A", "B", "C", "D"], publish=True)
        uris = [entry["uri"] for entry in read(api, f"{resource}/tree/waypoint", offset=0)]
        assert api.post(f"{uris[3]}/parent", params={"position": 1}).status_code == 200  # A D B C
        add_children(api, uris[0], ["A1", "A2"])
        return resource


def _positions(settings) -> list[tuple]:
    db = Database(settings.effective_database_url, database_metadata())
    try:
        table = db.tables["archival_object"]
        with db.engine.connect() as conn:
            return [tuple(row) for row in conn.execute(select(table.c.parent_id, table.c.position).order_by(table.c.id))]
    finally:
        db.dispose()


def test_downgrade_and_upgrade_keep_every_order(settings):
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    resource = _build(settings)
    db = Database(settings.effective_database_url, database_metadata())
    config = migrate.alembic_config()
    with db.engine.connect() as conn, conn.begin():
        config.attributes["connection"] = conn
        command.downgrade(config, "0003_enumerations")
    db.dispose()
    # Contiguous again: A D B C at the top (ids 1-4 are A B C D), A1 A2 under A.
    assert _positions(settings) == [(None, 0), (None, 2), (None, 3), (None, 1), (1, 0), (1, 1)]
    with running_app(settings) as app:  # migrates to the head again
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        assert titles_in_order(api, resource) == ["A", "D", "B", "C"]
        a = read(api, f"{resource}/tree/waypoint", offset=0)[0]["uri"]
        assert titles_in_order(api, resource, a) == ["A1", "A2"]
        assert read(api, f"{resource}/tree/node", node_uri=a, published_only="true")["child_count"] == 0  # A1, A2 unpublished
        ordered = read(api, f"{resource}/ordered_records")["uris"]
        assert [entry["display_string"] for entry in ordered] == ["Papers", "A", "D", "B", "C"]
    assert sorted(position for _, position in _positions(settings)) == [1024, 1024, 2048, 2048, 3072, 4096]
