"""Solr-style sort strings read against the catalog, and the order they give on a real index."""

from __future__ import annotations

import pytest
import tantivy

from fonds.errors import BadRequest
from fonds.search.sort import SortKey, parse_sort
from tests.search.query_corpus import CATALOG, CORPUS, build_corpus_index


@pytest.mark.parametrize(
    ("sort", "keys"),
    [
        (None, ()),
        ("", ()),
        (" , ", ()),
        ("title_sort asc", (SortKey("title_sort", False),)),
        ("title_sort desc", (SortKey("title_sort", True),)),
        ("title_sort DESC", (SortKey("title_sort", True),)),
        ("title_sort", (SortKey("title_sort", False),)),
        ("score", (SortKey(None, True),)),
        ("title_sort asc, create_time desc", (SortKey("title_sort", False), SortKey("create_time", True))),
        ("years desc,score asc", (SortKey("years", True), SortKey(None, False))),
    ],
)
def test_sort_strings(sort, keys):
    assert parse_sort(sort, CATALOG) == keys


@pytest.mark.parametrize(
    ("sort", "message"),
    [
        ("nosuch asc", "unknown sort field 'nosuch'"),
        (
            "title asc",
            "'title' cannot be sorted on (sortable fields: create_time, identifier, primary_type, publish, score, title_sort, years)",
        ),
        ("title_sort upward", "sort direction 'upward' for 'title_sort' is not 'asc' or 'desc'"),
        ("title_sort asc create_time", "'title_sort asc create_time' is not '<field> asc' or '<field> desc'"),
    ],
)
def test_bad_sorts_are_400_naming_the_problem(sort, message):
    with pytest.raises(BadRequest) as caught:
        parse_sort(sort, CATALOG)
    assert caught.value.status == 400
    assert caught.value.error == {"sort": [message]}


def test_keyword_sort_ignores_case():
    index = build_corpus_index()
    searcher = index.searcher()
    (key,) = parse_sort("title_sort asc", CATALOG)
    result = searcher.search(tantivy.Query.all_query(), limit=100, order_by_field=key.field, order=key.order)
    titles = [searcher.doc(address)["id"][0] for _, address in result.hits]
    expected = sorted(CORPUS, key=lambda doc_id: CORPUS[doc_id][1].lower())
    assert titles == expected
