"""The migrated schema, the change log written in each write's transaction, and `fonds db upgrade`."""

from __future__ import annotations

import dataclasses
import datetime
import os
import warnings

import orjson
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, inspect, select, text
from typer.testing import CliRunner

from fonds.cli import cli
from fonds.model import database_metadata
from fonds.storage import migrate
from fonds.storage.db import Database
from tests.records.helpers import ao_body, count_rows, instance, make_ao, make_resource, make_subject, make_top_container, read

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

PG_URL = os.environ.get("FONDS_TEST_DATABASE_URL")


def changes_since(app, seq: int) -> list[tuple[str, int, str]]:
    """(record_type, record_id, op) of the change-log rows after `seq`, in order."""
    db = app.state.fonds.db
    log = db.tables["change_log"]
    with db.engine.connect() as conn:
        rows = conn.execute(select(log.c.record_type, log.c.record_id, log.c.op).where(log.c.seq > seq).order_by(log.c.seq)).all()
    return [tuple(row) for row in rows]


def last_seq(app) -> int:
    db = app.state.fonds.db
    log = db.tables["change_log"]
    with db.engine.connect() as conn:
        return conn.execute(select(func.coalesce(func.max(log.c.seq), 0))).scalar_one()


def record_id(uri: str) -> int:
    return int(uri.rsplit("/", 1)[1])


# -- schema ----------------------------------------------------------------------------------


def test_migrated_database_matches_the_metadata(app):
    with app.state.fonds.db.engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), database_metadata())
    assert differences == []


def test_database_is_at_the_head_revision(app):
    db = app.state.fonds.db
    assert migrate.head_revision() is not None
    assert migrate.current_revision(db) == migrate.head_revision()
    with db.engine.connect() as conn:
        assert migrate.database_heads(db) == frozenset(MigrationContext.configure(conn).get_current_heads())


def test_the_shipped_heads_read_from_the_scripts_are_alembics():
    from alembic.script import ScriptDirectory

    assert migrate.script_heads() == frozenset(ScriptDirectory.from_config(migrate.alembic_config()).get_heads())


def test_every_registered_table_exists(app):
    with app.state.fonds.db.engine.connect() as conn:
        present = set(inspect(conn).get_table_names())
    assert set(database_metadata().tables) <= present
    assert "alembic_version" in present


# -- change log ------------------------------------------------------------------------------


def test_create_update_delete_each_write_one_change_row(app, api, repo):
    start = last_seq(app)
    uri = api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "Gift"})["uri"]
    record = read(api, uri)
    assert api.post(uri, json=record).status_code == 200
    assert api.delete(uri).status_code == 200
    accession_id = record_id(uri)
    assert changes_since(app, start) == [
        ("accession", accession_id, "created"),
        ("accession", accession_id, "updated"),
        ("accession", accession_id, "deleted"),
    ]


def test_change_rows_carry_uri_repository_and_time(app, api, repo):
    start = last_seq(app)
    uri = api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "Gift"})["uri"]
    db = app.state.fonds.db
    log = db.tables["change_log"]
    with db.engine.connect() as conn:
        row = conn.execute(select(log).where(log.c.seq > start)).one()
    assert (row.uri, row.repo_id, row.op) == (uri, repo, "created")
    assert row.at is not None


def test_cascaded_deletes_are_each_logged(app, api, repo):
    resource = make_resource(api, repo)
    top = make_ao(api, repo, "Top", resource=resource)["uri"]
    child = make_ao(api, repo, "Child", resource=resource, parent=top)["uri"]
    start = last_seq(app)
    assert api.delete(resource).status_code == 200
    logged = changes_since(app, start)
    assert sorted(logged) == sorted(
        [
            ("resource", record_id(resource), "deleted"),
            ("archival_object", record_id(top), "deleted"),
            ("archival_object", record_id(child), "deleted"),
        ]
    )


def test_records_rewritten_by_a_delete_are_logged_as_updated(app, api, repo):
    subject = make_subject(api, "Cats")
    container = make_top_container(api, repo, "1")
    accession = api.create(
        f"/repositories/{repo}/accessions",
        {"jsonmodel_type": "accession", "title": "Gift", "subjects": [{"ref": subject}], "instances": [instance(container)]},
    )["uri"]
    start = last_seq(app)
    api.delete(subject)
    api.delete(container)
    assert sorted(changes_since(app, start)) == sorted(
        [
            ("subject", record_id(subject), "deleted"),
            ("accession", record_id(accession), "updated"),
            ("top_container", record_id(container), "deleted"),
            ("accession", record_id(accession), "updated"),
        ]
    )


