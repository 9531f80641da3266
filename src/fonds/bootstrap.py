"""First-start set-up: the hidden global repository (/repositories/1), the default vocabulary
(/vocabularies/1), the global `administrators` group and the `admin` user in it. Idempotent;
safe with several workers starting at once. It also repairs what an installation needs and
has lost (a global repository deleted, with its administrators group, by a version that
allowed it): the server starts and the system administrator can get in again."""

from __future__ import annotations

import logging
import os
import secrets
import sys
from pathlib import Path

import orjson
from sqlalchemy import select, update

from fonds.auth import groups
from fonds.auth.passwords import hash_password
from fonds.auth.permissions import ADMINISTRATORS, GLOBAL_REPO_ID, PERMISSION_CODES
from fonds.records.enumeration_import import ensure_lists
from fonds.records.enumerations import Change
from fonds.records.rewrite import rewrite_records
from fonds.records.service import Actor, RecordService
from fonds.records.types.repositories import GLOBAL_REPO_CODE
from fonds.storage import records as store
from fonds.storage.chunks import execute_in

log = logging.getLogger("fonds.bootstrap")
SYSTEM = Actor(user_id=0, username="admin")
PASSWORD_FILE = "initial-admin-password"


def _exists(conn, table, column, value) -> bool:
    return conn.execute(select(table.c.id).where(table.c[column] == value)).first() is not None


def _write_secret(path: Path, secret: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secret + "\n")


def _create(service: RecordService, conn, type_name: str, doc: dict, repo_id: int | None = None) -> int:
    return service.create_in(conn, service.registry[type_name], doc, {}, repo_id=repo_id, actor=SYSTEM)["id"]


def _administrators_group(service: RecordService, conn) -> None:
    """Create the group holding every permission; users marked admin before groups existed join it."""
    if groups.administrators_group(conn) is not None:
        return
    doc = {
        "jsonmodel_type": "group",
        "group_code": ADMINISTRATORS,
        "description": "Administrators",
        "grants_permissions": sorted(PERMISSION_CODES),
    }
    group_id = _create(service, conn, "group", doc, GLOBAL_REPO_ID)
    users = conn.info["fonds_tables"]["user"]
    legacy = [(row.id, orjson.loads(row.json)) for row in conn.execute(select(users.c.id, users.c.json))]
    if not legacy:
        return
    system = [user_id for user_id, user in legacy if user.get("is_system_user")]
    execute_in(conn, lambda chunk: update(users).where(users.c.id.in_(chunk)).values(is_system=True), system)
    # Users marked admin before groups existed; or, when the group was lost, the system administrator.
    admins = [user_id for user_id, user in legacy if user.get("is_admin")] or system
    groups.set_members(conn, group_id, admins)

    def strip_computed(user: dict) -> None:
        user.pop("is_admin", None)

    rewrite_records(
        conn,
        service.registry["user"],
        [user_id for user_id, _ in legacy],
        now=store.utcnow(),
        username=SYSTEM.username,
        edit=strip_computed,
    )


def _global_repository(service: RecordService, conn) -> None:
    """The repository at id 1, made there (or put back there) if it is missing."""
    if _exists(conn, conn.info["fonds_tables"]["repository"], "id", GLOBAL_REPO_ID):
        return
    doc = {"jsonmodel_type": "repository", "repo_code": GLOBAL_REPO_CODE, "name": "Global repository"}
    service.create_in(conn, service.registry["repository"], doc, {}, repo_id=None, actor=SYSTEM, record_id=GLOBAL_REPO_ID)


def bootstrap(service: RecordService) -> None:
    db, settings = service.db, service.settings
    tables = db.tables
    with db.write() as conn:
        if db.kind == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727275)")
        _global_repository(service, conn)
        if not _exists(conn, tables["vocabulary"], "ref_id", "global"):
            _create(service, conn, "vocabulary", {"jsonmodel_type": "vocabulary", "ref_id": "global", "name": "global"})
        _administrators_group(service, conn)
        ensure_lists(conn, service.list_usage.all_list_names(), Change(SYSTEM.username, store.utcnow()))
        if _exists(conn, tables["user"], "username", "admin"):
            return
        password = settings.admin_password or secrets.token_urlsafe(18)
        doc = {"jsonmodel_type": "user", "username": "admin", "name": "Administrator", "is_admin": True, "is_system_user": True}
        user_id = _create(service, conn, "user", doc)
        users = tables["user"]
        conn.execute(update(users).where(users.c.id == user_id).values(password_hash=hash_password(password)))
    if not settings.admin_password:
        path = settings.data_dir / PASSWORD_FILE
        _write_secret(path, password)
        print(f"Fonds: created user 'admin' with password {password} (also written to {path}, mode 0600)", file=sys.stderr)
