"""Where containers are kept: locations, location profiles and container profiles (all global)."""

from __future__ import annotations

import re

from fonds.errors import FieldErrors
from fonds.records.hooks import Hooks
from fonds.records.registry import Permissions, RecordType, RequiredOneOf, Scope, UniqueKey, text_column
from fonds.records.search_spec import DocumentField, SearchSpec, copied, ref_of

# ArchivesSpace's check for profile dimensions (common/validations.rb): a number with at most two
# decimals, surrounding spaces allowed.
DIMENSION = re.compile(r"\s*(?=.*[0-9])\d*(?:\.\d{1,2})?\s*")
DIMENSION_MESSAGE = "must be a number with no more than 2 decimal places"
DIMENSIONS = ("depth", "width", "height")
COORDINATES = (1, 2, 3)
# ArchivesSpace reports the location rule as a coded error, not on a field (json_schema_utils.rb).
LOCATION_FIELDS_ERROR = {"coded_errors": ["location_fields_error"]}


def dimension_errors(doc: dict, *, required: bool) -> FieldErrors:
    errors: FieldErrors = {}
    for key in DIMENSIONS:
        value = doc.get(key)
        if (value is not None or required) and not (isinstance(value, str) and DIMENSION.fullmatch(value)):
            errors[key] = [DIMENSION_MESSAGE]
    return errors


def location_title(doc: dict) -> str:
    """ArchivesSpace's Location.generate_title, to the character: the bracket is there even when
    empty, and a coordinate label without its indicator still gets its colon."""
    title = doc.get("building", "")
    for key in ("floor", "room", "area"):
        if doc.get(key):
            title += f", {doc[key]}"
    others = [doc[key] for key in ("barcode", "classification") if doc.get(key)]
    others += [
        f"{doc[f'coordinate_{n}_label']}: {doc.get(f'coordinate_{n}_indicator', '')}"
        for n in COORDINATES
        if doc.get(f"coordinate_{n}_label")
    ]
    return f"{title} [{', '.join(others)}]"


def unique_functions(functions: list[dict]) -> list[dict]:
    """One function per type, the first kept (Location.uniqify_functions)."""
    seen, kept = set(), []
    for function in functions:
        kind = function.get("location_function_type")
        if kind not in seen:
            seen.add(kind)
            kept.append(function)
    return kept


class LocationHooks(Hooks):
    def check(self, doc):
        identified = (
            doc.get("barcode") or doc.get("classification") or (doc.get("coordinate_1_label") and doc.get("coordinate_1_indicator"))
        )
        return {} if identified else dict(LOCATION_FIELDS_ERROR)

    def derive(self, ctx, doc):
        if "functions" in doc:
            doc["functions"] = unique_functions(doc["functions"])
        doc["title"] = location_title(doc)


class LocationProfileHooks(Hooks):
    def check(self, doc):
        return dimension_errors(doc, required=False)

    def derive(self, ctx, doc):
        doc.setdefault("name", doc.get("title"))
        dims = [doc.get(k) for k in ("depth", "height", "width")]
        if all(dims):
            units = doc.get("dimension_units", "")
            doc["display_string"] = f"{doc['name']} [{dims[0]}d, {dims[1]}h, {dims[2]}w {units}]".replace(" ]", "]")
        else:
            doc["display_string"] = doc["name"]
        ctx.columns["name"] = doc["name"]


class ContainerProfileHooks(Hooks):
    def check(self, doc):
        errors = dimension_errors(doc, required=True)
        limit = doc.get("stacking_limit")
        if limit is not None and not re.fullmatch(r"\d+", limit):
            errors["stacking_limit"] = ["must be a positive integer"]
        return errors

    def derive(self, ctx, doc):
        # common/locales/en.yml, container_profile.title
        doc["display_string"] = (
            f"{doc['name']} [{doc['depth']}d, {doc['height']}h, {doc['width']}w {doc['dimension_units']}]"
            f" extent measured by {doc['extent_dimension']}"
        )
        ctx.columns["name"] = doc["name"]


# What each type's search documents hold (fonds.records.search_spec).
LOCATION_SEARCH = SearchSpec(
    fields=(
        copied("building", "keyword"),
        copied("floor", "keyword"),
        copied("room", "keyword"),
        copied("area", "keyword"),
        copied("barcode", "keyword", default_weight=3.0),
        copied("classification", "keyword"),
        copied("temporary", "keyword"),
        # ArchivesSpace's field names (indexer_common.rb), which its clients filter on.
        DocumentField("location_profile_uri_u_sstr", "keyword", lambda doc, _: ref_of(doc, "location_profile")),
        DocumentField("location_profile_display_string_u_sstr", "keyword", lambda doc, linked: _profile_title(doc, linked)),
        DocumentField("owner_repo_uri_u_sstr", "keyword", lambda doc, _: ref_of(doc, "owner_repo")),
    ),
    # Top containers show the titles of their locations in their documents.
    shown_in_linkers=True,
)

LOCATION_PROFILE_SEARCH = SearchSpec(
    fields=(
        copied("name", "keyword"),
        copied("dimension_units", "keyword"),
        *(DocumentField(f"location_profile_{d}", "keyword", lambda doc, _, d=d: doc.get(d)) for d in ("depth", "height", "width")),
    ),
    # Locations show their profile's name in their documents.
    shown_in_linkers=True,
)

CONTAINER_PROFILE_SEARCH = SearchSpec(
    fields=(
        copied("name", "keyword"),
        copied("dimension_units", "keyword"),
        copied("extent_dimension", "keyword"),
        *(DocumentField(f"container_profile_{d}_u_sstr", "keyword", lambda doc, _, d=d: doc.get(d)) for d in ("depth", "height", "width")),
    ),
    title=lambda doc: doc.get("display_string") or doc.get("name"),
    # Top containers show their profile's name in their documents.
    shown_in_linkers=True,
)


def _profile_title(doc: dict, linked) -> list[str]:
    profile = doc.get("location_profile")
    return linked.titles([profile]) if isinstance(profile, dict) else []


TYPES = (
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
    RecordType(
        name="location",
        path="locations",
        scope=Scope.GLOBAL,
        model_name="Location",
        permissions=Permissions(
            read="view_repository", create="update_location_record", update="update_location_record", delete="update_location_record"
        ),
        minimum=(RequiredOneOf(("building",)),),
        hooks=LocationHooks(),
        search=LOCATION_SEARCH,
    ),
    RecordType(
        name="container_profile",
        path="container_profiles",
        scope=Scope.GLOBAL,
        model_name="ContainerProfile",
        permissions=Permissions(
            read="view_repository",
            create="update_container_profile_record",
            update="update_container_profile_record",
            delete="update_container_profile_record",
        ),
        minimum=(RequiredOneOf(("name",)),),
        columns=(text_column("name"),),
        unique_keys=(UniqueKey(("name",), "name", "container profile name not unique"),),
        hooks=ContainerProfileHooks(),
        search=CONTAINER_PROFILE_SEARCH,
    ),
)
