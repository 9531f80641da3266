"""Lucene standard query syntax, parsed with luqum and translated to tantivy queries.

`parse_query(q, catalog, schema)` is the whole interface. Semantics (decisions.md, "Search"):
default operator AND; AND binds tighter than OR and luqum's tree is taken as it stands; a
purely negative clause list matches everything except its hits; bare terms search the
catalog's default fields (and their stemmed twins, lower), while `field:value` and phrases match
exact tokens; no `q` matches everything. Every client mistake raises a 400 naming the problem.
"""

from __future__ import annotations

from collections.abc import Callable

import tantivy
from luqum import tree
from luqum.exceptions import ParseError
from luqum.parser import parser

from fonds.errors import BadRequest, invalid_field
from fonds.search.catalog import FieldCatalog, SearchField
from fonds.search.lexical import measure, spell_out_operators
from fonds.search.terms import FieldTerms
from fonds.search.values import unescape

MAX_CLAUSES = 1024  # Solr's maxBooleanClauses
MAX_QUERY_CHARS = 64_000  # room for 1,024 `identifier:"…" OR` lookups
MAX_DEPTH = 100  # nesting of groups and operators

# Builds one field's query for a value; None when the value cannot apply to a default field of
# that kind (a word that is no date), which then drops out of the disjunction.
_Build = Callable[[SearchField], tantivy.Query | None]


def parse_query(q: str | None, catalog: FieldCatalog, schema: tantivy.Schema, *, param: str = "q") -> tantivy.Query:
    """The tantivy query for the Lucene query `q` over the fields of `catalog` (declared on
    `schema`). Empty or missing `q` matches every document. Raises `BadRequest` (400) naming
    `param` on bad syntax, an unknown field, a value of the wrong type or too many clauses."""
    if q is None or not q.strip():
        return tantivy.Query.all_query()
    fail = _failer(param)
    _check_size(q, fail)
    try:
        parsed = parser.parse(spell_out_operators(q))
    except ParseError as exc:
        raise fail(f"invalid query syntax: {_luqum_message(exc)}") from None
    except ArithmeticError:
        # luqum reads the number after `~` or `^` as a Decimal and lets a malformed one escape.
        raise fail("invalid query syntax: a number after '~' or '^' is malformed") from None
    except RecursionError:
        raise fail(f"query is nested too deeply (at most {MAX_DEPTH} levels)") from None
    clauses = _count_clauses(parsed)
    if clauses > MAX_CLAUSES:
        raise fail(f"query has {clauses} clauses; at most {MAX_CLAUSES} are allowed")
    return _Translator(FieldTerms(catalog, schema, fail), catalog, fail).node(parsed, None, 0)


def _check_size(q: str, fail: Callable[[str], BadRequest]) -> None:
    """Refuse what would take luqum (pure Python, holding the GIL) long to parse, before it
    starts: its time grows faster than the length of the query."""
    if len(q) > MAX_QUERY_CHARS:
        raise fail(f"query is {len(q)} characters long; at most {MAX_QUERY_CHARS} are allowed")
    shape = measure(q)
    # With some slack for the estimate: luqum parses 1,500 clauses in a quarter of a second or
    # so, 10,000 in several. The exact count follows the parse.
    if shape.clauses > MAX_CLAUSES * 3 // 2:
        raise fail(f"query has about {shape.clauses} clauses; at most {MAX_CLAUSES} are allowed")
    if shape.depth > MAX_DEPTH:
        raise fail(f"query is nested too deeply (at most {MAX_DEPTH} levels)")


def _failer(param: str) -> Callable[[str], BadRequest]:
    return lambda message: invalid_field(param, message)


def _luqum_message(exc: ParseError) -> str:
    message = str(exc).replace("Syntax error in input : ", "").replace("  ", " ").rstrip("!")
    if message.startswith("Illegal character '\""):
        return "unterminated quoted phrase" + message[message.rfind(" at position") :]
    return message


