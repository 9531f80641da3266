"""Top containers and location profiles."""

from __future__ import annotations

from fonds.records.hooks import Hooks
from fonds.records.registry import Lookup, Permissions, RecordType, RequiredOneOf, Scope, UniqueKey, text_column
from fonds.records.search_spec import DocumentField, SearchSpec, copied


class TopContainerHooks(Hooks):
    def derive(self, ctx, doc):
        doc.setdefault("indicator", doc.get("title"))
        kind = (doc.get("type") or "").capitalize()
        barcode = f" [Barcode: {doc['barcode']}]" if doc.get("barcode") else ""
        label = " ".join(part for part in (kind, doc["indicator"]) if part)
        doc["display_string"] = label + barcode
        doc["long_display_string"] = label + barcode
        ctx.columns.update(barcode=doc.get("barcode"), indicator=doc["indicator"])


class LocationProfileHooks(Hooks):
    def derive(self, ctx, doc):
        doc.setdefault("name", doc.get("title"))
        dims = [doc.get(k) for k in ("depth", "height", "width")]
        if all(dims):
            units = doc.get("dimension_units", "")
            doc["display_string"] = f"{doc['name']} [{dims[0]}d, {dims[1]}h, {dims[2]}w {units}]".replace(" ]", "]")
        else:
            doc["display_string"] = doc["name"]
        ctx.columns["name"] = doc["name"]


# What each type's search documents hold (fonds.records.search_spec).
TOP_CONTAINER_SEARCH = SearchSpec(
    fields=(
        copied("indicator", "keyword", default_weight=3.0),
        copied("barcode", "keyword", default_weight=3.0),
        copied("type", "keyword"),
    ),
    title=lambda doc: doc.get("long_display_string") or doc.get("display_string"),
)

LOCATION_PROFILE_SEARCH = SearchSpec(
    fields=(
        copied("name", "keyword"),
        copied("dimension_units", "keyword"),
        *(DocumentField(f"location_profile_{d}", "keyword", lambda doc, _, d=d: doc.get(d)) for d in ("depth", "height", "width")),
    ),
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
        hooks=TopContainerHooks(),
        search=TOP_CONTAINER_SEARCH,
        lookups=(Lookup("indicator", "indicator"), Lookup("barcode", "barcode")),
    ),
    RecordType(
        name="location_profile",
        path="location_profiles",
        scope=Scope.GLOBAL,
        model_name="LocationProfile",
        permissions=Permissions(
            read="view_repository",
            create="update_location_profile_record",
            update="update_location_profile_record",
            delete="update_location_profile_record",
        ),
        minimum=(RequiredOneOf(("name", "title")),),
        columns=(text_column("name"),),
        unique_keys=(UniqueKey(("name",), "name", "Location profile name not unique"),),
        hooks=LocationProfileHooks(),
        search=LOCATION_PROFILE_SEARCH,
    ),
)
