"""One field's query for one query value, by the field's kind (the leaves of query.py's tree).

Each builder takes `explicit`: True when the client named the field (`title:foo`), so a value
the field cannot hold is the client's mistake (400); False when the field is one of the default
fields, where such a value simply does not apply to it (None).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import tantivy

from fonds.errors import BadRequest
from fonds.search import analysis
from fonds.search.catalog import PRESENT_FIELD, FieldCatalog, FieldKind, SearchField
from fonds.search.dates import parse_date_interval
from fonds.search.values import Wildcard, parse_boolean, parse_integer, split_word, unescape

# Wildcard and regex terms become automata over the term dictionary; tantivy refuses automata
# above 1,000 states, and a short pattern keeps the dictionary walk cheap.
MAX_PATTERN_CHARS = 100
_RUST_REGEX_META = set("\\.+*?()|[]{}^$#&-~")
_TERM_KINDS = (FieldKind.TEXT, FieldKind.KEYWORD)


class FieldTerms:
    def __init__(self, catalog: FieldCatalog, schema: tantivy.Schema, fail: Callable[[str], BadRequest]):
        self.catalog = catalog
        self.schema = schema
        self.fail = fail

    # -- words and phrases ------------------------------------------------------------------

    def word(self, f: SearchField, raw: str, *, explicit: bool) -> tantivy.Query | None:
        segments = split_word(raw)
        if any(isinstance(s, Wildcard) for s in segments):
            return self.wildcard(f, segments, explicit=explicit)
        return self.phrase(f, "".join(segments), 0, explicit=explicit)

    def phrase(self, f: SearchField, text: str, slop: int, *, explicit: bool) -> tantivy.Query | None:
        """`text` as the field holds it: a term, a phrase of its tokens, or a typed value."""
        if f.kind is FieldKind.TEXT:
            return self._tokens_query(f.name, analysis.tokens(analysis.TEXT, text), slop)
        if f.kind is FieldKind.KEYWORD:
            return self._term(f.name, analysis.normalise(analysis.KEYWORD, text))
        if f.kind is FieldKind.INTEGER:
            return self._typed(f, text, parse_integer(text), "an integer", explicit)
        if f.kind is FieldKind.BOOLEAN:
            return self._typed(f, text, parse_boolean(text), "true or false", explicit)
        interval = parse_date_interval(text)
        if interval is None:
            return self._not_applicable(f, text, "a date (YYYY, YYYY-MM, YYYY-MM-DD, ISO-8601 or NOW date math)", explicit)
        return self._date_range(f, interval[0], interval[1])

    def stemmed(self, f: SearchField, raw: str) -> tantivy.Query | None:
        """A bare word against `f`'s stemmed twin: every stem present (the twin has no positions)."""
        segments = split_word(raw)
        if any(isinstance(s, Wildcard) for s in segments):
            return None
        stems = [token for _, token in analysis.tokens(analysis.STEM, "".join(segments))]
        if not stems:
            return None
        queries = [self._term(f.stem_field, stem) for stem in dict.fromkeys(stems)]
        return queries[0] if len(queries) == 1 else tantivy.Query.boolean_query([(tantivy.Occur.Must, q) for q in queries])

    def _tokens_query(self, name: str, tokens: list[tuple[int, str]], slop: int) -> tantivy.Query:
        if not tokens:
            # Only separators (`title:"--"`): no token to look for, as in Lucene nothing matches.
            return tantivy.Query.empty_query()
        if len(tokens) == 1:
            return self._term(name, tokens[0][1])
        return tantivy.Query.phrase_query(self.schema, name, tokens, slop=slop)

    def _typed(self, f: SearchField, text: str, value: object, wanted: str, explicit: bool) -> tantivy.Query | None:
        if value is None:
            return self._not_applicable(f, text, wanted, explicit)
        return tantivy.Query.term_query(self.schema, f.name, value)

    def _term(self, name: str, token: str) -> tantivy.Query:
        return tantivy.Query.term_query(self.schema, name, token)

    # -- multi-term: wildcards, fuzzy, regex ------------------------------------------------

    def wildcard(self, f: SearchField, segments: list, *, explicit: bool) -> tantivy.Query | None:
        if all(s is Wildcard.ANY_STRING for s in segments):
            return self.exists(f) if explicit else tantivy.Query.all_query()
        if not self._takes_terms(f, "wildcards", explicit):
            return None
        parts = []
        for segment in segments:
            if isinstance(segment, Wildcard):
                parts.append(".*" if segment is Wildcard.ANY_STRING else ".")
                continue
            literal = analysis.normalise(f.analyzer, segment)
            if f.kind is FieldKind.TEXT and not literal.isalnum():
                # A text token never holds a separator, so `foo-ba*` cannot match one.
                return tantivy.Query.empty_query()
            parts.append(_regex_escape(literal))
        return self._automaton(f, "".join(parts), "wildcard " + "".join(s.value if isinstance(s, Wildcard) else s for s in segments))

    def fuzzy(self, f: SearchField, raw: str, edits: int, *, explicit: bool) -> tantivy.Query | None:
        if not self._takes_terms(f, "fuzzy searches (~)", explicit):
            return None
        text = analysis.normalise(f.analyzer, unescape(raw))
        if f.kind is FieldKind.TEXT and not text.isalnum():
            return tantivy.Query.empty_query()
        if edits == 0:
            return self._term(f.name, text)
        return tantivy.Query.fuzzy_term_query(self.schema, f.name, text, distance=edits, transposition_cost_one=True)

    def regex(self, f: SearchField, pattern: str, *, explicit: bool) -> tantivy.Query | None:
        if not self._takes_terms(f, "regular expressions", explicit):
            return None
        return self._automaton(f, pattern, f"regular expression /{pattern}/")

    def _automaton(self, f: SearchField, pattern: str, shown: str) -> tantivy.Query:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise self.fail(f"{shown} is too long (at most {MAX_PATTERN_CHARS} characters)")
        try:
            return tantivy.Query.regex_query(self.schema, f.name, pattern)
        except ValueError as exc:
            reason = "too complex" if "size limit" in str(exc) else "not a valid pattern"
            raise self.fail(f"{shown} is {reason}") from None

    def _takes_terms(self, f: SearchField, what: str, explicit: bool) -> bool:
        if f.kind in _TERM_KINDS:
            return True
        if explicit:
            raise self.fail(f"{what} work only on text and keyword fields; {_a_kind(f)}")
        return False

    # -- ranges and existence ---------------------------------------------------------------

    def range(self, f: SearchField, low: str | None, high: str | None, include_low: bool, include_high: bool) -> tantivy.Query:
        if low is None and high is None:
            return self.exists(f)
        if f.kind is FieldKind.INTEGER:
            lo, hi = (self._integer_bound(f, b) for b in (low, high))
            return self._range(f, tantivy.FieldType.Integer, lo, hi, include_low, include_high)
        if f.kind is FieldKind.DATE:
            return self._date_bounds(f, low, high, include_low, include_high)
        raise self.fail(f"ranges work only on integer and date fields; {_a_kind(f)}")

    def _integer_bound(self, f: SearchField, text: str | None) -> int | None:
        if text is None:
            return None
        value = parse_integer(text)
        if value is None:
            raise self.fail(f"{_a_kind(f)}; {text!r} is not an integer")
        return value

    def _date_bounds(self, f: SearchField, low: str | None, high: str | None, include_low: bool, include_high: bool) -> tantivy.Query:
        # A bound covers an interval: `[2020 TO 2021]` runs from the start of 2020 to the end
        # of 2021, `{2020 TO 2021}` from the end of 2020 to the start of 2021.
        lo_interval, hi_interval = (self._date_bound(f, b) for b in (low, high))
        lo = None if lo_interval is None else lo_interval[0 if include_low else 1]
        hi = None if hi_interval is None else hi_interval[1 if include_high else 0]
        return self._date_range(f, lo, hi)

    def _date_bound(self, f: SearchField, text: str | None):
        if text is None:
            return None
        interval = parse_date_interval(text)
        if interval is None:
            raise self.fail(f"{_a_kind(f)}; {text!r} is not a date (YYYY, YYYY-MM, YYYY-MM-DD, ISO-8601 or NOW date math)")
        return interval

    def _date_range(self, f: SearchField, lo: dt.datetime | None, hi: dt.datetime | None) -> tantivy.Query:
        """Instants in [lo, hi) (None: open), within the years tantivy can hold (1677-2262):
        a bound beyond them is no bound, an interval wholly outside them matches nothing."""
        if (lo is not None and lo > tantivy.MAX_DATETIME) or (hi is not None and hi <= tantivy.MIN_DATETIME):
            return tantivy.Query.empty_query()
        lo = None if lo is None or lo <= tantivy.MIN_DATETIME else lo
        hi = None if hi is None or hi > tantivy.MAX_DATETIME else hi
        if lo is None and hi is None:
            return self.exists(f)
        return self._range(f, tantivy.FieldType.Date, lo, hi, True, False)

    def _range(self, f: SearchField, kind: tantivy.FieldType, lo, hi, include_low: bool, include_high: bool) -> tantivy.Query:
        if lo is not None and hi is not None and (lo > hi or (lo == hi and not (include_low and include_high))):
            return tantivy.Query.empty_query()
        return tantivy.Query.range_query(
            self.schema, f.name, kind, lo, hi, include_lower=include_low or lo is None, include_upper=include_high or hi is None
        )

    def exists(self, f: SearchField) -> tantivy.Query:
        """`field:*` and `field:[* TO *]`: documents with any value in the field."""
        if f.fast:
            return tantivy.Query.exists_query(f.name)
        return self._term(PRESENT_FIELD, f.name)

    def _not_applicable(self, f: SearchField, text: str, wanted: str, explicit: bool) -> None:
        if explicit:
            raise self.fail(f"{_a_kind(f)}; {text!r} is not {wanted}")
        return None


def _a_kind(f: SearchField) -> str:
    article = "an" if f.kind is FieldKind.INTEGER else "a"
    return f"{f.name!r} is {article} {f.kind} field"


def _regex_escape(literal: str) -> str:
    return "".join("\\" + c if c in _RUST_REGEX_META else c for c in literal)
