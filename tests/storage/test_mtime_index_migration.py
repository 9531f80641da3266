"""Revision 0015_no_mtime_indexes: the record tables lose their unread `system_mtime` indexes (and
get them back on downgrade); records are still written, read and listed."""

from __future__ import annotations

import warnings

from alembic import command
from sqlalchemy import inspect

from fonds.model import database_metadata
from fonds.storage.db import Database
from tests.factories import Api, running_app
from tests.storage.test_record_counts_migration import _migrate

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def _mtime_indexes(settings) -> set[str]:
    db = Database(settings.effective_database_url, database_metadata())
    try:
        with db.engine.connect() as conn:
            found = inspect(conn)
            return {
                index["name"]
                for table in ("accession", "archival_object", "agent_person", "user")
                for index in found.get_indexes(table)
                if index["column_names"] == ["system_mtime"]
            }
    finally:
        db.dispose()


def test_the_mtime_indexes_go_and_come_back_on_downgrade(settings):
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        path = f"/repositories/{api.create_repository('MSS')}/accessions"
        first = api.create(path, {"jsonmodel_type": "accession", "title": "A 0", "id_0": "A0"})["uri"]
    assert _mtime_indexes(settings) == set()

    _migrate(settings, command.downgrade, "0014_tree_refs_in_columns")
    assert _mtime_indexes(settings) == {f"ix_{table}_system_mtime" for table in ("accession", "archival_object", "agent_person", "user")}
    _migrate(settings, command.upgrade, "head")
    assert _mtime_indexes(settings) == set()

    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        api.create(path, {"jsonmodel_type": "accession", "title": "A 1", "id_0": "A1"})
        assert api.post(first, json=api.get(first).json() | {"title": "A 0, renamed"}).status_code == 200
        assert [record["title"] for record in api.get(path, params={"page": 1}).json()["results"]] == ["A 0, renamed", "A 1"]
