"""The field catalog: every field of the index, with its kind, once for all record types.

The fields every document has are declared here; the rest come from the types' `SearchSpec`s.
A field named by two types must have the same kind in both (checked when the catalog is built)."""

from __future__ import annotations

from dataclasses import dataclass

from fonds.records.registry import Registry
from fonds.records.search_spec import FieldKind

# Stored whole: the result document as the search routes return it (fields, then `json`).
STORED_DOCUMENT = "_document"


@dataclass(frozen=True)
class FieldInfo:
    name: str
    kind: FieldKind
    # Searched by a query term without a field name, with this weight.
    default_weight: float | None = None

    @property
    def sortable(self) -> bool:
        return self.kind != "text"

    @property
    def facetable(self) -> bool:
        return self.kind in ("keyword", "integer", "boolean")


CORE_FIELDS = (
    FieldInfo("id", "keyword"),
    FieldInfo("uri", "keyword"),
    FieldInfo("title", "text", default_weight=2.0),
    FieldInfo("title_sort", "keyword"),
    FieldInfo("primary_type", "keyword"),
    FieldInfo("types", "keyword"),
    FieldInfo("repository", "keyword"),
    FieldInfo("publish", "boolean"),
    FieldInfo("suppressed", "boolean"),
    FieldInfo("system_generated", "boolean"),
    FieldInfo("created_by", "keyword"),
    FieldInfo("last_modified_by", "keyword"),
    FieldInfo("create_time", "date"),
    FieldInfo("system_mtime", "date"),
    FieldInfo("user_mtime", "date"),
    # Every word of the record: what a query without a field name searches last.
    FieldInfo("fullrecord", "text", default_weight=1.0),
)


class CatalogError(ValueError):
    pass


def build_catalog(registry: Registry) -> dict[str, FieldInfo]:
    catalog = {info.name: info for info in CORE_FIELDS}
    for record_type in registry:
        for field in record_type.search.fields if record_type.search else ():
            info = FieldInfo(field.name, field.kind, field.default_weight)
            known = catalog.get(field.name)
            if known is not None and known.kind != info.kind:
                raise CatalogError(f"search field {field.name!r} of {record_type.name} is {info.kind}, elsewhere {known.kind}")
            if known is None or (info.default_weight or 0) > (known.default_weight or 0):
                catalog[field.name] = info
    return catalog