def _count_clauses(node: tree.Item) -> int:
    count, stack = 0, [node]
    while stack:
        item = stack.pop()
        if isinstance(item, tree.Term | tree.Range | tree.From | tree.To):
            count += 1
        else:
            stack.extend(item.children)
    return count


class _Translator:
    """Walks luqum's tree. `field` is the SearchField a `field:` prefix selected, or None for
    the default fields."""

    def __init__(self, terms: FieldTerms, catalog: FieldCatalog, fail: Callable[[str], BadRequest]):
        self.terms = terms
        self.catalog = catalog
        self.fail = fail

    def node(self, item: tree.Item, field: SearchField | None, depth: int) -> tantivy.Query:
        if depth > MAX_DEPTH:
            raise self.fail(f"query is nested too deeply (at most {MAX_DEPTH} levels)")
        handler = _HANDLERS.get(type(item))
        if handler is None:
            raise self.fail(f"unsupported query syntax: {item}")
        return handler(self, item, field, depth + 1)

    # -- structure --------------------------------------------------------------------------

    def boolean(self, item: tree.BaseOperation, field: SearchField | None, depth: int) -> tantivy.Query:
        optional = isinstance(item, tree.OrOperation)
        clauses = [self._clause(child, field, depth, optional) for child in item.children]
        return _combine(clauses)

    def _clause(self, child: tree.Item, field, depth: int, optional: bool) -> tuple[tantivy.Occur, tantivy.Query]:
        if isinstance(child, tree.Not | tree.Prohibit):
            return tantivy.Occur.MustNot, self.node(child.a, field, depth)
        if isinstance(child, tree.Plus):
            return tantivy.Occur.Must, self.node(child.a, field, depth)
        return (tantivy.Occur.Should if optional else tantivy.Occur.Must), self.node(child, field, depth)

    def unary(self, item: tree.Not | tree.Prohibit | tree.Plus, field, depth: int) -> tantivy.Query:
        return _combine([self._clause(item, field, depth, optional=False)])

    def group(self, item: tree.Group | tree.FieldGroup, field, depth: int) -> tantivy.Query:
        return self.node(item.expr, field, depth)

    def search_field(self, item: tree.SearchField, field, depth: int) -> tantivy.Query:
        if item.name == "*":
            if isinstance(item.expr, tree.Word) and item.expr.value == "*":
                return tantivy.Query.all_query()
            raise self.fail("'*' may be a field name only in '*:*'")
        if field is not None:
            raise self.fail(f"field {item.name!r} is inside field {field.name!r}")
        spec = self.catalog.get(item.name)
        if spec is None:
            raise self.fail(f"unknown search field {item.name!r}")
        return self.node(item.expr, spec, depth)

    def boost(self, item: tree.Boost, field, depth: int) -> tantivy.Query:
        force = float(item.force)
        if force < 0:
            raise self.fail(f"boost ^{item.force} is negative")
        return tantivy.Query.boost_query(self.node(item.expr, field, depth), force)

    # -- values -----------------------------------------------------------------------------

    def word(self, item: tree.Word, field, depth: int) -> tantivy.Query:
        if item.value == "*":
            return self.terms.exists(field) if field else tantivy.Query.all_query()
        explicit = field is not None
        return self._each_field(
            field, lambda f: self.terms.word(f, item.value, explicit=explicit), stem=lambda f: self.terms.stemmed(f, item.value)
        )

    def phrase(self, item: tree.Phrase, field, depth: int, slop: int = 0) -> tantivy.Query:
        text = _phrase_text(item.value)
        return self._each_field(field, lambda f: self.terms.phrase(f, text, slop, explicit=field is not None))

    def proximity(self, item: tree.Proximity, field, depth: int) -> tantivy.Query:
        if not isinstance(item.term, tree.Phrase):
            raise self.fail(f"'~{item.degree}' after {item.term} needs a quoted phrase")
        return self.phrase(item.term, field, depth, slop=int(item.degree))

    def fuzzy(self, item: tree.Fuzzy, field, depth: int) -> tantivy.Query:
        if not isinstance(item.term, tree.Word):
            raise self.fail(f"fuzzy '~' applies to a single word, not {item.term}")
        edits = _edits(float(item.degree))
        return self._each_field(field, lambda f: self.terms.fuzzy(f, item.term.value, edits, explicit=field is not None))

    def regex(self, item: tree.Regex, field, depth: int) -> tantivy.Query:
        pattern = item.value[1:-1]
        return self._each_field(field, lambda f: self.terms.regex(f, pattern, explicit=field is not None))

    def range(self, item: tree.Range | tree.From | tree.To, field, depth: int) -> tantivy.Query:
        if field is None:
            raise self.fail(f"the range {item} needs a field, e.g. create_time:{item}")
        if isinstance(item, tree.Range):
            low, high, include_low, include_high = item.low, item.high, item.include_low, item.include_high
        elif isinstance(item, tree.From):
            low, high, include_low, include_high = item.a, tree.Word("*"), item.include, True
        else:
            low, high, include_low, include_high = tree.Word("*"), item.a, True, item.include
        return self.terms.range(field, _bound(low), _bound(high), include_low, include_high)

    def _each_field(self, field: SearchField | None, build: _Build, stem: _Build | None = None) -> tantivy.Query:
        """`build` on the one named field, or a disjunction over the boosted default fields
        (plus `stem` on their stemmed twins, lower)."""
        if field is not None:
            return build(field)
        alternatives = []
        for name, boost in self.catalog.default_fields:
            spec = self.catalog.get(name)
            query = build(spec)
            if query is not None:
                alternatives.append(tantivy.Query.boost_query(query, boost))
            if stem and spec.stem_field and (stemmed := stem(spec)) is not None:
                alternatives.append(tantivy.Query.boost_query(stemmed, boost * self.catalog.stem_boost))
        if not alternatives:
            return tantivy.Query.empty_query()
        return alternatives[0] if len(alternatives) == 1 else tantivy.Query.disjunction_max_query(alternatives, tie_breaker=0.1)


