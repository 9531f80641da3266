"""Top containers: the boxes that instances point at, where they are kept (`container_locations`)
and what kind of box they are (`container_profile`). Their display strings, `collection`,
`series`, `is_linked_to_published_record` and `subcontainer_barcodes` come from the records
whose instances point at them, so they are computed when read (`container_links`)."""

from __future__ import annotations

import orjson
from sqlalchemy import select

from fonds.errors import FieldErrors, Invalid
from fonds.records.hooks import Hooks
from fonds.records.registry import Lookup, Permissions, RecordType, RefRule, RequiredOneOf, Scope, UniqueKey, text_column
from fonds.records.search_spec import DocumentField, SearchSpec, copied, ref_of
from fonds.records.types import container_links

LOCATIONS = "container_locations"
PREVIOUS = "previous"


class TopContainerHooks(Hooks):
    read_fields = (
        "display_string",
        "long_display_string",
        "collection",
        "series",
        "is_linked_to_published_record",
        "subcontainer_barcodes",
    )

    def check(self, doc):
        errors: FieldErrors = {}
        for n, place in enumerate(doc.get(LOCATIONS, [])):
            if place.get("status") == PREVIOUS and not place.get("end_date"):
                errors[f"{LOCATIONS}/{n}/end_date"] = ["is required if status is previous"]
        return errors

    def derive(self, ctx, doc):
        doc.setdefault("indicator", doc.get("title"))
        for place in doc.get(LOCATIONS, []):
            place.setdefault("status", "current")  # the list's designated default
        _check_previous_locations(ctx, doc.get(LOCATIONS, []))
        ctx.columns.update(barcode=doc.get("barcode"), indicator=doc["indicator"])

    def read_extras(self, conn, rows):
        return container_links.read_extras(conn, rows)


def _check_previous_locations(ctx, places: list[dict]) -> None:
    """A container can only have left a temporary location (ArchivesSpace's top_container.rb)."""
    previous = {n: ctx.registry.parse_uri(p["ref"]).record_id for n, p in enumerate(places) if p.get("status") == PREVIOUS}
    if not previous:
        return
    table = ctx.tables["location"]
    rows = ctx.conn.execute(select(table.c.id, table.c.json).where(table.c.id.in_(set(previous.values())))).all()
    temporary = {row.id for row in rows if orjson.loads(row.json).get("temporary")}
    errors = {
        f"{LOCATIONS}/{n}/status": ["cannot be previous if Location is not temporary"]
        for n, location_id in previous.items()
        if location_id not in temporary
    }
    if errors:
        raise Invalid(errors)


def _current_locations(doc: dict) -> list[dict]:
    return [p for p in doc.get(LOCATIONS) or [] if p.get("status") == "current" and p.get("ref")]


def _each(key: str, field: str):
    return lambda doc, _: [item.get(field) for item in doc.get(key) or [] if item.get(field)]


# What the search documents hold, with ArchivesSpace's field names (indexer_common.rb) where its
# clients filter on them (the staff interface's container search, `collection_uri_u_sstr` …).
TOP_CONTAINER_SEARCH = SearchSpec(
    fields=(
        copied("indicator", "keyword", default_weight=3.0),
        copied("barcode", "keyword", default_weight=3.0),
        copied("type", "keyword"),
        copied("display_string", "text"),
        DocumentField("collection_uri_u_sstr", "keyword", _each("collection", "ref")),
        DocumentField("collection_display_string_u_sstr", "keyword", _each("collection", "display_string")),
        DocumentField("collection_identifier_stored_u_sstr", "keyword", _each("collection", "identifier")),
        DocumentField("series_uri_u_sstr", "keyword", _each("series", "ref")),
        DocumentField("series_title_u_sstr", "keyword", _each("series", "display_string")),
        DocumentField("series_identifier_stored_u_sstr", "keyword", _each("series", "identifier")),
        DocumentField("container_profile_uri_u_sstr", "keyword", lambda doc, _: ref_of(doc, "container_profile")),
        DocumentField(
            "container_profile_display_string_u_sstr",
            "keyword",
            lambda doc, linked: linked.titles([doc["container_profile"]]) if doc.get("container_profile") else [],
        ),
        DocumentField("location_uri_u_sstr", "keyword", lambda doc, _: [p["ref"] for p in _current_locations(doc)]),
        DocumentField("location_display_string_u_sstr", "keyword", lambda doc, linked: linked.titles(_current_locations(doc))),
        DocumentField("has_location_u_sbool", "boolean", lambda doc, _: bool(doc.get(LOCATIONS))),
        DocumentField("empty_u_sbool", "boolean", lambda doc, _: not doc.get("collection")),
    ),
    title=lambda doc: doc.get("long_display_string") or doc.get("display_string"),
)


TYPES = (
    RecordType(
        name="top_container",
        path="top_containers",
        scope=Scope.REPOSITORY,
        model_name="TopContainer",
        permissions=Permissions(
            read="view_repository", create="update_container_record", update="update_container_record", delete="manage_container_record"
        ),
        minimum=(RequiredOneOf(("indicator", "title")),),
        columns=(text_column("barcode"), text_column("indicator", index=True)),
        unique_keys=(UniqueKey(("repo_id", "barcode"), "barcode", "A barcode must be unique within a repository"),),
        # A location where containers are (or were) kept cannot go (Location#delete); a deleted
        # container profile is unlinked (the default).
        ref_rules=(RefRule(f"{LOCATIONS}/*", "restrict", message="Location cannot be deleted if linked"),),
        hooks=TopContainerHooks(),
        search=TOP_CONTAINER_SEARCH,
        lookups=(Lookup("indicator", "indicator"), Lookup("barcode", "barcode")),
    ),
)
