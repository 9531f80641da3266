"""The Lucene query language against a small known corpus (tests/search/conftest.py).

Unit-level: `parse_query` is the translator's public interface; the HTTP routes that call it
have their own tests.
"""

from __future__ import annotations

import pytest
import tantivy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fonds.errors import BadRequest
from fonds.search.query import MAX_CLAUSES, parse_query
from tests.search.query_corpus import CATALOG, CORPUS, build_corpus_index

EVERYTHING = set(CORPUS)


@pytest.fixture(scope="module")
def corpus_index() -> tantivy.Index:
    return build_corpus_index()


def hits(index: tantivy.Index, q: str | None) -> set[str]:
    searcher = index.searcher()
    result = searcher.search(parse_query(q, CATALOG, index.schema), limit=100)
    return {searcher.doc(address)["id"][0] for _, address in result.hits}


def ids(text: str) -> set[str]:
    return set(text.split())


SYNTAX_TABLE = [
    # match everything
    (None, EVERYTHING),
    ("", EVERYTHING),
    ("   ", EVERYTHING),
    ("*", EVERYTHING),
    ("*:*", EVERYTHING),
    # bare terms: default fields, case and accents folded, stems at a lower weight
    ("smith", ids("a3 a5")),
    ("SMITH", ids("a3 a5")),
    ("muller", ids("a1 a5")),
    ("Müller", ids("a1 a5")),
    ("cafe", ids("a12")),
    ("CAFÉ", ids("a12")),
    ("letter", ids("a1 a2 a5")),
    ("letters", ids("a1 a2 a5")),
    ("organise", ids("a13")),
    ("MS-001", ids("a1")),
    ("ms-001", ids("a1")),
    # field:value matches exact tokens (no stems)
    ("title:letter", ids("a2")),
    ("title:letters", set()),
    ("fulltext:letter", ids("a2")),
    ("title:organising", set()),
    ("primary_type:resource", ids("a1 a3 a6 a11 a12 a15")),
    ("primary_type:RESOURCE", ids("a1 a3 a6 a11 a12 a15")),
    ("identifier:MS-001", ids("a1")),
    ("title:(maps OR fox)", ids("a6 a7 a8 a9")),
    # boolean operators: default AND, AND tighter than OR, + and -
    ("maps county", ids("a6 a7")),
    ("maps fox", set()),
    ("maps AND county", ids("a6 a7")),
    ("maps OR fox", ids("a6 a7 a8 a9")),
    ("maps OR fox AND quick", ids("a6 a7 a8 a9")),
    ("maps OR fox AND lazy", ids("a6 a7 a8")),
    ("(maps OR fox) AND (county OR lazy)", ids("a6 a7 a8")),
    ("board minutes", ids("a15")),
    ("smith -photographs", ids("a5")),
    ("smith NOT photographs", ids("a5")),
    ("smith AND NOT photographs", ids("a5")),
    ("+smith +muller", ids("a5")),
    ("+smith muller", ids("a5")),
    ("smith OR -muller", ids("a3")),
    # Lucene's symbolic operators
    ("smith && muller", ids("a5")),
    ("maps || fox", ids("a6 a7 a8 a9")),
    ("!smith", EVERYTHING - ids("a3 a5")),
    ("smith && !photographs", ids("a5")),
    ("(maps || fox) && !colour", ids("a7 a8 a9")),
    ('"!smith"', ids("a3 a5")),
    (r"\!smith", ids("a3 a5")),
    # purely negative queries match everything except their hits
    ("-smith", EVERYTHING - ids("a3 a5")),
    ("NOT smith", EVERYTHING - ids("a3 a5")),
    ("-smith -maps", EVERYTHING - ids("a3 a5 a6 a7")),
    ("board AND (-minutes)", ids("a4")),
    # phrases and slop
    ('"quick brown fox"', ids("a8")),
    ('"quick fox"', set()),
    ('"quick fox"~1', ids("a8 a9")),
    ('"brown quick"', ids("a9")),
    ('"brown quick"~1', ids("a9")),
    ('"brown quick"~2', ids("a8 a9")),
    ('title:"brown fox"', ids("a8")),
    ('"board minutes"', ids("a15")),
    # wildcards and prefixes (keyword fields keep punctuation, text tokens never hold it)
    ("photo*", ids("a3")),
    ("title:photo*", ids("a3")),
    ("smi*", ids("a3 a5")),
    ("sm?th", ids("a3 a5 a11")),
    ("colo*r", ids("a6 a7")),
    ("col?r", ids("a7")),
    ("title:colo?r", ids("a6")),
    ("Photo*", ids("a3")),
    ("ms-0*", ids("a1 a2 a3")),
    ("identifier:MS-?0?", ids("a1 a2 a15")),
    ("MS-0?0", ids("a3")),
    ("*ography", ids("a6")),
    # fuzzy: `~` is 2 edits, `~N` N edits (at most 2), transpositions count one
    ("smith~", ids("a3 a5 a11")),
    ("smith~1", ids("a3 a5 a11")),
    ("smith~0", ids("a3 a5")),
    ("smyht~1", ids("a11")),
    ("smyht~2", ids("a3 a5 a11")),
    ("title:smyht~", ids("a3 a5 a11")),
    # regular expressions over whole tokens
    ("/smi.h/", ids("a3 a5")),
    ("title:/col.*r/", ids("a6 a7")),
    # integer ranges: inclusive, exclusive, open, and the comparison forms
    ("years:1999", ids("a4 a15")),
    ("years:[1950 TO 1972]", ids("a1 a2 a13")),
    ("years:{1950 TO 1972}", ids("a1 a13")),
    ("years:[1950 TO 1972}", ids("a1 a13")),
    ("years:{1999 TO *]", ids("a8 a9 a10 a15")),
    ("years:[* TO 1890]", ids("a6 a7 a11")),
    ("years:>=2000", ids("a8 a9 a10 a15")),
    ("years:>2000", ids("a9 a10")),
    ("years:<1890", ids("a6 a7")),
    ("years:[1972 TO 1950]", set()),
    # date values and ranges at year, month, day and instant precision
    ("create_time:2024", ids("a1 a2 a4")),
    ("create_time:2024-03", ids("a2")),
    ("create_time:2024-06-30", ids("a4")),
    ("create_time:2024-06-30T10:00:00Z", ids("a4")),
    ('create_time:"2024-06-30T12:00:00+02:00"', ids("a4")),
    ("create_time:[2024 TO *]", ids("a1 a2 a4")),
    ("create_time:{2023 TO *]", ids("a1 a2 a4")),
    ("create_time:[2020 TO 2021]", ids("a6 a7 a8 a9")),
    ("create_time:{2020 TO 2022}", ids("a6 a7")),
    ("create_time:[2023-12-31 TO 2024-01-15]", ids("a1 a3")),
    ("create_time:[2023-12-31T23:59:59Z TO 2024-01-15T09:59:59Z]", ids("a3")),
    ("create_time:<2019", ids("a12 a13 a15")),
    ("create_time:[NOW-1000YEARS TO NOW]", EVERYTHING - ids("a14")),
    ("create_time:[NOW TO *]", set()),
    ("create_time:1500", set()),
    ("create_time:[1500 TO 2018]", ids("a12 a13 a15")),
    ("create_time:[2018 TO 9999]", EVERYTHING - ids("a14 a15")),
    ("create_time:[2024-01-01T00:00:00Z/YEAR TO 2024-03-01T12:00:00Z/DAY]", ids("a1 a2")),
    ("create_time:2024-01-15T00:00:00Z+10HOURS", ids("a1")),
    # booleans and existence
    ("publish:true", ids("a1 a3 a4 a6 a7 a8 a9 a11 a12 a15")),
    ("publish:false", ids("a2 a5 a10")),
    ("-publish:*", ids("a13 a14")),
    ("years:*", EVERYTHING - ids("a5 a14")),
    ("years:[* TO *]", EVERYTHING - ids("a5 a14")),
    ("create_time:*", EVERYTHING - ids("a14")),
    ("identifier:*", ids("a1 a2 a3 a4 a10 a15")),
    ("level:*", ids("a1 a3 a5 a6 a14")),
    ("fulltext:*", EVERYTHING - ids("a14")),
    ("-identifier:*", EVERYTHING - ids("a1 a2 a3 a4 a10 a15")),
    # boosts change scores, not hits
    ("maps^2", ids("a6 a7")),
    ("title:maps^0.5", ids("a6 a7")),
    ("(maps OR fox)^3", ids("a6 a7 a8 a9")),
    # escapes
    (r"identifier:X\:1\/2", ids("a10")),
    (r"X\:1\/2", ids("a10")),
    (r"\(parentheses\)", ids("a10")),
    (r"c\+\+", ids("a10")),
    (r"ms\-00\*", set()),
]


