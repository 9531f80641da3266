"""Running a search: the query, the filters a route and the caller's rights add, paging, sorting,
facets and highlights, answered in ArchivesSpace's envelope (aspace-api §9.5)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import orjson
import tantivy

from fonds.errors import BadRequest
from fonds.search.advanced import advanced_to_lucene
from fonds.search.analysis import KEYWORD, normalise
from fonds.search.catalog import FieldCatalog, FieldKind
from fonds.search.fields import STORED_DOCUMENT, UNSTORED, facetable
from fonds.search.query import parse_query
from fonds.search.sort import parse_sort

FACET_LIMIT = 100  # ArchivesSpace's solr_facet_limit
HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE = '<span class="searchterm">', "</span>"
EMPTY_FACETS = {"facet_queries": {}, "facet_fields": {}, "facet_ranges": {}, "facet_intervals": {}, "facet_heatmaps": {}}


@dataclass(frozen=True)
class SearchParams:
    """What the client asked for."""

    q: str | None = None
    aq: str | None = None
    types: tuple[str, ...] = ()
    page: int = 1
    page_size: int = 10
    sort: str | None = None
    facets: tuple[str, ...] = ()
    facet_mincount: int = 0
    filter_queries: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    root_record: str | None = None
    fields: tuple[str, ...] = ()
    highlight: bool = False
    filter: str | None = None


@dataclass(frozen=True)
class SearchScope:
    """What the route and the caller's rights allow: None means no restriction."""

    repositories: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    uris: tuple[str, ...] | None = None
    # Repositories in which the caller may not see suppressed records (None: may see them everywhere).
    hide_suppressed_in: tuple[str, ...] | None = None
    extra: dict = field(default_factory=dict)


def _term(schema, name: str, value) -> tantivy.Query:
    return tantivy.Query.term_query(schema, name, value)


def _any_of(schema, name: str, values) -> tantivy.Query:
    """Documents whose keyword field `name` holds one of `values` (folded as the index folds them)."""
    return tantivy.Query.term_set_query(schema, name, [normalise(KEYWORD, v) for v in values])


def _filter(query: tantivy.Query) -> tantivy.Query:
    return tantivy.Query.const_score_query(query, 0.0)


def _main_query(index: tantivy.Index, catalog: FieldCatalog, params: SearchParams) -> tantivy.Query:
    if params.q and params.q.strip():
        return parse_query(params.q, catalog, index.schema, param="q")
    if params.aq and params.aq.strip():
        return parse_query(advanced_to_lucene(params.aq, "aq"), catalog, index.schema, param="aq")
    return tantivy.Query.all_query()


def build_query(index: tantivy.Index, catalog: FieldCatalog, params: SearchParams, scope: SearchScope) -> tantivy.Query:
    schema = index.schema
    must = [_main_query(index, catalog, params)]
    must_not = []
    types = scope.types or params.types
    if types:
        must.append(_filter(_any_of(schema, "types", types)))
    if scope.repositories is not None:
        must.append(_filter(_any_of(schema, "repository", scope.repositories)))
    if scope.uris is not None:
        must.append(_filter(_any_of(schema, "id", scope.uris)))
    if scope.hide_suppressed_in:
        hidden = [
            (tantivy.Occur.Must, _term(schema, "suppressed", True)),
            (tantivy.Occur.Must, _any_of(schema, "repository", scope.hide_suppressed_in)),
        ]
        must_not.append(tantivy.Query.boolean_query(hidden))
    for text in params.filter_queries:
        must.append(_filter(parse_query(text, catalog, schema, param="filter_query[]")))
    if params.filter:
        must.append(_filter(parse_query(advanced_to_lucene(params.filter, "filter", literal=True), catalog, schema, param="filter")))
    if params.exclude:
        must_not.append(_any_of(schema, "id", params.exclude))
    if params.root_record:
        # The records of a tree, not its root (ArchivesSpace's `resource:<uri> OR digital_object:<uri>`).
        roots = [
            (tantivy.Occur.Should, _any_of(schema, name, [params.root_record]))
            for name in ("resource", "digital_object")
            if name in catalog
        ]
        must.append(_filter(tantivy.Query.boolean_query(roots)))
    clauses = [(tantivy.Occur.Must, q) for q in must] + [(tantivy.Occur.MustNot, q) for q in must_not]
    return must[0] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)


