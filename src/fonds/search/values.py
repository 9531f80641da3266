"""Reading the values a query names: escaped words with wildcards, integers, booleans (dates: dates.py)."""

from __future__ import annotations

import re
from enum import Enum


class Wildcard(Enum):
    ANY_STRING = "*"
    ANY_CHAR = "?"


# A word as literal runs and the wildcards between them.
Segments = list[str | Wildcard]


def split_word(raw: str) -> Segments:
    """Unescape a query word into literal runs and its unescaped wildcards, e.g.
    `ab\\*c*` -> ['ab*c', Wildcard.ANY_STRING]."""
    segments: Segments = []
    literal: list[str] = []
    chars = iter(raw)
    for char in chars:
        if char == "\\":
            literal.append(next(chars, "\\"))
        elif char in "*?":
            if literal:
                segments.append("".join(literal))
                literal = []
            segments.append(Wildcard(char))
        else:
            literal.append(char)
    if literal:
        segments.append("".join(literal))
    return segments


def unescape(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw)


def parse_integer(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    # tantivy holds i64: a bigger number cannot be stored, so it cannot be asked for either.
    return value if -(2**63) <= value < 2**63 else None


def parse_boolean(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text.lower())
