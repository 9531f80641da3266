"""The rows of the value lists (`enumeration`, `enumeration_value`): reading, writing, logging,
and rendering them as ArchivesSpace's `enumeration` / `enumeration_value` JSON."""

from __future__ import annotations

from sqlalchemy import delete, func, insert, select, update

from fonds.errors import NotFound
from fonds.storage import change_log
from fonds.storage import records as store


def _tables(conn):
    tables = conn.info["fonds_tables"]
    return tables["enumeration"], tables["enumeration_value"]


# -- reading ---------------------------------------------------------------------------------


def all_lists(conn) -> list:
    lists, _ = _tables(conn)
    return conn.execute(select(lists).order_by(lists.c.id)).all()


def find_list(conn, name: str):
    lists, _ = _tables(conn)
    return conn.execute(select(lists).where(lists.c.name == name)).one_or_none()


def list_row(conn, enum_id: int, *, for_update: bool = False):
    lists, _ = _tables(conn)
    statement = select(lists).where(lists.c.id == enum_id)
    found = conn.execute(statement.with_for_update() if for_update else statement).one_or_none()
    if found is None:
        raise NotFound("Enumeration not found")
    return found


def list_named(conn, name: str):
    found = find_list(conn, name)
    if found is None:
        raise NotFound("Enumeration not found")
    return found


def value_row(conn, value_id: int, *, for_update: bool = False):
    _, values = _tables(conn)
    statement = select(values).where(values.c.id == value_id)
    found = conn.execute(statement.with_for_update() if for_update else statement).one_or_none()
    if found is None:
        raise NotFound("EnumerationValue not found")
    return found


def values_of(conn, enum_id: int) -> list:
    _, values = _tables(conn)
    return conn.execute(select(values).where(values.c.enumeration_id == enum_id).order_by(values.c.position, values.c.value)).all()


def value_named(existing: list, value: str):
    return next((row for row in existing if row.value == value), None)


# -- writing ---------------------------------------------------------------------------------


def _stamps(change, *, new: bool) -> dict:
    stamps = {"system_mtime": change.now, "user_mtime": change.now, "last_modified_by": change.username}
    if new:
        stamps.update(lock_version=0, create_time=change.now, created_by=change.username)
    return stamps


def insert_list(conn, name: str, editable: bool, change, *, enum_id: int | None) -> int:
    lists, _ = _tables(conn)
    values = {"name": name, "editable": editable, **_stamps(change, new=True)}
    if enum_id is not None:
        values["id"] = enum_id
    new_id = conn.execute(insert(lists).values(**values).returning(lists.c.id)).scalar_one()
    if enum_id is not None and conn.dialect.name == "postgresql":
        # An id given (ArchivesSpace's): move the sequence past it so later lists don't collide.
        conn.exec_driver_sql("SELECT setval(pg_get_serial_sequence('enumeration', 'id'), (SELECT max(id) FROM enumeration))")
    return new_id


def append_values(conn, enum_id: int, entries: list[tuple[str, bool, bool]], change) -> list[int]:
    """Add (value, suppressed, readonly) entries after the list's last position."""
    _, values = _tables(conn)
    last = conn.execute(select(func.max(values.c.position)).where(values.c.enumeration_id == enum_id)).scalar_one()
    start = -1 if last is None else last
    ids = []
    for offset, (value, suppressed, readonly) in enumerate(entries, start=1):
        row = {"enumeration_id": enum_id, "value": value, "position": start + offset, "suppressed": suppressed, "readonly": readonly}
        value_id = conn.execute(insert(values).values(**row, **_stamps(change, new=True)).returning(values.c.id)).scalar_one()
        log_value(conn, value_id, "created", change)
        ids.append(value_id)
    return ids


def delete_value(conn, row, change) -> None:
    lists, values = _tables(conn)
    conn.execute(update(lists).where(lists.c.default_value_id == row.id).values(default_value_id=None))
    conn.execute(delete(values).where(values.c.id == row.id))
    log_value(conn, row.id, "deleted", change)


def renumber(conn, enum_id: int) -> None:
    """Positions 0, 1, 2 … in the current order (ArchivesSpace renumbers after every change)."""
    _, values = _tables(conn)
    for position, row in enumerate(values_of(conn, enum_id)):
        if row.position != position:
            conn.execute(update(values).where(values.c.id == row.id).values(position=position))


