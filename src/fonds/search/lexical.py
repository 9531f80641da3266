"""Looking at a query's text before luqum parses it: Lucene's symbolic operators, and its size."""

from __future__ import annotations

import re
from typing import NamedTuple

_SPACE = " \t\r\n\u3000"


def spell_out_operators(q: str) -> str:
    """Lucene's `&&`, `||` and `!` as the AND, OR and NOT luqum knows. Like Lucene's lexer,
    only at the start of a clause, never inside quotes, a regex or after a backslash."""
    if not any(op in q for op in ("&&", "||", "!")):
        return q
    out, i, clause_start = [], 0, True
    while i < len(q):
        char = q[i]
        if char == "\\":
            out.append(q[i : i + 2])
            i, clause_start = i + 2, False
        elif char == '"' or (char == "/" and clause_start):
            end = _closing(q, i)
            out.append(q[i:end])
            i, clause_start = end, False
        elif clause_start and q.startswith(("&&", "||"), i) and (i + 2 == len(q) or q[i + 2] in _SPACE + "()"):
            out.append("AND" if char == "&" else "OR")
            i, clause_start = i + 2, False
        elif clause_start and char == "!" and i + 1 < len(q):
            out.append("NOT ")
            i += 1
        else:
            out.append(char)
            i, clause_start = i + 1, char in _SPACE + "("
    return "".join(out)


def _closing(q: str, start: int) -> int:
    """The index just past the unescaped delimiter closing the one at `start` (or the end)."""
    i = start + 1
    while i < len(q):
        if q[i] == "\\":
            i += 2
        elif q[i] == q[start]:
            return i + 1
        else:
            i += 1
    return len(q)


# Lucene's lexical units, roughly: a quoted phrase, a parenthesis, or a run of other characters
# (backslash escapes included).
_UNITS = re.compile(r'"(?:\\.|[^"\\])*"?|[()]|(?:\\.|[^\s()"\\])+|\\')
_OPERATORS = frozenset({"AND", "OR", "NOT", "TO", "&&", "||"})
_GLUE = re.compile(r"(?<!\\)([:^~])")
_NUMBER = re.compile(r"^[\d.]+$")


class Shape(NamedTuple):
    clauses: int  # terms, phrases and ranges, as luqum will count them (near enough)
    depth: int  # deepest parenthesis nesting


def measure(q: str) -> Shape:
    """The size of `q` as luqum will see it, cheap enough to check before parsing."""
    clauses = depth = deepest = 0
    for unit in _UNITS.findall(q):
        if unit == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif unit == ")":
            depth -= 1
        elif unit not in _OPERATORS:
            clauses += 1 if unit.startswith('"') else _terms_in(unit)
    return Shape(clauses, deepest)


def _terms_in(unit: str) -> int:
    """Terms in a run like `title:a^2b~1`: not the field names, the numbers after `^`/`~`, nor
    a range's closing bound (`5]`)."""
    parts = _GLUE.split(unit)  # [text, glue, text, glue, …]
    count = 0
    for i in range(0, len(parts), 2):
        text, before, after = parts[i], parts[i - 1] if i else "", parts[i + 1] if i + 1 < len(parts) else ""
        if not text or after == ":" or text[-1] in "]}" or (before in ("^", "~") and _NUMBER.match(text)):
            continue
        count += 1
    return count
