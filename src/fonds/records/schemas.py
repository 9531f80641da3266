"""Loading the JSON Schemas (one file per record type and subrecord) and walking them.

The schemas use a small dialect on top of draft 2020-12 (see `docs/api.md`): `x-enum` names a
controlled value list, `x-ref` marks a reference (object with `ref`, or a URI string) and lists
the record types it may point at, `x-aspace-required` lists what ArchivesSpace requires beyond
Fonds' minimum, `readOnly` marks server-produced fields.
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources

import referencing
from referencing.jsonschema import DRAFT202012

ENVELOPE_PROPERTIES = {
    "uri": {"type": "string", "readOnly": True},
    "lock_version": {"type": "integer"},
    "created": {"type": "string", "readOnly": True},
    "modified": {"type": "string", "readOnly": True},
    "create_time": {"type": "string", "readOnly": True},
    "system_mtime": {"type": "string", "readOnly": True},
    "user_mtime": {"type": "string", "readOnly": True},
    "created_by": {"type": "string", "readOnly": True},
    "last_modified_by": {"type": "string", "readOnly": True},
    "repository": {
        "type": "object",
        "readOnly": True,
        "properties": {"ref": {"type": "string"}, "_resolved": {"type": "object", "readOnly": True}},
    },
}


# What ArchivesSpace injects into every schema, subrecords included (aspace-model.md §1.2), and
# the other fields its server computes: a record exported from ArchivesSpace carries them at
# every depth (`extents/0/lock_version`, `terms/0/created_by`, `sub_container/display_string`).
# Read-only, so a client's values are dropped without a warning, as ArchivesSpace drops them.
SERVICE_SET_PROPERTIES = {
    **{key: definition for key, definition in ENVELOPE_PROPERTIES.items() if key != "lock_version"},
    "lock_version": {"type": ["integer", "string"], "readOnly": True},
    "display_string": {"type": "string", "readOnly": True},
}
RESOLVED = {"type": "object", "readOnly": True}


def _mark_resolved(node) -> None:
    """Every inline ref object (`x-ref` with properties) may carry `_resolved` (what `resolve[]`
    attached to a record read before): read-only wherever a ref is."""
    if isinstance(node, dict):
        if "x-ref" in node and "properties" in node:
            node["properties"].setdefault("_resolved", RESOLVED)
        for value in node.values():
            _mark_resolved(value)
    elif isinstance(node, list):
        for value in node:
            _mark_resolved(value)


class SchemaSet:
    """Every schema by name: the top-level record types get the envelope, and every schema
    (subrecords too) the service-set fields ArchivesSpace's records carry at every depth."""

    def __init__(self, schemas: dict[str, dict], record_types: set[str]):
        # Without `$schema`: a `$ref`'d subschema declaring it would be validated with jsonschema's
        # stock draft 2020-12 class, silently skipping x-enum/x-ref in nested subrecords.
        self.schemas = {name: {k: v for k, v in copy.deepcopy(s).items() if k != "$schema"} for name, s in schemas.items()}
        # The properties of each object schema that can hold a ref, by the schema's id (`validation.find_refs`).
        self.ref_properties: dict[int, list] = {}
        schemas = self.schemas
        for name in record_types:
            props = schemas[name].setdefault("properties", {})
            for key, definition in ENVELOPE_PROPERTIES.items():
                props.setdefault(key, definition)
        for schema in schemas.values():
            if schema.get("type") == "object" and "properties" in schema:
                for key, definition in SERVICE_SET_PROPERTIES.items():
                    schema["properties"].setdefault(key, definition)
            _mark_resolved(schema)
        self.registry = referencing.Registry().with_resources(
            (name, DRAFT202012.create_resource(schema)) for name, schema in schemas.items()
        )

    def __getitem__(self, name: str) -> dict:
        return self.schemas[name]

    def deref(self, schema: dict) -> dict:
        while "$ref" in schema:
            schema = self.schemas[schema["$ref"]]
        return schema

    def branch_for(self, one_of: list[dict], jsonmodel_type) -> dict | None:
        """The branch of a polymorphic array item whose `jsonmodel_type` const matches."""
        for option in one_of:
            target = self.deref(option)
            const = target.get("properties", {}).get("jsonmodel_type", {}).get("const")
            if const == jsonmodel_type:
                return target
        return None

    def branch_names(self, one_of: list[dict]) -> list[str]:
        return [self.deref(option).get("properties", {}).get("jsonmodel_type", {}).get("const", "?") for option in one_of]


@functools.cache
def load_schema_files() -> dict[str, dict]:
    folder = resources.files("fonds.records") / "schemas"
    schemas = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".json"):
            schema = json.loads(entry.read_text())
            schemas[schema["$id"]] = schema
    return schemas
