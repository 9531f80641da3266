"""Query parameters of listings, parsed with ArchivesSpace's rules and clear 400s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Query

from fonds.api.deps import Services
from fonds.errors import BadRequest, missing_parameter
from fonds.records.service import Page


def positive_int(name: str, raw: str) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise BadRequest({name: [f"Wanted type Integer but got '{raw}'"]}) from None
    if value < 1:
        raise BadRequest({name: [f"Must be a positive integer (you provided {value})"]})
    return value


def _boolean(suppressed: Annotated[str, Query(description="true or false")]) -> bool:
    value = suppressed.strip().lower()
    if value not in ("true", "false", "1", "0"):
        raise BadRequest({"suppressed": [f"Wanted type Boolean but got '{suppressed}'"]})
    return value in ("true", "1")


# ArchivesSpace's SuppressedParam for `suppressed` (required).
SuppressedParam = Annotated[bool, Depends(_boolean)]
ResolveParam = Annotated[list[str], Query(alias="resolve[]", description="Attach `_resolved` at every ref under these keys; `a::b` nests.")]


@dataclass(frozen=True)
class Listing:
    page: Page | None = None
    id_set: list[int] | None = None
    all_ids: bool = False
    resolve: list[str] = field(default_factory=list)


def listing(
    app: Services,
    resolve: ResolveParam = [],
    page: Annotated[str | None, Query(description="Page number (1-based).")] = None,
    page_size: Annotated[str | None, Query(description="Records per page; clamped to the maximum.")] = None,
    id_set: Annotated[str | None, Query(description="Comma-separated record ids.")] = None,
    id_set_list: Annotated[list[str], Query(alias="id_set[]", description="Record ids, repeated.")] = [],
    all_ids: Annotated[str | None, Query(description="Any value: return every matching id.")] = None,
) -> Listing:
    settings = app.settings
    ids_given = id_set is not None or bool(id_set_list)
    modes = [name for name, given in (("page", page is not None), ("id_set", ids_given), ("all_ids", bool(all_ids))) if given]
    if not modes:
        raise missing_parameter("page", "id_set", "all_ids")
    # Several given (ArchivesSnake sends all_ids=True&page=1&page_size=100): ArchivesSpace's
    # precedence applies, page, then id_set, then all_ids; the others are ignored.
    if page is not None:
        size = settings.default_page_size if page_size in (None, "") else positive_int("page_size", page_size)
        return Listing(page=Page(positive_int("page", page), min(size, settings.max_page_size)), resolve=resolve)
    if ids_given:
        raw = [part for chunk in ([id_set] if id_set else []) + id_set_list for part in chunk.split(",") if part.strip()]
        ids = [positive_int("id_set", part.strip()) for part in raw]
        if len(ids) >= settings.default_page_size:
            raise BadRequest({"id_set": [f"Must contain fewer than {settings.default_page_size} ids (the default page size)"]})
        return Listing(id_set=ids, resolve=resolve)
    return Listing(all_ids=True)


ListingParams = Annotated[Listing, Depends(listing)]


def listing_from_query(app, query) -> Listing:
    """`listing` for routes served without FastAPI's dependency machinery (last value wins, as there)."""
    return listing(
        app,
        resolve=query.getlist("resolve[]"),
        page=query.get("page"),
        page_size=query.get("page_size"),
        id_set=query.get("id_set"),
        id_set_list=query.getlist("id_set[]"),
        all_ids=query.get("all_ids"),
    )
