"""Revision 0014_tree_refs_in_columns: a tree node's refs to its root and parent are kept in its
columns only. The link rows an earlier revision wrote for them go (and come back from the columns
on downgrade), and deletes still take a root's and a node's nodes with them."""

from __future__ import annotations

import warnings

from alembic import command

from fonds.model import database_metadata
from fonds.storage.db import Database
from tests.factories import Api, running_app
from tests.records.helpers import ao_body
from tests.storage.test_record_counts_migration import _migrate

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TREE_LINKS = (
    "SELECT source_type, field, count(*) FROM record_link WHERE (source_type = 'archival_object' AND field IN ('resource', 'parent'))"
    " OR (source_type = 'digital_object_component' AND field IN ('digital_object', 'parent')) GROUP BY 1, 2 ORDER BY 1, 2"
)


def _tree_links(settings) -> list[tuple]:
    db = Database(settings.effective_database_url, database_metadata())
    try:
        with db.engine.connect() as conn:
            return [tuple(row) for row in conn.exec_driver_sql(TREE_LINKS)]
    finally:
        db.dispose()


def _component(digital_object: str, label: str, parent: str | None = None) -> dict:
    body = {"jsonmodel_type": "digital_object_component", "digital_object": {"ref": digital_object}, "label": label}
    return body | ({"parent": {"ref": parent}} if parent else {})


def test_tree_refs_leave_the_link_table_and_deletes_still_take_the_nodes(settings):
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        repo = api.create_repository("MSS")
        subject = api.create(
            "/subjects", {"jsonmodel_type": "subject", "source": "local", "terms": [{"term": "Mills", "term_type": "topical"}]}
        )
        subject = subject["uri"]
        resource = api.create(f"/repositories/{repo}/resources", {"jsonmodel_type": "resource", "title": "Papers"})["uri"]
        series = api.create(f"/repositories/{repo}/archival_objects", ao_body("Series", resource=resource))["uri"]
        files = [
            api.create(
                f"/repositories/{repo}/archival_objects",
                ao_body(f"File {n}", resource=resource, parent=series, subjects=[{"ref": subject}]),
            )["uri"]
            for n in range(2)
        ]
        digital_object = api.create(
            f"/repositories/{repo}/digital_objects", {"jsonmodel_type": "digital_object", "title": "Plates", "digital_object_id": "P"}
        )
        digital_object = digital_object["uri"]
        album = api.create(f"/repositories/{repo}/digital_object_components", _component(digital_object, "Album"))["uri"]
        api.create(f"/repositories/{repo}/digital_object_components", _component(digital_object, "Page", album))
    assert _tree_links(settings) == []  # written in the columns only

    _migrate(settings, command.downgrade, "0013_clustered_record_counts")
    assert _tree_links(settings) == [
        ("archival_object", "parent", 2),
        ("archival_object", "resource", 3),
        ("digital_object_component", "digital_object", 2),
        ("digital_object_component", "parent", 1),
    ]
    _migrate(settings, command.upgrade, "head")
    assert _tree_links(settings) == []

    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        assert [api.get(uri).json()["subjects"] for uri in files] == [[{"ref": subject}]] * 2  # other links stay
        assert api.delete(series).status_code == 200
        assert [api.get(uri).status_code for uri in files] == [404, 404]
        assert api.delete(digital_object).status_code == 200
        assert api.get(album).status_code == 404
        assert api.delete(resource).status_code == 200
        # The subject's links went with the files: it can be deleted as unlinked.
        assert api.delete(subject).status_code == 200
