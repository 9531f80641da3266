"""The field catalog: declarations it refuses, and the documents and schema it makes."""

from __future__ import annotations

import datetime as dt

import pytest
import tantivy

from fonds.search.analysis import register_analyzers
from fonds.search.catalog import FieldCatalog, FieldKind, SearchField
from fonds.search.query import parse_query

TITLE = SearchField("title", FieldKind.TEXT, stemmed=True)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: SearchField("identifier", FieldKind.KEYWORD, stemmed=True), "only text fields have a stemmed twin"),
        (lambda: SearchField("title", FieldKind.TEXT, fast=True), "must be a keyword"),
        (lambda: SearchField("bad name", FieldKind.TEXT), "invalid search field name"),
        (lambda: SearchField("title_stem", FieldKind.TEXT), "invalid search field name"),
        (lambda: FieldCatalog(fields=(TITLE, TITLE), default_fields=()), "duplicate"),
        (lambda: FieldCatalog(fields=(TITLE,), default_fields=(("nope", 1.0),)), "'nope' is not a declared field"),
        (lambda: FieldCatalog(fields=(TITLE,), default_fields=(("title", 0.0),)), "positive boost"),
    ],
)
def test_inconsistent_declarations_are_refused(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_typed_fields_are_always_fast_and_so_sortable():
    assert SearchField("years", FieldKind.INTEGER).sortable
    assert SearchField("create_time", FieldKind.DATE).sortable
    assert not SearchField("level", FieldKind.KEYWORD).sortable
    assert SearchField("title_sort", FieldKind.KEYWORD, fast=True).sortable


def _index(catalog: FieldCatalog, docs: list[dict]) -> tantivy.Index:
    builder = catalog.add_to_schema(tantivy.SchemaBuilder())
    builder.add_text_field("uri", stored=True, tokenizer_name="raw")  # a field the index adds itself
    index = tantivy.Index(builder.build())
    register_analyzers(index)
    writer = index.writer(15_000_000, 1)
    for doc in docs:
        writer.add_document(catalog.document(doc))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index


def test_documents_coerce_values_and_skip_dates_tantivy_cannot_hold():
    catalog = FieldCatalog(
        fields=(TITLE, SearchField("made", FieldKind.DATE), SearchField("count", FieldKind.INTEGER)),
        default_fields=(("title", 1.0),),
    )
    index = _index(
        catalog,
        [
            {"uri": "/a", "title": "Charter", "made": "1066-10-14", "count": "3"},
            {"uri": "/b", "title": "Letters", "made": dt.date(1999, 5, 1), "count": [1, None, 2]},
            {"uri": "/c", "title": "", "made": dt.datetime(2020, 1, 1, 12), "count": None},
        ],
    )
    searcher = index.searcher()

    def uris(q: str) -> set[str]:
        result = searcher.search(parse_query(q, catalog, index.schema), limit=10)
        return {searcher.doc(address)["uri"][0] for _, address in result.hits}

    assert uris("charter") == {"/a"}
    assert uris("made:*") == {"/b", "/c"}
    assert uris("made:1999-05") == {"/b"}
    assert uris("made:2020-01-01T12:00:00") == {"/c"}
    assert uris("made:[* TO 1700]") == set()
    assert uris("made:[1066 TO 2000]") == {"/b"}
    assert uris("count:3") == {"/a"}
    assert uris("count:[2 TO *]") == {"/a", "/b"}
    assert uris("title:*") == {"/a", "/b"}
    assert uris("letter") == {"/b"}


def test_a_date_field_value_that_is_no_date_is_refused_or_left_out():
    catalog = FieldCatalog(fields=(TITLE, SearchField("made", FieldKind.DATE)), default_fields=(("title", 1.0),))
    with pytest.raises(ValueError, match="made: 'circa 1900' is not a date"):
        catalog.document({"title": "Charter", "made": "circa 1900"})
    # A record's document: the value that is no date is left out, the others kept.
    document = catalog.document({"title": "Charter", "made": ["circa 1900", "1999-05-01"]}, skip_bad_dates=True).to_dict()
    assert document["title"] == ["Charter"]
    assert [value.date() for value in document["made"]] == [dt.date(1999, 5, 1)]
