"""First-start set-up: the hidden global repository (/repositories/1), the default vocabulary
(/vocabularies/1) and the `admin` user. Idempotent; safe with several workers starting at once."""

from __future__ import annotations

import logging
import os
import secrets
import sys
from pathlib import Path

from sqlalchemy import select, update

from fonds.auth.passwords import hash_password
from fonds.records.hooks import GLOBAL_REPO_CODE
from fonds.records.service import Actor, RecordService

log = logging.getLogger("fonds.bootstrap")
SYSTEM = Actor(user_id=0, username="admin", is_admin=True)
PASSWORD_FILE = "initial-admin-password"


def _exists(conn, table, column, value) -> bool:
    return conn.execute(select(table.c.id).where(table.c[column] == value)).first() is not None


def _write_secret(path: Path, secret: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secret + "\n")


def bootstrap(service: RecordService) -> None:
    db, settings, registry = service.db, service.settings, service.registry
    tables = db.tables
    with db.write() as conn:
        if db.kind == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727275)")
        if not _exists(conn, tables["repository"], "repo_code", GLOBAL_REPO_CODE):
            doc = {"jsonmodel_type": "repository", "repo_code": GLOBAL_REPO_CODE, "name": "Global repository"}
            service.create_in(conn, registry["repository"], doc, {}, repo_id=None, actor=SYSTEM)
        if not _exists(conn, tables["vocabulary"], "ref_id", "global"):
            doc = {"jsonmodel_type": "vocabulary", "ref_id": "global", "name": "global"}
            service.create_in(conn, registry["vocabulary"], doc, {}, repo_id=None, actor=SYSTEM)
        if _exists(conn, tables["user"], "username", "admin"):
            return
        password = settings.admin_password or secrets.token_urlsafe(18)
        doc = {"jsonmodel_type": "user", "username": "admin", "name": "Administrator", "is_admin": True, "is_system_user": True}
        created = service.create_in(conn, registry["user"], doc, {}, repo_id=None, actor=SYSTEM)
        users = tables["user"]
        conn.execute(update(users).where(users.c.id == created["id"]).values(password_hash=hash_password(password)))
    if not settings.admin_password:
        path = settings.data_dir / PASSWORD_FILE
        _write_secret(path, password)
        print(f"Fonds: created user 'admin' with password {password} (also written to {path}, mode 0600)", file=sys.stderr)
