"""Rewriting stored records changed as a side effect of another write (the descendants of a
moved node, a group whose members changed, a record whose ref target was deleted): the JSON is
edited, the lock_version moves on so a client holding the old version gets 409 instead of
overwriting the change, and each change is logged. Set-based, so a subtree of 100,000 nodes
costs a few statements per batch, not a few per record."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import orjson
from sqlalchemy import bindparam, update

from fonds.storage import change_log
from fonds.storage import records as store
from fonds.storage.chunks import in_chunks


def rewrite_records(
    conn,
    record_type,
    ids: Iterable[int],
    *,
    now,
    username: str,
    edit: Callable[[dict], None] | None = None,
    columns: dict | None = None,
    by_user: bool = False,
) -> list[dict]:
    """Apply `edit` to each record's JSON (and set `columns`), store it with the next
    lock_version and log it; `by_user` also moves `user_mtime` (the user's action changed it,
    not only the system). Returns the new JSON documents."""
    tables = conn.info["fonds_tables"]
    table = tables[record_type.name]
    stamp = store.iso(now)
    stamps = {"modified": stamp, "system_mtime": stamp, "last_modified_by": username, **({"user_mtime": stamp} if by_user else {})}
    values = {**(columns or {}), "system_mtime": now, "last_modified_by": username, **({"user_mtime": now} if by_user else {})}
    statement = (
        update(table)
        .where(table.c.id == bindparam("b_id"))
        .values(json=bindparam("b_json"), lock_version=bindparam("b_lock_version"), **values)
    )
    rewritten = []
    for chunk in in_chunks(sorted(set(ids))):
        params, changes = [], []
        for row in store.fetch_many(conn, table, chunk):
            doc = orjson.loads(row.json)
            if edit is not None:
                edit(doc)
            doc.update(lock_version=row.lock_version + 1, **stamps)
            params.append({"b_id": row.id, "b_json": orjson.dumps(doc), "b_lock_version": row.lock_version + 1})
            uri = record_type.uri(row.id, row.repo_id)
            changes.append(
                {"record_type": record_type.name, "record_id": row.id, "repo_id": row.repo_id, "uri": uri, "op": "updated", "at": now}
            )
            rewritten.append(doc)
        if params:
            conn.execute(statement, params)
        change_log.append(conn, changes)
    return rewritten
