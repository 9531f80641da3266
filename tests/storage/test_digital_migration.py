"""Migration 0007_digital_objects: the digital object tables, and update_digital_object_record for the
groups of repositories made before it (new repositories' groups get it when they are made)."""

from __future__ import annotations

import datetime

import orjson
from sqlalchemy import text

from fonds.model import database_metadata
from fonds.storage import migrate
from fonds.storage.db import Database


def _group(conn, group_id: int, repo_id: int, code: str, grants: list[str]) -> None:
    doc = {"jsonmodel_type": "group", "group_code": code, "description": code, "grants_permissions": grants}
    conn.execute(
        text(
            'INSERT INTO "group" (id, repo_id, lock_version, json, create_time, system_mtime, user_mtime, group_code_key) '
            "VALUES (:id, :repo, 0, :json, :now, :now, :now, :code)"
        ),
        {"id": group_id, "repo": repo_id, "json": orjson.dumps(doc), "now": datetime.datetime(2026, 1, 1), "code": code},
    )
    for permission in grants:
        conn.execute(text("INSERT INTO group_permission (group_id, permission) VALUES (:g, :p)"), {"g": group_id, "p": permission})


def test_an_upgrade_gives_the_standard_groups_the_digital_object_permission(settings):
    from alembic import command

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.effective_database_url, database_metadata())
    config = migrate.alembic_config()
    with db.engine.connect() as conn, conn.begin():
        config.attributes["connection"] = conn
        command.upgrade(config, "0005_auth_generation")
        _group(conn, 1, 1, "administrators", ["administer_system"])
        _group(conn, 2, 2, "repository-archivists", ["view_repository", "update_resource_record"])
        _group(conn, 3, 2, "repository-basic-data-entry", ["view_repository"])  # narrowed by the archive: left alone
        _group(conn, 4, 2, "repository-viewers", ["view_repository"])
        _group(conn, 5, 2, "scanners", ["view_repository", "update_resource_record"])  # not a standard group
        command.upgrade(config, "head")
    try:
        with db.engine.connect() as conn:
            granted = set(
                conn.execute(text("SELECT group_id FROM group_permission WHERE permission = 'update_digital_object_record'")).scalars()
            )
            docs = {row.id: orjson.loads(row.json) for row in conn.execute(text('SELECT id, json FROM "group"'))}
    finally:
        db.dispose()
    assert granted == {1, 2}
    assert docs[2]["grants_permissions"] == ["view_repository", "update_resource_record", "update_digital_object_record"]
    assert docs[3]["grants_permissions"] == ["view_repository"]
    assert "update_digital_object_record" in docs[1]["grants_permissions"]
