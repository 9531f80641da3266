"""Solr-style `sort` parameters (`title_sort asc, create_time desc`) read against the catalog."""

from __future__ import annotations

from dataclasses import dataclass

import tantivy

from fonds.errors import invalid_field
from fonds.search.catalog import FieldCatalog

SCORE = "score"  # Solr's name for relevance
_DIRECTIONS = {"asc": False, "desc": True}


@dataclass(frozen=True)
class SortKey:
    """One sort criterion; `field` None means relevance (`score`)."""

    field: str | None
    descending: bool

    @property
    def order(self) -> tantivy.Order:
        return tantivy.Order.Desc if self.descending else tantivy.Order.Asc


def parse_sort(sort: str | None, catalog: FieldCatalog, *, param: str = "sort") -> tuple[SortKey, ...]:
    """The sort keys in `sort`, most significant first; () (relevance) when it is empty.
    A key without a direction sorts ascending (`score` descending). Raises a 400 naming
    `param` for an unknown field, one that cannot be sorted on, or a bad direction."""
    keys = []
    for part in (sort or "").split(","):
        words = part.split()
        if not words:
            continue
        if len(words) > 2:
            raise invalid_field(param, f"{part.strip()!r} is not '<field> asc' or '<field> desc'")
        name = words[0]
        direction = words[1].lower() if len(words) == 2 else ("desc" if name == SCORE else "asc")
        if direction not in _DIRECTIONS:
            raise invalid_field(param, f"sort direction {words[1]!r} for {name!r} is not 'asc' or 'desc'")
        keys.append(SortKey(None if name == SCORE else _sortable(name, catalog, param), _DIRECTIONS[direction]))
    return tuple(keys)


def _sortable(name: str, catalog: FieldCatalog, param: str) -> str:
    spec = catalog.get(name)
    if spec is None:
        raise invalid_field(param, f"unknown sort field {name!r}")
    if not spec.sortable:
        raise invalid_field(param, f"{name!r} cannot be sorted on (sortable fields: {', '.join(_sortable_names(catalog))})")
    return name


def _sortable_names(catalog: FieldCatalog) -> list[str]:
    return sorted([SCORE] + [f.name for f in catalog.fields if f.sortable])
