"""The text analyzers every Fonds index registers, by the names its schema uses.

`fonds_text` tokenises on non-alphanumerics, lower-cases and ASCII-folds (`Müller` finds
`muller`); `fonds_stem` is the same plus an English stemmer, for the lower-weighted stemmed twin
of the default fields (`letter` finds `letters`); `fonds_keyword` keeps the whole value as one
lower-cased token, for identifiers and other exact, facet-like fields.
"""

from __future__ import annotations

from functools import cache

import tantivy

TEXT = "fonds_text"
STEM = "fonds_stem"
KEYWORD = "fonds_keyword"

# Longer tokens are base64, hashes or run-together junk: nobody searches for them, and each one
# would be a term of its own in the dictionary.
_MAX_TOKEN_CHARS = 100


def _text_builder() -> tantivy.TextAnalyzerBuilder:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(_MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
    )


def _build(name: str) -> tantivy.TextAnalyzer:
    if name == TEXT:
        return _text_builder().build()
    if name == STEM:
        return _text_builder().filter(tantivy.Filter.stemmer("english")).build()
    if name == KEYWORD:
        return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw()).filter(tantivy.Filter.lowercase()).build()
    raise KeyError(f"no analyzer named {name!r}")


ANALYZER_NAMES = (TEXT, STEM, KEYWORD)


@cache
def analyzer(name: str) -> tantivy.TextAnalyzer:
    """The analyzer registered under `name` (built once; analyzers are stateless)."""
    return _build(name)


def register_analyzers(index: tantivy.Index) -> None:
    """Register every Fonds analyzer on `index`: needed on each open, before writing or querying."""
    for name in ANALYZER_NAMES:
        index.register_tokenizer(name, analyzer(name))
    # A sortable keyword field's column is normalised by the same analyzer, so sorting ignores case.
    index.register_fast_field_tokenizer(KEYWORD, analyzer(KEYWORD))


def tokens(analyzer_name: str, text: str) -> list[tuple[int, str]]:
    """`(position, token)` pairs as the index holds them, for building term and phrase queries."""
    return [(token.position, token.text) for token in analyzer(analyzer_name).pre_tokenize(text).tokens]


@cache
def _normaliser(analyzer_name: str) -> tantivy.TextAnalyzer:
    # Wildcard, fuzzy and regex terms are not tokenised (their `*`/`?` would split them), but
    # their letters must be folded the way the index folded its tokens, as Solr's "multiterm"
    # analysis does.
    builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw()).filter(tantivy.Filter.lowercase())
    if analyzer_name in (TEXT, STEM):
        builder = builder.filter(tantivy.Filter.ascii_fold())
    return builder.build()


def normalise(analyzer_name: str, text: str) -> str:
    """`text` lower-cased (and folded, for text analyzers) as one piece, without tokenising."""
    if not text:
        return text
    folded = _normaliser(analyzer_name).analyze(text)
    return folded[0] if folded else ""