_HANDLERS: dict[type, Callable[..., tantivy.Query]] = {
    tree.AndOperation: _Translator.boolean,
    tree.OrOperation: _Translator.boolean,
    tree.UnknownOperation: _Translator.boolean,
    tree.Not: _Translator.unary,
    tree.Prohibit: _Translator.unary,
    tree.Plus: _Translator.unary,
    tree.Group: _Translator.group,
    tree.FieldGroup: _Translator.group,
    tree.SearchField: _Translator.search_field,
    tree.Boost: _Translator.boost,
    tree.Word: _Translator.word,
    tree.Phrase: _Translator.phrase,
    tree.Proximity: _Translator.proximity,
    tree.Fuzzy: _Translator.fuzzy,
    tree.Regex: _Translator.regex,
    tree.Range: _Translator.range,
    tree.From: _Translator.range,
    tree.To: _Translator.range,
}


def _combine(clauses: list[tuple[tantivy.Occur, tantivy.Query]]) -> tantivy.Query:
    """A boolean query over `clauses`; one with only prohibitions matches everything but them
    (Solr's rule for purely negative queries, applied at every level)."""
    if all(occur == tantivy.Occur.MustNot for occur, _ in clauses):
        clauses = [(tantivy.Occur.Must, tantivy.Query.all_query()), *clauses]
    if len(clauses) == 1:
        return clauses[0][1]
    return tantivy.Query.boolean_query(clauses)


def _phrase_text(quoted: str) -> str:
    return unescape(quoted[1:-1])


def _bound(item: tree.Item) -> str | None:
    """A range bound's text, None for an open `*` bound."""
    if isinstance(item, tree.Phrase):
        return _phrase_text(item.value)
    value = item.value if isinstance(item, tree.Word) else str(item)
    return None if value == "*" else unescape(value)


def _edits(degree: float) -> int:
    # `foo~` reaches us as luqum's default 0.5; Lucene reads a fraction as the old similarity
    # and gives the maximum, 2 edits. Whole numbers are edit distances, capped at Lucene's 2.
    if degree == 0:
        return 0
    return 2 if degree < 1 else min(int(degree), 2)