def test_a_failed_create_leaves_no_row_and_no_change(app, api, repo):
    resource = make_resource(api, repo)
    siblings = [make_ao(api, repo, title, resource=resource, ref_id=title)["uri"] for title in ("a", "b")]
    start, stored = last_seq(app), count_rows(app, "archival_object")
    # The duplicate ref_id is only noticed after the new node was placed first (shifting its siblings).
    response = api.post(f"/repositories/{repo}/archival_objects", json=ao_body("c", resource=resource, ref_id="a", position=0))
    assert response.status_code == 400, response.text
    assert changes_since(app, start) == []
    assert count_rows(app, "archival_object") == stored
    assert [read(api, uri)["position"] for uri in siblings] == [0, 1]


def test_a_failed_update_leaves_no_change(app, api, repo):
    uri = api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "Gift"})["uri"]
    start = last_seq(app)
    record = read(api, uri)
    record["lock_version"] = 7
    assert api.post(uri, json=record).status_code == 409
    assert changes_since(app, start) == []
    assert read(api, uri)["lock_version"] == 0


# -- fonds db upgrade ------------------------------------------------------------------------


def upgrade_env(settings, data_dir) -> dict:
    """The runner's environment: a fresh data dir, the test database when it is PostgreSQL (None unsets)."""
    return {"FONDS_DATA_DIR": str(data_dir), "FONDS_CONFIG": None, "FONDS_DATABASE_URL": settings.database_url if PG_URL else None}


def test_db_upgrade_on_a_fresh_data_dir(tmp_path, settings):
    data_dir = tmp_path / "fresh"
    runner = CliRunner()
    for _ in range(2):  # the second run finds nothing to do
        result = runner.invoke(cli, ["db", "upgrade"], env=upgrade_env(settings, data_dir))
        assert result.exit_code == 0, result.output
        assert migrate.head_revision() in result.output
    if not PG_URL:
        assert (data_dir / "fonds.sqlite3").is_file()
    upgraded = dataclasses.replace(settings, data_dir=data_dir)
    db = Database(upgraded.effective_database_url, database_metadata())
    try:
        assert migrate.current_revision(db) == migrate.head_revision()
        with db.engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), database_metadata()) == []
    finally:
        db.dispose()


# -- upgrading a database made before groups existed (revision 0001) --------------------------


def _legacy_user(conn, user_id: int, username: str, *, admin: bool, password: str) -> None:
    from fonds.auth.passwords import hash_password

    doc = {
        "jsonmodel_type": "user",
        "username": username,
        "name": username,
        "is_admin": admin,
        "is_active_user": True,
        "uri": f"/users/{user_id}",
        "lock_version": 0,
    }
    if username == "admin":
        doc["is_system_user"] = True
    conn.execute(
        text(
            'INSERT INTO "user" (id, lock_version, json, create_time, system_mtime, user_mtime, username, password_hash, is_admin, is_active) '
            "VALUES (:id, 0, :json, :now, :now, :now, :username, :hash, :admin, :active)"
        ),
        {
            "id": user_id,
            "json": orjson.dumps(doc),
            "now": datetime.datetime(2026, 1, 1),
            "username": username,
            "hash": hash_password(password),
            "admin": admin,
            "active": True,
        },
    )


def test_an_upgrade_from_0001_keeps_administrators_as_administrators(settings):
    from alembic import command

    from fonds.app import create_app
    from tests.auth.test_sessions import login

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.effective_database_url, database_metadata())
    config = migrate.alembic_config()
    with db.engine.connect() as conn, conn.begin():
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        _legacy_user(conn, 1, "admin", admin=True, password="legacy-admin-pw")
        _legacy_user(conn, 2, "curator", admin=True, password="legacy-curator-pw")
        _legacy_user(conn, 3, "clerk", admin=False, password="legacy-clerk-pw")
    db.dispose()
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        for username, password, admin in (
            ("admin", "legacy-admin-pw", True),
            ("curator", "legacy-curator-pw", True),
            ("clerk", "legacy-clerk-pw", False),
        ):
            response = login(client, username, password)
            assert response.status_code == 200, response.text
            assert response.text.count('"is_admin"') == 1  # stored legacy flag gone, computed one spliced in
            user = response.json()["user"]
            assert user["is_admin"] is admin
            assert ("administer_system" in user["permissions"]["_archivesspace"]) is admin
        assert login(client, "admin", "legacy-admin-pw").json()["user"]["is_system_user"] is True
        token = login(client, "admin", "legacy-admin-pw").json()["session"]
        assert client.delete("/users/1", headers={"X-ArchivesSpace-Session": token}).status_code == 409


# -- value lists (revision 0003_enumerations) --------------------------------------------------


def test_the_lists_are_seeded_with_archivesspace_ids(app):
    from fonds.records.value_lists import load_seed

    db = app.state.fonds.db
    lists, values = db.tables["enumeration"], db.tables["enumeration_value"]
    seed = load_seed()
    with db.engine.connect() as conn:
        ids = dict(conn.execute(select(lists.c.name, lists.c.id)).all())
        count = conn.execute(select(func.count()).select_from(values)).scalar_one()
    assert ids == {name: entry["id"] for name, entry in seed.items()}
    assert count == sum(len(entry["values"]) for entry in seed.values())


