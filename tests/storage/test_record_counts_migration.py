"""Revision 0013_clustered_record_counts: on SQLite, record_bucket rebuilt clustered on its key
(and back on downgrade), its counts copied and the counting triggers kept, so listings stay
right and later writes go on counting."""

from __future__ import annotations

import warnings

import pytest
from alembic import command

from fonds.model import database_metadata
from fonds.storage import migrate
from fonds.storage.db import Database
from tests.factories import Api, running_app

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def _migrate(settings, direction, revision: str) -> None:
    db = Database(settings.effective_database_url, database_metadata())
    try:
        config = migrate.alembic_config()
        with db.engine.connect() as conn, conn.begin():
            config.attributes["connection"] = conn
            direction(config, revision)
    finally:
        db.dispose()


def _table_sql(settings) -> str:
    db = Database(settings.effective_database_url, database_metadata())
    try:
        with db.engine.connect() as conn:
            return conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'record_bucket'").scalar_one()
    finally:
        db.dispose()


def _accessions(api, path: str) -> tuple[int, list[str]]:
    page = api.get(path, params={"page": 1, "page_size": 250}).json()
    return page["total"], [record["title"] for record in page["results"]]


def test_down_and_up_again_keep_the_counts_and_the_triggers(settings):
    if not settings.effective_database_url.startswith("sqlite"):
        pytest.skip("the table is rebuilt on SQLite only")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        path = f"/repositories/{api.create_repository('MSS')}/accessions"
        for n in range(3):
            api.create(path, {"jsonmodel_type": "accession", "title": f"A {n}", "id_0": f"A{n}"})
    assert "WITHOUT ROWID" in _table_sql(settings)

    _migrate(settings, command.downgrade, "0012_link_target_order")
    assert "WITHOUT ROWID" not in _table_sql(settings)
    _migrate(settings, command.upgrade, "head")
    assert "WITHOUT ROWID" in _table_sql(settings)

    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        assert _accessions(api, path) == (3, ["A 0", "A 1", "A 2"])
        api.create(path, {"jsonmodel_type": "accession", "title": "A 3", "id_0": "A3"})
        assert _accessions(api, path) == (4, ["A 0", "A 1", "A 2", "A 3"])