def move(conn, row, target: int, change) -> None:
    """Move a value to 0-based `target` (past the end: last); the others keep their order."""
    _, values = _tables(conn)
    ordered = [other.id for other in values_of(conn, row.enumeration_id) if other.id != row.id]
    ordered.insert(min(target, len(ordered)), row.id)
    for position, value_id in enumerate(ordered):
        conn.execute(update(values).where(values.c.id == value_id, values.c.position != position).values(position=position))
    conn.execute(update(values).where(values.c.id == row.id).values(lock_version=values.c.lock_version + 1, **_stamps(change, new=False)))
    log_value(conn, row.id, "updated", change)


def suppress(conn, row, suppressed: bool, change) -> None:
    _, values = _tables(conn)
    conn.execute(
        update(values)
        .where(values.c.id == row.id)
        .values(suppressed=suppressed, lock_version=values.c.lock_version + 1, **_stamps(change, new=False))
    )
    log_value(conn, row.id, "updated", change)


def set_default_id(conn, enum_id: int, value_id: int | None) -> None:
    lists, _ = _tables(conn)
    conn.execute(update(lists).where(lists.c.id == enum_id).values(default_value_id=value_id))


def touch_list(conn, row, change) -> int:
    """The list changed: its lock_version moves on and the change is logged. Returns the new lock_version."""
    lists, _ = _tables(conn)
    conn.execute(update(lists).where(lists.c.id == row.id).values(lock_version=row.lock_version + 1, **_stamps(change, new=False)))
    log(conn, row.id, "updated", change)
    return row.lock_version + 1


def log(conn, enum_id: int, op: str, change) -> None:
    _log(conn, "enumeration", enum_id, f"/config/enumerations/{enum_id}", op, change)


def log_value(conn, value_id: int, op: str, change) -> None:
    _log(conn, "enumeration_value", value_id, f"/config/enumeration_values/{value_id}", op, change)


def _log(conn, record_type: str, record_id: int, uri: str, op: str, change) -> None:
    entry = {"record_type": record_type, "record_id": record_id, "repo_id": None, "uri": uri, "op": op, "at": change.now}
    change_log.append(conn, [entry])


def write_result(status: str, record_id: int, lock_version: int, uri: str) -> dict:
    return {"status": status, "id": record_id, "lock_version": lock_version, "stale": None, "uri": uri, "warnings": []}


# -- ArchivesSpace's JSON --------------------------------------------------------------------


def _audit(row) -> dict:
    audit = {
        "lock_version": row.lock_version,
        "create_time": store.iso(row.create_time),
        "system_mtime": store.iso(row.system_mtime),
        "user_mtime": store.iso(row.user_mtime),
    }
    for key in ("created_by", "last_modified_by"):
        if row._mapping[key]:
            audit[key] = row._mapping[key]
    return audit


def render_value(row, *, standalone: bool = False) -> dict:
    """An `enumeration_value`. Inside a list ArchivesSpace also gives its row's `id`,
    `enumeration_id` and `readonly` (as 0/1); alone, only the schema's properties."""
    doc = {"value": row.value, "position": row.position, "suppressed": bool(row.suppressed), **_audit(row)}
    if not standalone:
        doc = {"id": row.id, "enumeration_id": row.enumeration_id, "readonly": 1 if row.readonly else 0, **doc, "json_schema_version": 1}
    return {**doc, "jsonmodel_type": "enumeration_value", "uri": f"/config/enumeration_values/{row.id}"}


def render_lists(conn, usage, lists: list) -> list[dict]:
    _, values = _tables(conn)
    by_list: dict[int, list] = {row.id: [] for row in lists}
    statement = select(values).order_by(values.c.enumeration_id, values.c.position, values.c.value)
    if len(lists) == 1:
        statement = statement.where(values.c.enumeration_id == lists[0].id)
    for value in conn.execute(statement):
        if value.enumeration_id in by_list:
            by_list[value.enumeration_id].append(value)
    return [_render_list(row, by_list[row.id], usage.relationships(row.name)) for row in lists]


def _render_list(row, value_rows: list, relationships: list[str]) -> dict:
    doc = {"name": row.name}
    default = next((v.value for v in value_rows if v.id == row.default_value_id), None)
    if default is not None:
        doc["default_value"] = default
    shown = [v for v in value_rows if not v.suppressed]
    return {
        **doc,
        "editable": bool(row.editable),
        **_audit(row),
        "jsonmodel_type": "enumeration",
        "relationships": relationships,
        "enumeration_values": [render_value(v) for v in value_rows],
        "uri": f"/config/enumerations/{row.id}",
        "values": [v.value for v in shown],
        "readonly_values": [v.value for v in shown if v.readonly],
    }