def _facets(searcher, query, catalog, params: SearchParams) -> dict:
    for name in params.facets:
        spec = catalog.get(name)
        if spec is None or not facetable(spec):
            raise BadRequest({"facet[]": [f"Cannot facet on '{name}': not a keyword, integer or boolean field"]})
    if not params.facets:
        return EMPTY_FACETS
    spec = {name: {"terms": {"field": name, "size": FACET_LIMIT, "min_doc_count": max(1, params.facet_mincount)}} for name in params.facets}
    buckets = searcher.aggregate(query, spec)
    facet_fields = {}
    for name in params.facets:
        flat = []
        for bucket in buckets.get(name, {}).get("buckets", []):
            flat += [bucket.get("key_as_string", bucket["key"]), bucket["doc_count"]]
        facet_fields[name] = flat
    return {**EMPTY_FACETS, "facet_fields": facet_fields}


def _highlight(searcher, query, schema, catalog, hits) -> dict:
    generators = {
        f.name: tantivy.SnippetGenerator.create(searcher, query, schema, f.name)
        for f in catalog.fields
        if f.kind is FieldKind.TEXT and f.name not in UNSTORED
    }
    found = {}
    for uri, doc in hits:
        fields = {}
        for name, generator in generators.items():
            snippet = generator.snippet_from_doc(doc)
            if snippet.highlighted():
                fields[name] = [_snippet_html(snippet)]
        found[uri] = fields
    return found


def _snippet_html(snippet) -> str:
    text, out, at = snippet.fragment(), [], 0
    for span in snippet.highlighted():
        out += [html.escape(text[at : span.start]), HIGHLIGHT_OPEN, html.escape(text[span.start : span.end]), HIGHLIGHT_CLOSE]
        at = span.end
    return "".join([*out, html.escape(text[at:])])


def _select(stored: dict, fields: tuple[str, ...]) -> dict:
    return {k: v for k, v in stored.items() if k in fields} if fields else stored


def empty_envelope(params: SearchParams) -> dict:
    start = (params.page - 1) * params.page_size
    return {
        "page_size": params.page_size,
        "first_page": 1,
        "last_page": 0,
        "this_page": params.page,
        "offset_first": start + 1,
        "offset_last": 0,
        "total_hits": 0,
        "results": [],
        "facets": EMPTY_FACETS,
    }


def run_search(index: tantivy.Index | None, catalog: FieldCatalog, params: SearchParams, scope: SearchScope) -> dict:
    """Search `index` (None: no index yet, nothing found)."""
    if index is None:
        return empty_envelope(params)
    query = build_query(index, catalog, params, scope)
    # tantivy orders by one field: the first key decides (relevance when it is `score`).
    keys = parse_sort(params.sort, catalog)
    order = (keys[0].field, keys[0].descending) if keys and keys[0].field else None
    searcher = index.searcher()
    start = (params.page - 1) * params.page_size
    facets = _facets(searcher, query, catalog, params)
    if scope.uris is not None:
        result = searcher.search(query, limit=max(1, len(scope.uris)), count=True)
    elif order is None:
        result = searcher.search(query, limit=params.page_size, offset=start, count=True)
    else:
        name, descending = order
        result = searcher.search(
            query,
            limit=params.page_size,
            offset=start,
            count=True,
            order_by_field=name,
            order=tantivy.Order.Desc if descending else tantivy.Order.Asc,
        )
    found = [(orjson.loads(doc.get_first(STORED_DOCUMENT)), doc) for doc in (searcher.doc(address) for _, address in result.hits)]
    if scope.uris is not None:
        position = {uri: n for n, uri in enumerate(scope.uris)}
        found.sort(key=lambda pair: position.get(pair[0]["id"], len(position)))
    total = result.count
    envelope = {
        "page_size": params.page_size,
        "first_page": 1,
        "last_page": -(-total // params.page_size) if total else 0,
        "this_page": params.page,
        "offset_first": start + 1,
        "offset_last": min(start + params.page_size, total),
        "total_hits": total,
        "results": [_select(stored, params.fields) for stored, _ in found],
        "facets": facets,
    }
    if params.highlight:
        envelope["highlighting"] = _highlight(searcher, query, index.schema, catalog, [(stored["id"], doc) for stored, doc in found])
    return envelope
