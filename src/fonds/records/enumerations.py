"""The editable controlled value lists (ArchivesSpace's enumerations): reading them in
ArchivesSpace's JSON shapes, creating lists, adding, removing, renaming, merging, ordering and
suppressing values. Every change is one transaction that moves the lists' generation on (so
every worker's validator reads them again) and is recorded in the change log.

ArchivesSpace's rules: values of a non-editable list cannot be added, removed or renamed;
read-only values cannot be removed or renamed; a value still used by records cannot be removed
(409, with how many) but can be merged into another (`migrate`), and a rename carries the
records along."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import update

from fonds.errors import Conflict, Invalid, NotFound
from fonds.records import enumeration_rows as rows
from fonds.records.enumeration_usage import ListUsage
from fonds.records.value_lists import bump_generation

ENUM_URI = re.compile(r"^/config/enumerations/(\d+)$")
MAX_VALUE_LENGTH = 255


@dataclass(frozen=True)
class Change:
    """Who changes the lists, and when."""

    username: str
    now: object


def clean_value(raw, field: str) -> str:
    if not isinstance(raw, str):
        raise Invalid({field: [f"Must be a string (you provided {raw!r})"]})
    value = raw.strip()
    if not value:
        raise Invalid({field: ["Must not be empty"]})
    if len(value) > MAX_VALUE_LENGTH:
        raise Invalid({field: [f"Must be {MAX_VALUE_LENGTH} characters or fewer"]})
    return value


def clean_values(raw, field: str = "values") -> list[str]:
    if raw is None:
        raise Invalid({field: ["Property is required but was missing"]})
    if not isinstance(raw, list):
        raise Invalid({field: ["Must be an array of strings"]})
    return list(dict.fromkeys(clean_value(item, f"{field}/{index}") for index, item in enumerate(raw)))


def lock_version_of(doc: dict) -> int:
    given = doc.get("lock_version")
    if given is None or given == "":
        raise Conflict("You must provide a lock_version in your request")
    if isinstance(given, bool) or not str(given).lstrip("-").isdigit():
        raise Invalid({"lock_version": [f"Must be an integer (you provided '{given}')"]})
    return int(given)


class Enumerations:
    """Reads and changes of the lists (the routes and `fonds enumerations` call these)."""

    def __init__(self, db, usage: ListUsage):
        self.db, self.usage = db, usage

    # -- reading ---------------------------------------------------------------------------

    def listing(self) -> list[dict]:
        with self.db.read() as conn:
            return rows.render_lists(conn, self.usage, rows.all_lists(conn))

    def by_id(self, enum_id: int) -> dict:
        with self.db.read() as conn:
            return rows.render_lists(conn, self.usage, [rows.list_row(conn, enum_id)])[0]

    def by_name(self, name: str) -> dict:
        with self.db.read() as conn:
            return rows.render_lists(conn, self.usage, [rows.list_named(conn, name)])[0]

    def value(self, value_id: int) -> dict:
        with self.db.read() as conn:
            return rows.render_value(rows.value_row(conn, value_id), standalone=True)

    # -- lists -----------------------------------------------------------------------------

    def create(self, doc: dict, change: Change) -> dict:
        name = clean_value(doc.get("name"), "name")
        values = clean_values(doc.get("values"))
        editable = doc.get("editable", True)
        if not isinstance(editable, bool):
            raise Invalid({"editable": ["Must be a boolean"]})
        with self.db.write() as conn:
            bump_generation(conn)
            if rows.find_list(conn, name) is not None:
                raise Invalid({"name": [f"A list named '{name}' already exists"]})
            enum_id = rows.insert_list(conn, name, editable, change, enum_id=None)
            rows.append_values(conn, enum_id, [(v, False, False) for v in values], change)
            self._set_default(conn, enum_id, doc.get("default_value"))
            rows.log(conn, enum_id, "created", change)
        return rows.write_result("Created", enum_id, 0, f"/config/enumerations/{enum_id}")

    def update(self, enum_id: int, doc: dict, change: Change) -> dict:
        """ArchivesSpace's whole-list update: `values` as wanted (values missing are removed, new
        ones appended), renames given by changed `value`s in `enumeration_values`, `default_value`."""
        given_lock = lock_version_of(doc)
        with self.db.write() as conn:
            bump_generation(conn)
            row = rows.list_row(conn, enum_id, for_update=True)
            if given_lock != row.lock_version:
                raise Conflict("The record you tried to update has been modified since you fetched it.")
            if doc.get("name") not in (None, row.name):
                raise Invalid({"name": ["A list cannot be renamed"]})
            existing = rows.values_of(conn, enum_id)
            renames = self._renames(row, existing, doc.get("enumeration_values"))
            wanted = [renames.get(v, v) for v in clean_values(doc.get("values"))]
            wanted = list(dict.fromkeys(wanted))
            shown = [v.value for v in existing if not v.suppressed]
            shown = [renames.get(v, v) for v in shown]
            added = [v for v in wanted if v not in shown and v not in {e.value for e in existing}]
            removed = [v for v in shown if v not in wanted]
            self._check_editable(row, bool(added or removed or renames))
            originals = {new: old for old, new in renames.items()}
            self._check_removable(conn, row, existing, [originals.get(v, v) for v in removed])
            for old, new in renames.items():
                self._rename(conn, row, rows.value_named(existing, old), new, change)
            current = rows.values_of(conn, enum_id)
            for value in removed:
                rows.delete_value(conn, rows.value_named(current, value), change)
            rows.append_values(conn, enum_id, [(v, False, False) for v in added], change)
            rows.renumber(conn, enum_id)
            self._set_default(conn, enum_id, doc.get("default_value"))
            lock_version = rows.touch_list(conn, row, change)
        return rows.write_result("Updated", enum_id, lock_version, f"/config/enumerations/{enum_id}")

    def _renames(self, row, existing, given) -> dict[str, str]:
        """{old value: new value} for each entry of `enumeration_values` whose id is a value of
        this list and whose `value` differs from the stored one."""
        if given is None:
            return {}
        if not isinstance(given, list):
            raise Invalid({"enumeration_values": ["Must be an array of enumeration_value objects"]})
        by_id = {v.id: v for v in existing}
        renames: dict[str, str] = {}
        for index, entry in enumerate(given):
            if not isinstance(entry, dict) or entry.get("id") not in by_id:
                continue
            new = clean_value(entry.get("value"), f"enumeration_values/{index}/value")
            old = by_id[entry["id"]].value
            if new != old:
                if new in {v.value for v in existing} or new in renames.values():
                    raise Invalid({f"enumeration_values/{index}/value": [f"'{new}' is already a value of this list"]})
                renames[old] = new
        return renames

    def _check_editable(self, row, changing: bool) -> None:
        if changing and not row.editable:
            raise Invalid({"values": [f"The list '{row.name}' is not editable: its values cannot be added, removed or renamed"]})

    def _check_removable(self, conn, row, existing, removed: list[str]) -> None:
        for value in removed:
            found = rows.value_named(existing, value)
            if found is not None and found.readonly:
                raise Invalid({"values": [f"'{value}' is read-only: it cannot be removed"]})
            used = self.usage.count(conn, row.name, value)
            if used:
                raise Conflict(
                    f"Can't delete a value that's in use: '{value}' is used by {used} record{'s' if used != 1 else ''}; "
                    "merge it into another value first (POST /config/enumerations/migration)",
                    value=value,
                    records=used,
                )

    def _set_default(self, conn, enum_id: int, default) -> None:
        table = conn.info["fonds_tables"]["enumeration"]
        value_id = None
        if default not in (None, ""):
            found = rows.value_named(rows.values_of(conn, enum_id), default) if isinstance(default, str) else None
            if found is None or found.suppressed:
                raise Invalid({"default_value": [f"'{default}' is not a value of this list"]})
            value_id = found.id
        conn.execute(update(table).where(table.c.id == enum_id).values(default_value_id=value_id))

    def _rename(self, conn, row, value_row, new: str, change: Change) -> int:
        if value_row.readonly:
            raise Invalid({"value": [f"'{value_row.value}' is read-only: it cannot be renamed"]})
        table = conn.info["fonds_tables"]["enumeration_value"]
        conn.execute(
            update(table)
            .where(table.c.id == value_row.id)
            .values(
                value=new,
                lock_version=table.c.lock_version + 1,
                system_mtime=change.now,
                user_mtime=change.now,
                last_modified_by=change.username,
            )
        )
        rows.log_value(conn, value_row.id, "updated", change)
        return self.usage.migrate(conn, row.name, value_row.value, new, now=change.now, username=change.username)

    # -- merging (ArchivesSpace's enumeration_migration) -----------------------------------

    def migrate(self, doc: dict, change: Change) -> dict:
        missing = {k: ["Property is required but was missing"] for k in ("enum_uri", "from", "to") if doc.get(k) in (None, "")}
        if missing:
            raise Invalid(missing)
        match = ENUM_URI.match(str(doc["enum_uri"]))
        if not match:
            raise Invalid({"enum_uri": [f"Must be the URI of a list, such as /config/enumerations/17 (you provided '{doc['enum_uri']}')"]})
        enum_id = int(match.group(1))
        with self.db.write() as conn:
            bump_generation(conn)
            row = rows.list_row(conn, enum_id, for_update=True)
            if not row.editable:
                raise Invalid({"enum_uri": [f"Can't migrate values of the non-editable list '{row.name}'"]})
            existing = rows.values_of(conn, enum_id)
            source, target = (rows.value_named(existing, str(doc[k])) for k in ("from", "to"))
            for key, found in (("from", source), ("to", target)):
                if found is None:
                    raise NotFound(f"Can't find a value '{doc[key]}' in enumeration {enum_id}")
            if source.readonly:
                raise Invalid({"from": ["Can't transfer from a read-only enumeration value"]})
            if source.id == target.id:
                raise Invalid({"to": ["Must differ from 'from'"]})
            self.usage.migrate(conn, row.name, source.value, target.value, now=change.now, username=change.username)
            if row.default_value_id == source.id:
                rows.set_default_id(conn, enum_id, target.id)
            rows.delete_value(conn, source, change)
            rows.renumber(conn, enum_id)
            rows.touch_list(conn, row, change)
            return rows.render_lists(conn, self.usage, [rows.list_row(conn, enum_id)])[0]

    # -- single values ---------------------------------------------------------------------

    def update_value(self, value_id: int, doc: dict, change: Change) -> dict:
        given_lock = lock_version_of(doc)
        new = clean_value(doc.get("value"), "value")
        with self.db.write() as conn:
            bump_generation(conn)
            value_row = rows.value_row(conn, value_id, for_update=True)
            if given_lock != value_row.lock_version:
                raise Conflict("The record you tried to update has been modified since you fetched it.")
            row = rows.list_row(conn, value_row.enumeration_id, for_update=True)
            if new != value_row.value:
                self._check_editable(row, True)
                if rows.value_named(rows.values_of(conn, row.id), new) is not None:
                    raise Invalid(
                        {"value": [f"'{new}' is already a value of this list; to merge, use POST /config/enumerations/migration"]}
                    )
                self._rename(conn, row, value_row, new, change)
            if "position" in doc and doc["position"] != value_row.position:
                rows.move(conn, value_row, _position(doc["position"]), change)
            if "suppressed" in doc and bool(doc["suppressed"]) != bool(value_row.suppressed):
                rows.suppress(conn, value_row, bool(doc["suppressed"]), change)
            lock_version = rows.value_row(conn, value_id).lock_version
        return rows.write_result("Updated", value_id, lock_version, f"/config/enumeration_values/{value_id}")

    def set_position(self, value_id: int, position, change: Change) -> dict:
        target = _position(position)
        with self.db.write() as conn:
            bump_generation(conn)
            value_row = rows.value_row(conn, value_id, for_update=True)
            rows.move(conn, value_row, target, change)
            lock_version = rows.value_row(conn, value_id).lock_version
        return {"status": "Updated", "id": value_id, "lock_version": lock_version, "stale": None}

    def set_suppressed(self, value_id: int, suppressed: bool, change: Change) -> dict:
        with self.db.write() as conn:
            bump_generation(conn)
            value_row = rows.value_row(conn, value_id, for_update=True)
            if bool(value_row.suppressed) != suppressed:
                rows.suppress(conn, value_row, suppressed, change)
        return {"status": "Suppressed", "id": value_id, "suppressed_state": suppressed}


def _position(raw) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int | str) or not str(raw).isdigit():
        raise Invalid({"position": [f"Must be a non-negative integer (you provided '{raw}')"]})
    return int(raw)
