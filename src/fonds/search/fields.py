"""The index's field catalog for the registered record types: the fields every document has,
plus those each type's SearchSpec declares. A field named by two types must have the same kind
in both (checked here, when the catalog is built)."""

from __future__ import annotations

from fonds.records.registry import Registry
from fonds.records.search_spec import DocumentField
from fonds.search.catalog import FieldCatalog, FieldKind, SearchField

# Stored whole: the result document as the search routes return it (fields, then `json`).
STORED_DOCUMENT = "_document"

T, K, D, B = FieldKind.TEXT, FieldKind.KEYWORD, FieldKind.DATE, FieldKind.BOOLEAN
# (name, kind, weight as a default field)
CORE_FIELDS = (
    ("id", K, None),
    ("uri", K, None),
    ("title", T, 2.0),
    ("title_sort", K, None),
    ("primary_type", K, None),
    ("types", K, None),
    ("repository", K, None),
    ("publish", B, None),
    ("suppressed", B, None),
    ("system_generated", B, None),
    ("created_by", K, None),
    ("last_modified_by", K, None),
    ("create_time", D, None),
    ("system_mtime", D, None),
    ("user_mtime", D, None),
    # Every word of the record: what a bare query term searches last.
    ("fullrecord", T, 1.0),
)
# Not stored: nobody wants a snippet of the whole record (the matching fields give theirs).
UNSTORED = frozenset(("fullrecord",))


class CatalogError(ValueError):
    pass


def _field(name: str, kind: FieldKind, weight: float | None) -> SearchField:
    text = kind is FieldKind.TEXT
    # Text is stored for highlighting; keywords are fast for facets and sorting.
    return SearchField(
        name, kind, stemmed=text and weight is not None, stored=text and name not in UNSTORED, fast=kind is FieldKind.KEYWORD
    )


def _declared(registry: Registry) -> list[tuple[str, DocumentField]]:
    return [(t.name, f) for t in registry if t.search for f in t.search.fields]


def build_catalog(registry: Registry) -> FieldCatalog:
    kinds = {name: (kind, weight) for name, kind, weight in CORE_FIELDS}
    for type_name, declared in _declared(registry):
        kind = FieldKind(declared.kind)
        known = kinds.get(declared.name)
        if known is not None and known[0] is not kind:
            raise CatalogError(f"search field {declared.name!r} of {type_name} is {kind}, elsewhere {known[0]}")
        weight = max(filter(None, (declared.default_weight, known and known[1])), default=None)
        kinds[declared.name] = (kind, weight)
    fields = tuple(_field(name, kind, weight) for name, (kind, weight) in kinds.items())
    defaults = tuple((name, weight) for name, (_, weight) in kinds.items() if weight)
    return FieldCatalog(fields=fields, default_fields=defaults)


def facetable(field: SearchField) -> bool:
    return field.kind in (FieldKind.KEYWORD, FieldKind.INTEGER, FieldKind.BOOLEAN) and field.fast
