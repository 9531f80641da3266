"""Turning a client's record into the clean record a write stores: normalised, validated against
its type's schema and the type's own checks, schema defaults filled. No database: the value
lists come from whoever holds them (a `ListCache` in the server, a snapshot of it in the process
that validates large batch imports, `records/import_validation.py`)."""

from __future__ import annotations

from fonds.errors import Invalid
from fonds.records.defaults import Defaults, fill_absent
from fonds.records.registry import RecordType, Registry
from fonds.records.schemas import SchemaSet
from fonds.records.validation import RecordValidator

MISSING_WARNING = "Property was missing"
# What a new record's JSON says of its creation, after its `uri` (`writes.Batch._stamps`).
CREATION_STAMPS = ("lock_version", "created", "modified", "create_time", "system_mtime", "user_mtime", "created_by", "last_modified_by")
# What the write path gives a new record's JSON (records/writes.py), never what the client sent.
WRITTEN_FIELDS = ("uri", *CREATION_STAMPS, "repository")


class RecordPreparer:
    def __init__(self, schemas: SchemaSet, registry: Registry, value_lists, *, strict: bool):
        self.schemas, self.strict = schemas, strict
        self.validator = RecordValidator(schemas, registry, value_lists)
        self.defaults = Defaults(schemas)

    def prepare_doc(
        self,
        record_type: RecordType,
        doc: dict,
        *,
        creating: bool,
        refresh: bool = True,
        replace_refs: dict[str, str] | None = None,
        refs: list[tuple[str, str]] | None = None,
    ) -> tuple[dict, dict, object]:
        """(clean record, warnings, the lock_version it gave). `refresh=False`: the caller
        refreshed the value lists for a whole batch. `replace_refs`: {URI: the URI a ref to it is
        given instead} (a batch import's temporary URIs). `refs`: a list given the clean
        record's refs, as `validation.find_refs` finds them, found as it is normalised."""
        given = doc.get("jsonmodel_type")
        if given in (None, "") and creating:
            raise Invalid({"jsonmodel_type": ["Property is required but was missing"]})
        if given not in (None, "") and given != record_type.name:
            raise Invalid({"jsonmodel_type": [f"Must be '{record_type.name}' for this endpoint (you provided '{given}')"]})
        lock_version = doc.pop("lock_version", None)
        fills: list[tuple[list, dict]] = []  # each subrecord's defaults, filled once it is valid
        schema = self.schemas[record_type.name]
        clean, warnings = self.validator.prepare(
            record_type.name,
            doc,
            aspace_required=schema.get("x-aspace-required", ()),
            one_of_groups=record_type.minimum,
            strict=self.strict,
            refresh=refresh,
            replace_refs=replace_refs,
            refs=refs,
            fills=fills,
        )
        errors = record_type.hooks.check(clean)
        if errors:
            raise Invalid(errors, warnings)
        clean["jsonmodel_type"] = record_type.name
        for object_fills, subrecord in fills:
            fill_absent(object_fills, subrecord)
        self.defaults.fill_own(record_type.name, clean, skip=record_type.read_fields)
        return clean, warnings, lock_version

    def settle(self, record_type: RecordType, doc: dict, warnings: dict, existing_doc: dict | None = None) -> None:
        """What a record gets once its type derived it: the service values it keeps
        (`Defaults.keep_service_values`), and no warning that a field it now has was missing (a
        default vocabulary, a resource taken from the parent)."""
        self.defaults.keep_service_values(record_type.name, doc, existing_doc, skip=record_type.read_fields)
        if warnings:
            for field in [f for f, messages in warnings.items() if messages == [MISSING_WARNING] and doc.get(f)]:
                del warnings[field]

    def derived_alone(self, record_type: RecordType, doc: dict, warnings: dict) -> tuple[dict, bool] | None:
        """A new record derived and settled where its type derives it alone (`Hooks.derive_new`):
        its columns and whether it is stale; None: its type derives it in the write."""
        found = record_type.hooks.derive_new(doc)
        if found is not None:
            self.settle(record_type, doc, warnings)
        return found
