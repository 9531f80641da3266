"""Unique keys (`RecordType.unique_keys`): checked before a write, so a clash is a 400 naming the
field; and the same 400 when the database refuses a value another transaction took after that
check (two PostgreSQL writers racing; SQLite's writers are serialised), never a 500."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from fonds.errors import Invalid
from fonds.records.registry import RecordType, UniqueKey
from fonds.storage import records as store


def clash(key: UniqueKey, columns: dict, other_uri: str | None) -> Invalid:
    """The 400 for a record whose `columns` hold `key`'s values that `other_uri` (None: unknown)
    already holds."""
    extra = {"conflicting_record": [other_uri]} if key.report_conflict and other_uri else {}
    return Invalid({key.field: [key.message.format(value=columns.get(key.columns[-1]))], **extra})


def refused_key(record_type: RecordType, refused: IntegrityError) -> UniqueKey | None:
    """The unique key whose constraint the database named in refusing a write, if any."""
    text = str(refused.orig)
    constraint = getattr(getattr(refused.orig, "diag", None), "constraint_name", None)
    for key in record_type.unique_keys:
        name = f"uq_{record_type.name}_{'_'.join(key.columns)}"
        columns = ", ".join(f"{record_type.name}.{column}" for column in key.columns)
        if constraint == name or f"UNIQUE constraint failed: {columns}" in text:
            return key
    return None


def error_for(conn, table, record_type: RecordType, columns: dict, record_id: int, stored=None) -> Invalid | None:
    """The 400 for the first unique key whose values another record already holds. `stored`:
    the record's row as it stands; a key whose values it holds already needs no look-up (the
    database's constraint keeps them its own)."""
    for key in record_type.unique_keys:
        if stored is not None and all(getattr(stored, c) == columns.get(c) for c in key.columns):
            continue
        other = store.find_duplicate(conn, table, {c: columns.get(c) for c in key.columns}, exclude_id=record_id)
        if other is not None:
            return clash(key, columns, record_type.uri(other))
    return None


def check(conn, record_type: RecordType, columns: dict, record_id: int, stored=None) -> None:
    error = error_for(conn, conn.info["fonds_tables"][record_type.name], record_type, columns, record_id, stored)
    if error is not None:
        raise error


def race_error(db, record_type: RecordType, columns: dict, record_id: int, refused: IntegrityError) -> Exception:
    """What to raise when the database refused the write: the pre-check's 400, looked up on a
    fresh connection (the writing transaction is aborted on PostgreSQL) where the other
    transaction's committed row is visible. Any other integrity failure is a bug, and stays one."""
    with db.engine.connect() as fresh:
        error = error_for(fresh, db.tables[record_type.name], record_type, columns, record_id)
    return error if error is not None else refused
