"""Revision 0008_locations: subjects stored before it get shared term records and term URIs,
top containers lose the display strings earlier versions stored (they are computed when read)."""

from __future__ import annotations

import warnings

import orjson
from alembic import command
from sqlalchemy import select, update

from fonds.model import database_metadata
from fonds.storage import migrate
from fonds.storage.db import Database
from tests.factories import Api, running_app
from tests.records.helpers import read

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def _subject(api, *terms: str) -> str:
    body = {"jsonmodel_type": "subject", "source": "local", "terms": [{"term": t, "term_type": "topical"} for t in terms]}
    return api.create("/subjects", body)["uri"]


def _migrate(settings, revision: str, edit=None) -> None:
    db = Database(settings.effective_database_url, database_metadata())
    config = migrate.alembic_config()
    with db.engine.connect() as conn, conn.begin():
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
        if edit is not None:
            edit(conn, db)
    db.dispose()


def _stale_display_string(conn, db) -> None:
    table = db.tables["top_container"]
    for row in conn.execute(select(table.c.id, table.c.json)).all():
        doc = {**orjson.loads(row.json), "display_string": "stale", "long_display_string": "stale"}
        conn.execute(update(table).where(table.c.id == row.id).values(json=orjson.dumps(doc)))


def test_terms_are_backfilled_and_stored_display_strings_dropped(settings):
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with running_app(settings) as app:
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        first, second = _subject(api, "Whaling", "Ships"), _subject(api, "Ships")
        repo = api.create_repository("MSS")
        box = api.create(f"/repositories/{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": "5", "type": "box"})[
            "uri"
        ]
    _migrate(settings, "0005_auth_generation", _stale_display_string)
    with running_app(settings) as app:  # migrates to the head again
        api = Api.login(TestClient(app, raise_server_exceptions=False))
        terms = api.get("/vocabularies/1/terms").json()
        assert [t["term"] for t in terms] == ["Whaling", "Ships"]
        whaling, ships = (t["uri"] for t in terms)
        assert [t["uri"] for t in read(api, first)["terms"]] == [whaling, ships]
        assert [t["uri"] for t in read(api, second)["terms"]] == [ships]
        assert read(api, box)["display_string"] == "Box 5"
        # New subjects reuse the backfilled terms.
        assert [t["uri"] for t in read(api, _subject(api, "Ships", "Whaling"))["terms"]] == [ships, whaling]
