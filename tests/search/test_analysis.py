"""The analyzers, as the index applies them."""

from __future__ import annotations

import pytest

from fonds.search import analysis


@pytest.mark.parametrize(
    ("name", "text", "tokens"),
    [
        (analysis.TEXT, "Papers of Hans Müller, 1950-1960", ["papers", "of", "hans", "muller", "1950", "1960"]),
        (analysis.TEXT, "Ærøskøbing straße O'Brien", ["aeroskobing", "strasse", "o", "brien"]),
        (analysis.TEXT, "x" * 101 + " kept", ["kept"]),
        (analysis.STEM, "Letters, organising, ponies", ["letter", "organis", "poni"]),
        (analysis.KEYWORD, "MS-2024/Müller 7", ["ms-2024/müller 7"]),
    ],
)
def test_analyzers(name, text, tokens):
    assert analysis.analyzer(name).analyze(text) == tokens


def test_tokens_carry_positions_for_phrases():
    assert analysis.tokens(analysis.TEXT, "Hans-Peter Müller") == [(0, "hans"), (1, "peter"), (2, "muller")]


@pytest.mark.parametrize(
    ("name", "text", "normalised"),
    [(analysis.TEXT, "MÜL", "mul"), (analysis.KEYWORD, "MS-0", "ms-0"), (analysis.KEYWORD, "Mü", "mü"), (analysis.TEXT, "", "")],
)
def test_wildcard_literals_are_folded_like_the_index(name, text, normalised):
    assert analysis.normalise(name, text) == normalised
