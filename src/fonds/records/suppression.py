"""Suppressing a record (ArchivesSpace's `POST …/suppressed?suppressed=true|false`): the flag is
part of the record, so the change is an update like any other (lock_version moves on, the change
is logged and the search index hides it from users who may not see suppressed records)."""

from __future__ import annotations

from fonds.errors import NotFound
from fonds.records.registry import RecordType
from fonds.records.rewrite import rewrite_records
from fonds.storage import records as store


def set_suppressed(db, record_type: RecordType, record_id: int, *, repo_id: int, value: bool, username: str) -> dict:
    with db.write() as conn:
        table = conn.info["fonds_tables"][record_type.name]
        row = store.fetch(conn, table, record_id, repo_id=repo_id, for_update=True)
        if row is None:
            raise NotFound(record_type.not_found())

        def edit(doc: dict) -> None:
            doc["suppressed"] = value

        rewrite_records(conn, record_type, [record_id], now=store.utcnow(), username=username, edit=edit, by_user=True)
    return {"status": "Suppressed", "id": record_id, "suppressed_state": value}
