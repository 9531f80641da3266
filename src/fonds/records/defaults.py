"""Schema defaults, filled as ArchivesSpace fills them on output (its `apply_schema_defaults`):
in a record and in each of its subrecords, an array property that is absent becomes `[]` and a
property with a schema `default` takes it. Scripts written against ArchivesSpace rely on it
(`for agent in record["linked_agents"]`, `if record["publish"]`).

Fonds fills them when a record is written, so the stored JSON already holds them and reads keep
serving the stored bytes unchanged. Read-only properties are the service's: those it computes are
left to the type's hooks; those with a default (`suppressed`, a subject's `publish`) and read-only
arrays (`active_restrictions`) get it on create and keep their stored value on update (a client
cannot set them). Fields a type computes at read time (`RecordType.read_fields`) are never
stored, so never filled.
"""

from __future__ import annotations

import copy
import functools

from fonds.records.schemas import SchemaSet


class Defaults:
    def __init__(self, schemas: SchemaSet):
        self.schemas = schemas
        # Worked out once: by (type name, skipped), by type name, and by object schema id.
        self.created_values: dict[tuple, list] = {}
        self.read_only: dict[str, list] = {}
        self.plans: dict[int, tuple] = {}

    def fill(self, name: str, doc: dict, *, skip=()) -> dict:
        """Fill the defaults of a client's record of type `name` (and of its subrecords) in place."""
        self._fill_object(self.schemas[name], doc, frozenset(skip))
        return doc

    def keep_service_values(self, name: str, doc: dict, existing: dict | None, *, skip=()) -> None:
        """Read-only properties with a default, and read-only arrays, that the type's hooks did not
        set: the stored value on update, the default (or `[]`) on create."""
        if existing is None:
            for key, default, fresh in self._created_values(name, skip):
                if key not in doc:
                    doc[key] = fresh() if fresh is not None else default
            return
        for key, definition in self._read_only(name):
            if key in doc or key in skip:
                continue
            if existing and key in existing:
                doc[key] = existing[key]
            elif "default" in definition:
                doc[key] = _copy(definition["default"])
            elif definition.get("type") == "array":
                doc[key] = []

    def _created_values(self, name: str, skip) -> list[tuple[str, object, object]]:
        """What a new record of type `name` gets of `keep_service_values`, worked out once per
        type and `skip`: (key, default, a function making a fresh copy of it or None)."""
        known = self.created_values
        key = (name, tuple(skip))
        if key not in known:
            values = [_fill(field, definition) for field, definition in self._read_only(name) if field not in skip]
            values = [value for value in values if value is not None]
            known[key] = values
        return known[key]

    def _read_only(self, name: str) -> list[tuple[str, dict]]:
        """The read-only properties of a record type, in schema order (worked out once)."""
        known = self.read_only
        if name not in known:
            known[name] = [(key, d) for key, d in self.schemas[name]["properties"].items() if d.get("readOnly")]
        return known[name]

    def fill_stored(self, name: str, doc: dict, *, skip=()) -> bool:
        """Fill a record stored before defaults were filled on write; True if it changed."""
        before = copy.deepcopy(doc)
        self.fill(name, doc, skip=skip)
        self.keep_service_values(name, doc, doc, skip=skip)
        return doc != before

    def fill_own(self, name: str, doc: dict, *, skip=()) -> None:
        """Fill the defaults of the record of type `name` itself, not of its subrecords (which
        the normaliser found: `Normaliser.record`'s `fills`)."""
        fill_absent(self._plan(self.schemas[name])[0], doc, skip)

    def _fill_object(self, schema: dict, doc: dict, skip: frozenset = frozenset()) -> None:
        fills, descents = self._plan(schema)
        for key, target, each in descents:
            value = doc.get(key)
            if value is None:
                continue
            if each:
                if value.__class__ is list:
                    for item in value:
                        self._descend(target, item)
            else:
                self._descend(target, value)
        fill_absent(fills, doc, skip)

    def _plan(self, schema: dict) -> tuple[list[tuple[str, object, object]], list[tuple[str, dict, bool]]]:
        """An object schema's work, worked out once: the properties filled when absent (with their
        default, or `[]`; `fresh` makes a new copy of a list or object default for each record),
        in schema order, and those whose present value may hold subrecords to fill (an array's by
        its items: `each`)."""
        plans = self.plans
        found = plans.get(id(schema))
        if found is None:
            descents = [
                self._descent(key, definition)
                for key, definition in schema.get("properties", {}).items()
                if not definition.get("readOnly") and self._may_hold_subrecords(definition)
            ]
            found = plans[id(schema)] = (object_fills(schema), descents)
        return found

    def _descent(self, key: str, definition: dict) -> tuple[str, dict, bool]:
        """(key, the definition a value is filled by, whether it is an array's items) of a property
        that may hold subrecords: arrays are walked item by item without looking up their schema."""
        resolved = self.schemas.deref(definition) if "oneOf" not in definition else definition
        if "oneOf" not in resolved and "properties" not in resolved and isinstance(resolved.get("items"), dict):
            return key, resolved["items"], True
        return key, definition, False

    def _may_hold_subrecords(self, definition: dict) -> bool:
        if "oneOf" in definition:
            return True
        definition = self.schemas.deref(definition)
        return "properties" in definition or "items" in definition

    def _descend(self, definition: dict, value) -> None:
        if definition.get("readOnly"):
            return  # `_resolved` and computed fields are not the client's record
        if "oneOf" in definition:
            branch = self.schemas.branch_for(definition["oneOf"], value.get("jsonmodel_type")) if isinstance(value, dict) else None
            if branch is not None:
                self._fill_object(branch, value)
            return
        definition = self.schemas.deref(definition)
        if isinstance(value, dict) and "properties" in definition:
            self._fill_object(definition, value)
        elif isinstance(value, list) and "items" in definition:
            for item in value:
                self._descend(definition["items"], item)


Fill = tuple[str, object, object]


def object_fills(schema: dict) -> list[Fill]:
    """What an object of `schema` is given for each property it lacks (`_fill`), in schema order."""
    fills = [_fill(key, definition) for key, definition in schema.get("properties", {}).items() if not definition.get("readOnly")]
    return [fill for fill in fills if fill is not None]


def fill_absent(fills: list[Fill], doc: dict, skip=()) -> None:
    for key, default, fresh in fills:
        if key not in doc and (not skip or key not in skip):
            # Most are arrays: a list display makes an empty one without a call.
            doc[key] = [] if fresh is list else default if fresh is None else fresh()


def _fill(key: str, definition: dict) -> tuple[str, object, object] | None:
    """(key, the value an absent property takes, a function making a fresh copy of it or None):
    its schema default, or `[]` for an array; None if it takes nothing."""
    if "default" in definition:
        default = definition["default"]
        return key, default, functools.partial(_copy, default) if isinstance(default, list | dict) else None
    if definition.get("type") == "array":
        return key, None, list
    return None


def _copy(value):
    # Defaults are mostly flags, strings and empty lists; only a list or object default needs its own copy.
    if value == []:
        return []
    return copy.deepcopy(value) if isinstance(value, (list, dict)) else value