def _group_row(conn, group_id: int, repo_id: int, code: str, grants: list[str]) -> None:
    doc = {"jsonmodel_type": "group", "group_code": code, "description": code, "grants_permissions": grants}
    conn.execute(
        text(
            'INSERT INTO "group" (id, repo_id, lock_version, json, create_time, system_mtime, user_mtime, group_code_key) '
            "VALUES (:id, :repo, 0, :json, :now, :now, :now, :code)"
        ),
        {"id": group_id, "repo": repo_id, "json": orjson.dumps(doc), "now": datetime.datetime(2026, 1, 1), "code": code},
    )
    for code_ in grants:
        conn.execute(text("INSERT INTO group_permission (group_id, permission) VALUES (:g, :p)"), {"g": group_id, "p": code_})


def test_an_upgrade_from_0002_lets_administrators_and_archivists_edit_the_lists(settings):
    from alembic import command

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.effective_database_url, database_metadata())
    config = migrate.alembic_config()
    with db.engine.connect() as conn, conn.begin():
        config.attributes["connection"] = conn
        command.upgrade(config, "0002")
        _group_row(conn, 1, 1, "administrators", ["administer_system", "manage_repository"])
        _group_row(conn, 2, 2, "repository-archivists", ["view_repository"])
        _group_row(conn, 3, 2, "repository-viewers", ["view_repository"])
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    try:
        with db.engine.connect() as conn:
            grants = {(g, p) for g, p in conn.execute(text("SELECT group_id, permission FROM group_permission"))}
            docs = {row.id: orjson.loads(row.json) for row in conn.execute(text('SELECT id, json FROM "group"'))}
    finally:
        db.dispose()
    assert {(1, "update_enumeration_record"), (1, "manage_enumeration_record"), (2, "manage_enumeration_record")} <= grants
    assert not any(g == 3 and "enumeration" in p for g, p in grants)
    assert "update_enumeration_record" in docs[1]["grants_permissions"]
    assert docs[2]["grants_permissions"] == ["view_repository", "manage_enumeration_record"]
    assert docs[3]["grants_permissions"] == ["view_repository"]


# -- schema defaults in stored records (revision 0010_schema_defaults) -----------------------------

LEGACY_ABSENT = {"publish", "suppressed", "restrictions", "restrictions_apply", "is_slug_auto", "is_finding_aid_status_published"}


def test_an_upgrade_fills_schema_defaults_into_records_stored_without_them(settings):
    """Records stored before defaults were filled on write get them from the migration, with
    their lock_version unchanged; fields computed at read time are not stored."""
    from alembic import command

    from fonds.app import create_app
    from tests.factories import Api

    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        api = Api.login(client)
        repo = api.create_repository("OLD")
        resource = api.create(f"/repositories/{repo}/resources", {"jsonmodel_type": "resource", "title": "Old papers"})["uri"]
        node = api.create(f"/repositories/{repo}/archival_objects", {"jsonmodel_type": "archival_object", "title": "Box 1"})["uri"]
        subject = api.create("/subjects", {"jsonmodel_type": "subject", "title": "Old", "source": "local"})["uri"]
        group = api.group_uri(repo, "repository-viewers")
    db = Database(settings.effective_database_url, database_metadata())
    uris = {"resource": resource, "archival_object": node, "subject": subject}
    config = migrate.alembic_config()
    try:
        with db.engine.connect() as conn, conn.begin():
            for name, uri in uris.items():
                # What the record looked like when only the client's fields and the service's were stored.
                stored = orjson.loads(conn.execute(text(f"SELECT json FROM {name} WHERE id = :id"), {"id": record_id(uri)}).scalar_one())
                legacy = {key: value for key, value in stored.items() if value != [] and key not in LEGACY_ABSENT}
                conn.execute(
                    text(f"UPDATE {name} SET json = :json, lock_version = 3 WHERE id = :id"),
                    {"json": orjson.dumps({**legacy, "lock_version": 3}), "id": record_id(uri)},
                )
            config.attributes["connection"] = conn
            command.downgrade(config, "0005_auth_generation")
    finally:
        db.dispose()
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        api = Api.login(client)
        found = {name: api.get(uri).json() for name, uri in uris.items()}
        viewers = api.get(group)
    assert {record["lock_version"] for record in found.values()} == {3}
    assert (found["resource"]["subjects"], found["resource"]["notes"], found["resource"]["instances"]) == ([], [], [])
    assert (found["resource"]["publish"], found["resource"]["suppressed"], found["resource"]["restrictions"]) == (False, False, False)
    assert found["archival_object"]["dates"] == [] and found["archival_object"]["publish"] is False
    assert "ancestors" in found["archival_object"] and found["archival_object"]["position"] is not None
    assert found["subject"]["publish"] is True and found["subject"]["external_documents"] == []
    assert viewers.status_code == 200 and viewers.text.count('"member_usernames"') == 1
