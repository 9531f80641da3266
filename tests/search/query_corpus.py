"""A test catalog and a small known corpus for the query-language tests."""

from __future__ import annotations

import tantivy

from fonds.search.analysis import register_analyzers
from fonds.search.catalog import FieldCatalog, FieldKind, SearchField

CATALOG = FieldCatalog(
    fields=(
        SearchField("id", FieldKind.KEYWORD, stored=True),
        SearchField("identifier", FieldKind.KEYWORD, fast=True),
        SearchField("title", FieldKind.TEXT, stemmed=True),
        SearchField("title_sort", FieldKind.KEYWORD, fast=True),
        SearchField("fulltext", FieldKind.TEXT, stemmed=True),
        SearchField("primary_type", FieldKind.KEYWORD, fast=True),
        SearchField("level", FieldKind.KEYWORD),
        SearchField("years", FieldKind.INTEGER),
        SearchField("create_time", FieldKind.DATE),
        SearchField("publish", FieldKind.BOOLEAN),
    ),
    default_fields=(("identifier", 8.0), ("title", 4.0), ("fulltext", 1.0)),
)

# id: (identifier, title, fulltext, primary_type, level, years, create_time, publish)
CORPUS = {
    "a1": (
        "MS-001",
        "Papers of Hans Müller",
        "correspondence letters diaries",
        "resource",
        "collection",
        [1950, 1960],
        "2024-01-15T10:00:00Z",
        True,
    ),
    "a2": ("MS-002", "Letter to the editor", "a single letter about archives", "archival_object", None, [1972], "2024-03-01", False),
    "a3": (
        "MS-010",
        "Smith family photographs",
        "photographs albums negatives",
        "resource",
        "fonds",
        [1901, 1920],
        "2023-12-31T23:59:59Z",
        True,
    ),
    "a4": ("ACC-2024-7", "Annual report 1999", "report of the board", "accession", None, [1999], "2024-06-30T12:00:00+02:00", True),
    "a5": (
        None,
        "Muller and Smith correspondence",
        "letters between muller and smith",
        "archival_object",
        "file",
        [],
        "2022-05-05T05:05:05Z",
        False,
    ),
    "a6": (None, "Colour maps of the county", "maps mapping cartography", "resource", "series", [1880], "2021-07-01", True),
    "a7": (None, "Color maps", "county survey", "archival_object", None, [1881], "2021-07-02", True),
    "a8": (None, "The quick brown fox", "the quick brown fox jumps over the lazy dog", "archival_object", None, [2000], "2020-01-01", True),
    "a9": (None, "Fox brown quick", "quick red fox", "archival_object", None, [2001], "2020-02-01", True),
    "a10": ("X:1/2", "C++ programming notes", "notes on c++ and (parentheses)", "digital_object", None, [2010], "2019-01-01", False),
    "a11": (None, "Smyth estate records", "estate of the smyth family", "resource", None, [1890], "2019-06-01", True),
    "a12": (None, "Café society", "cafe culture", "resource", None, [1925], "2018-01-01", True),
    "a13": (None, "Organisation records", "organising organised", "accession", None, [1970], "2018-06-01", None),
    "a14": (None, "Untitled", None, "archival_object", "item", [], None, None),
    "a15": ("MS-100", "Board minutes", "minutes of the board", "resource", None, [1999, 2000], "2017-01-01", True),
}


def _document(doc_id: str, values: tuple) -> tantivy.Document:
    identifier, title, fulltext, primary_type, level, years, create_time, publish = values
    return CATALOG.document(
        {
            "id": doc_id,
            "identifier": identifier,
            "title": title,
            "title_sort": title,
            "fulltext": fulltext,
            "primary_type": primary_type,
            "level": level,
            "years": years,
            "create_time": create_time,
            "publish": publish,
        }
    )


def build_corpus_index() -> tantivy.Index:
    """An in-memory index of CORPUS, with CATALOG's schema and Fonds' analyzers."""
    index = tantivy.Index(CATALOG.add_to_schema(tantivy.SchemaBuilder()).build())
    register_analyzers(index)
    writer = index.writer(15_000_000, 1)
    for doc_id, values in CORPUS.items():
        writer.add_document(_document(doc_id, values))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index
