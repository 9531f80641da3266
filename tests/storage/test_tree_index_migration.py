"""Revision 0016_tree_sibling_indexes: a tree node table's sibling lists are indexed by parent and
position, and each tree's top level by root, parent and position over its top-level nodes only,
instead of by parent and by root, parent and position over every node. Trees read the same before
and after, and back."""

from __future__ import annotations

import warnings

from alembic import command
from sqlalchemy import inspect

from fonds.model import database_metadata
from fonds.storage.db import Database
from tests.factories import Api, running_app
from tests.records.helpers import ao_body
from tests.storage.test_record_counts_migration import _migrate

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

NODES = ("archival_object", "digital_object_component")
NEW = {
    ("ix_archival_object_parent_id_position", ("parent_id", "position")),
    ("ix_archival_object_resource_id_parent_id_position_partial", ("resource_id", "parent_id", "position")),
    ("ix_digital_object_component_parent_id_position", ("parent_id", "position")),
    ("ix_digital_object_component_digital_object_id_parent_i_535bf40a", ("digital_object_id", "parent_id", "position")),
}
OLD = {
    ("ix_archival_object_parent_id", ("parent_id",)),
    ("ix_archival_object_resource_id_parent_id_position", ("resource_id", "parent_id", "position")),
    ("ix_digital_object_component_parent_id", ("parent_id",)),
    ("ix_digital_object_component_digital_object_id_parent_i_f4920b9c", ("digital_object_id", "parent_id", "position")),
}


def _tree_indexes(settings) -> set[tuple[str, tuple[str, ...]]]:
    """Each node table's indexes that hold `parent_id` or `position`: (name, columns)."""
    db = Database(settings.effective_database_url, database_metadata())
    try:
        with db.engine.connect() as conn:
            found = inspect(conn)
            return {
                (index["name"], tuple(index["column_names"]))
                for table in NODES
                for index in found.get_indexes(table)
                if {"parent_id", "position"} & set(index["column_names"])
            }
    finally:
        db.dispose()


def _tree_reads(api: Api, resource: str, series: list[str]) -> tuple:
    """What the tree views say of the resource: its top level, each series' children, the
    partial tree around the first child of the first series."""
    root = api.get(f"{resource}/tree/root").json()
    top = [(node["uri"], node["child_count"]) for node in root["precomputed_waypoints"][""]["0"]]
    children = [[child["title"] for child in api.get(f"{uri}/children").json()] for uri in series]
    first_child = api.get(f"{series[0]}/children").json()[0]["uri"]
    partial = api.get(f"{resource}/tree", params={"limit_to": first_child}).json()
    shown = [(child["title"], [grandchild["title"] for grandchild in child["children"]]) for child in partial["children"]]
    return top, children, shown


def test_the_sibling_list_indexes_change_and_trees_read_the_same(settings):
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        repo = api.create_repository("MSS")
        aos = f"/repositories/{repo}/archival_objects"
        resource = api.create(f"/repositories/{repo}/resources", {"jsonmodel_type": "resource", "title": "Papers"})["uri"]
        series = [api.create(aos, ao_body(f"Series {n}", resource=resource))["uri"] for n in range(2)]
        for n in range(3):
            api.create(aos, ao_body(f"File {n}", resource=resource, parent=series[0]))
        api.create(aos, ao_body("File A", resource=resource, parent=series[1]))
        before = _tree_reads(api, resource, series)
    assert before[0] == [(series[0], 3), (series[1], 1)]
    assert before[1] == [["File 0", "File 1", "File 2"], ["File A"]]
    assert before[2] == [("Series 0", ["File 0", "File 1", "File 2"]), ("Series 1", [])]
    assert _tree_indexes(settings) == NEW

    _migrate(settings, command.downgrade, "0015_no_mtime_indexes")
    assert _tree_indexes(settings) == OLD
    _migrate(settings, command.upgrade, "head")
    assert _tree_indexes(settings) == NEW

    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        assert _tree_reads(api, resource, series) == before
        api.create(aos, ao_body("File 3", resource=resource, parent=series[0]))
        api.create(aos, ao_body("Series 2", resource=resource))
        top, children, _ = _tree_reads(api, resource, series)
        assert [count for _, count in top] == [4, 1, 0] and children[0][-1] == "File 3"
