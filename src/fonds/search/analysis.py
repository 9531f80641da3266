"""Placeholder until the search-query branch is merged: it provides the real analyzers."""

from __future__ import annotations

import tantivy


def _base():
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.lowercase()).filter(tantivy.Filter.ascii_fold())


def register(index: tantivy.Index) -> None:
    index.register_tokenizer("fonds_text", _base().build())
    index.register_tokenizer("fonds_stem", _base().filter(tantivy.Filter.stemmer("english")).build())
