"""Migration 0007_digital_objects: the digital object tables, and update_digital_object_record for the
groups of repositories made before it (new repositories' groups get it when they are made)."""

from __future__ import annotations

import orjson
from sqlalchemy import text

from fonds.model import database_metadata
from fonds.storage import migrate
from fonds.storage.db import Database
from tests.storage.test_migrations import _group_row


def test_an_upgrade_gives_the_standard_groups_the_digital_object_permission(settings):
    from alembic import command

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.effective_database_url, database_metadata())
    config = migrate.alembic_config()
    with db.engine.connect() as conn, conn.begin():
        config.attributes["connection"] = conn
        command.upgrade(config, "0005_auth_generation")
        _group_row(conn, 1, 1, "administrators", ["administer_system"])
        _group_row(conn, 2, 2, "repository-archivists", ["view_repository", "update_resource_record"])
        _group_row(conn, 3, 2, "repository-basic-data-entry", ["view_repository"])  # narrowed by the archive: left alone
        _group_row(conn, 4, 2, "repository-viewers", ["view_repository"])
        _group_row(conn, 5, 2, "scanners", ["view_repository", "update_resource_record"])  # not a standard group
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
