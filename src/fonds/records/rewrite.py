"""Rewriting stored records changed as a side effect of another write (a group whose members
changed, a record whose ref target was deleted): the JSON is edited, the lock_version moves on
so a client holding the old version gets 409 instead of overwriting the change, and the change
is logged."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import orjson

from fonds.storage import records as store


def rewrite_records(
    conn, record_type, ids: Iterable[int], *, now, username: str, edit: Callable[[dict], None] | None = None, columns: dict | None = None
) -> list[dict]:
    """Apply `edit` to each record's JSON (and set `columns`) and store it with the next lock_version; returns the new JSON."""
    tables = conn.info["fonds_tables"]
    table = tables[record_type.name]
    stamp = store.iso(now)
    rewritten, changes = [], []
    for row in store.fetch_many(conn, table, sorted(set(ids))):
        doc = orjson.loads(row.json)
        if edit is not None:
            edit(doc)
        lock_version = row.lock_version + 1
        doc.update(lock_version=lock_version, modified=stamp, system_mtime=stamp, last_modified_by=username)
        values = {**(columns or {}), "lock_version": lock_version, "system_mtime": now, "last_modified_by": username}
        store.store(conn, table, row.id, json=orjson.dumps(doc), values=values)
        uri = record_type.uri(row.id, row.repo_id)
        changes.append({"record_type": record_type.name, "record_id": row.id, "repo_id": row.repo_id, "uri": uri, "op": "updated", "at": now})
        rewritten.append(doc)
    store.record_changes(conn, tables, changes)
    return rewritten
