"""Bringing lists in: the seed lists every schema needs (checked at start), one value added from
the command line, and an archive's own lists merged from ArchivesSpace's `GET
/config/enumerations` output (`fonds enumerations import`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fonds.errors import BadRequest, Invalid, NotFound
from fonds.records import enumeration_rows as rows
from fonds.records.enumerations import Change, clean_value
from fonds.records.value_lists import bump_generation, load_seed


@dataclass
class Merged:
    """What importing did to one list."""

    name: str
    created: bool = False
    added: list[str] = field(default_factory=list)
    suppressed: list[str] = field(default_factory=list)
    unsuppressed: list[str] = field(default_factory=list)
    default: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.created or self.added or self.suppressed or self.unsuppressed or self.default)


def ensure_lists(conn, needed: set[str], change: Change) -> list[str]:
    """Create the seed lists the database lacks (a list added to the seed file after the
    database was made); refuse to start when a schema names a list nobody defines."""
    seed = load_seed()
    have = {row.name for row in rows.all_lists(conn)}
    missing = sorted(needed - have - set(seed))
    if missing:
        raise RuntimeError(f"The schemas use value lists that exist nowhere: {', '.join(missing)}")
    created = []
    taken = {row.id for row in rows.all_lists(conn)}
    for name, entry in seed.items():
        if name in have:
            continue
        bump_generation(conn)
        enum_id = rows.insert_list(conn, name, entry["editable"], change, enum_id=None if entry["id"] in taken else entry["id"])
        rows.append_values(conn, enum_id, [(v, False, v in entry["readonly"]) for v in entry["values"]], change)
        if entry["default"]:
            found = rows.value_named(rows.values_of(conn, enum_id), entry["default"])
            rows.set_default_id(conn, enum_id, found.id)
        rows.log(conn, enum_id, "created", change)
        created.append(name)
    return created


def add_value(db, name: str, value: str, change: Change) -> tuple[bool, int]:
    """Add `value` at the end of list `name` (also a non-editable one: this is the operator).
    Returns (added, value id); adding a value already there changes nothing."""
    value = clean_value(value, "value")
    with db.write() as conn:
        bump_generation(conn)
        row = rows.list_named(conn, name)
        found = rows.value_named(rows.values_of(conn, row.id), value)
        if found is not None:
            return False, found.id
        [value_id] = rows.append_values(conn, row.id, [(value, False, False)], change)
        rows.touch_list(conn, row, change)
        return True, value_id


def import_lists(db, exported, change: Change) -> list[Merged]:
    """Merge ArchivesSpace's list export into ours: missing lists are created (with their id
    when it is free), missing values appended in the export's order, the export's suppressed
    flags and defaults adopted. Values only we have stay. Running it twice changes nothing."""
    entries = _entries(exported)
    with db.write() as conn:
        bump_generation(conn)
        return [_merge(conn, entry, change) for entry in entries]


def _entries(exported) -> list[dict]:
    if isinstance(exported, dict) and "name" in exported:
        exported = [exported]
    if not isinstance(exported, list):
        raise BadRequest("Expected the output of GET /config/enumerations: a JSON array of enumerations")
    entries = []
    for index, item in enumerate(exported):
        if not isinstance(item, dict):
            raise Invalid({str(index): ["Must be an enumeration object"]})
        name = clean_value(item.get("name"), f"{index}/name")
        values = item.get("enumeration_values")
        if isinstance(values, list) and values:
            ordered = sorted((v for v in values if isinstance(v, dict)), key=lambda v: v.get("position") or 0)
            found = [
                (clean_value(v.get("value"), f"{index}/enumeration_values"), bool(v.get("suppressed")), bool(v.get("readonly")))
                for v in ordered
            ]
        else:
            plain = item.get("values") or []
            if not isinstance(plain, list):
                raise Invalid({f"{index}/values": ["Must be an array of strings"]})
            found = [(clean_value(v, f"{index}/values"), False, False) for v in plain]
        uri = str(item.get("uri", ""))
        entries.append(
            {
                "name": name,
                "id": int(uri.rsplit("/", 1)[1]) if uri.rsplit("/", 1)[-1].isdigit() else None,
                "editable": item.get("editable", True) is not False,
                "values": list({v[0]: v for v in found}.values()),
                "default": item.get("default_value") or None,
            }
        )
    return entries


def _merge(conn, entry: dict, change: Change) -> Merged:
    merged = Merged(entry["name"])
    row = rows.find_list(conn, entry["name"])
    if row is None:
        taken = entry["id"] is not None and _id_taken(conn, entry["id"])
        enum_id = rows.insert_list(conn, entry["name"], entry["editable"], change, enum_id=None if taken else entry["id"])
        rows.log(conn, enum_id, "created", change)
        row = rows.list_row(conn, enum_id)
        merged.created = True
    existing = {v.value: v for v in rows.values_of(conn, row.id)}
    new = [v for v in entry["values"] if v[0] not in existing]
    rows.append_values(conn, row.id, new, change)
    merged.added = [v[0] for v in new]
    for value, suppressed, _ in entry["values"]:
        have = existing.get(value)
        if have is not None and bool(have.suppressed) != suppressed:
            rows.suppress(conn, have, suppressed, change)
            (merged.suppressed if suppressed else merged.unsuppressed).append(value)
    if entry["default"]:
        found = rows.value_named(rows.values_of(conn, row.id), entry["default"])
        if found is not None and found.id != row.default_value_id:
            rows.set_default_id(conn, row.id, found.id)
            merged.default = entry["default"]
    if merged.changed and not merged.created:
        rows.touch_list(conn, row, change)
    return merged


def _id_taken(conn, enum_id: int) -> bool:
    try:
        rows.list_row(conn, enum_id)
    except NotFound:
        return False
    return True