@pytest.mark.parametrize(("q", "expected"), SYNTAX_TABLE, ids=[repr(q) for q, _ in SYNTAX_TABLE])
def test_query_syntax(corpus_index, q, expected):
    assert hits(corpus_index, q) == expected


def test_boosts_order_results(corpus_index):
    searcher = corpus_index.searcher()

    def first(q: str) -> str:
        top = searcher.search(parse_query(q, CATALOG, corpus_index.schema), limit=1).hits[0][1]
        return searcher.doc(top)["id"][0]

    assert first("title:maps^10 OR title:fox") in {"a6", "a7"}
    assert first("title:maps OR title:fox^10") in {"a8", "a9"}


def test_identifier_outranks_title_outranks_full_text(corpus_index):
    searcher = corpus_index.searcher()
    result = searcher.search(parse_query("board", CATALOG, corpus_index.schema), limit=10)
    ranked = [searcher.doc(address)["id"][0] for _, address in result.hits]
    # a15's title is "Board minutes"; a4 mentions the board only in its full text.
    assert ranked == ["a15", "a4"]


ERRORS = [
    ("nosuch:x", "unknown search field 'nosuch'"),
    ("a:b:c", "unknown search field 'a'"),
    ("title:(identifier:x)", "field 'identifier' is inside field 'title'"),
    ("*:foo", "'*' may be a field name only in '*:*'"),
    ("years:abc", "'years' is an integer field; 'abc' is not an integer"),
    ("years:[1 TO x]", "'years' is an integer field; 'x' is not an integer"),
    ("years:99999999999999999999", "'years' is an integer field; '99999999999999999999' is not an integer"),
    ("create_time:yesterday", "'create_time' is a date field; 'yesterday' is not a date"),
    ("create_time:[NOW-1FORTNIGHT TO *]", "'create_time' is a date field; 'NOW-1FORTNIGHT' is not a date"),
    ("create_time:[2024-13-01 TO *]", "'create_time' is a date field; '2024-13-01' is not a date"),
    ("publish:maybe", "'publish' is a boolean field; 'maybe' is not true or false"),
    ("title:[a TO b]", "ranges work only on integer and date fields; 'title' is a text field"),
    ("[1 TO 2]", "the range [1 TO 2] needs a field"),
    ("years:19*", "wildcards work only on text and keyword fields; 'years' is an integer field"),
    ("years:1999~", "fuzzy searches (~) work only on text and keyword fields"),
    ("a AND (b", "invalid query syntax: unexpected end of expression"),
    ('"unterminated', "invalid query syntax: unterminated quoted phrase at position 0"),
    ("title:", "invalid query syntax"),
    ("AND", "invalid query syntax: unexpected 'AND' at position 0"),
    ("a OR OR b", "invalid query syntax: unexpected 'OR' at position 5"),
    ("smith~.", "invalid query syntax: a number after '~' or '^' is malformed"),
    ("smith^.", "invalid query syntax: a number after '~' or '^' is malformed"),
    ("/[/", "regular expression /[/ is not a valid pattern"),
    ("/.*a.{30}/", "is too complex"),
    ("x*" + "?" * 60, "is too complex"),
    ("a" * 101 + "*", "is too long (at most 100 characters)"),
    (" OR ".join(["x"] * (MAX_CLAUSES + 1)), f"query has {MAX_CLAUSES + 1} clauses; at most {MAX_CLAUSES} are allowed"),
    ("(" * 150 + "a" + ")" * 150, "nested too deeply"),
    ("(" * 5000 + "a" + ")" * 5000, "nested too deeply"),
    ("-" * 3000 + "a", "nested too deeply"),
    ("a" * 64_001, "query is 64001 characters long; at most 64000 are allowed"),
    ("a^2" * 1500, "query has 1500 clauses; at most 1024 are allowed"),
    ("a^2" * 4000, "query has about 4000 clauses; at most 1024 are allowed"),
    ("a " * 1_500, "query has 1500 clauses; at most 1024 are allowed"),
    ("a " * 4_000, "query has about 4000 clauses; at most 1024 are allowed"),
    ("years:[1 TO 2]^2 " * 1600, "query has about 1600 clauses; at most 1024 are allowed"),
]


@pytest.mark.parametrize(("q", "message"), ERRORS, ids=[q[:40] for q, _ in ERRORS])
def test_bad_queries_are_400_naming_the_problem(corpus_index, q, message):
    with pytest.raises(BadRequest) as caught:
        parse_query(q, CATALOG, corpus_index.schema)
    assert caught.value.status == 400
    (reported,) = caught.value.error["q"]
    assert message in reported


def test_error_names_the_parameter_it_was_given_as(corpus_index):
    with pytest.raises(BadRequest) as caught:
        parse_query("nosuch:x", CATALOG, corpus_index.schema, param="filter_query[]")
    assert caught.value.error == {"filter_query[]": ["unknown search field 'nosuch'"]}


def test_exactly_max_clauses_is_allowed(corpus_index):
    assert hits(corpus_index, " OR ".join(["smith"] * MAX_CLAUSES)) == ids("a3 a5")
    lookups = " OR ".join(f'identifier:"MS-{n:06d}"^2' for n in range(MAX_CLAUSES - 1)) + " OR identifier:MS-001"
    assert hits(corpus_index, lookups) == ids("a1")


QUERY_ALPHABET = st.sampled_from(
    [" ", "a", "smith", "maps", "1999", "2024-01-15", "title", "years", "create_time", "publish", "*", "?", "~", "^", ":", "\\"]
    + list('"()[]{}+-!/&|<>=')
    + [" AND ", " OR ", " NOT ", " TO ", "&&", "||", "é", "\u3000"]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(QUERY_ALPHABET, max_size=12).map("".join))
def test_any_input_is_a_query_or_a_400(corpus_index, q):
    try:
        query = parse_query(q, CATALOG, corpus_index.schema)
    except BadRequest as exc:
        assert exc.status == 400 and exc.error["q"]
        return
    corpus_index.searcher().search(query, limit=5)


@pytest.mark.parametrize(
    ("q", "clauses"),
    [
        ("a b", 2),
        ('title:"a b"~2^3 AND years:[1 TO 5}', 2),
        ("a^2b^2 OR c~1", 3),
        (r"x\:y (z OR (w))", 3),
        ("[* TO 5] {a TO b}", 2),
    ],
)
def test_clause_estimate_before_parsing_matches_luqum(q, clauses):
    from fonds.search.lexical import measure

    assert measure(q).clauses == clauses
