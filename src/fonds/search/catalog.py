"""The field catalog: which fields a query may name, how each is analysed, and the default fields.

One frozen declaration drives the tantivy schema (`add_to_schema`), the documents' derived
twins (`document`), the query translator (`query.py`) and the sort parser (`sort.py`), so a
field cannot be indexed one way and queried another.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import tantivy

from fonds.search import analysis
from fonds.search.dates import parse_date_interval

STEM_SUFFIX = "_stem"
# A hidden keyword field listing which non-fast fields a document has values in, so that
# `field:*` reads one posting list instead of walking the field's whole term dictionary
# (about 0.5 s for a full-text field at 100,000 records); fast fields use their column.
PRESENT_FIELD = "_fields"
_FIELD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class FieldKind(StrEnum):
    TEXT = "text"  # analysed prose: tokens, phrases, optional stemmed twin
    KEYWORD = "keyword"  # the whole value as one lower-cased token: identifiers, types, URIs
    INTEGER = "integer"
    DATE = "date"
    BOOLEAN = "boolean"


_ANALYZERS = {FieldKind.TEXT: analysis.TEXT, FieldKind.KEYWORD: analysis.KEYWORD}


@dataclass(frozen=True)
class SearchField:
    """One queryable field. Integer, date and boolean fields are always indexed and fast
    (ranges, `field:*` and sorting read the column); `fast` on a keyword field makes it sortable
    and lets `field:*` use the column."""

    name: str
    kind: FieldKind
    stemmed: bool = False
    stored: bool = False
    fast: bool = False

    def __post_init__(self):
        # A name a query can write as `name:value`; `_stem` and `_fields` names are the catalog's own.
        if not _FIELD_NAME.match(self.name) or self.name.endswith(STEM_SUFFIX):
            raise ValueError(f"invalid search field name {self.name!r}")
        if self.stemmed and self.kind is not FieldKind.TEXT:
            raise ValueError(f"{self.name}: only text fields have a stemmed twin")
        if self.fast and self.kind is FieldKind.TEXT:
            raise ValueError(f"{self.name}: a fast (sortable) field must be a keyword, not analysed text")
        if self.kind in (FieldKind.INTEGER, FieldKind.DATE, FieldKind.BOOLEAN):
            object.__setattr__(self, "fast", True)

    @property
    def analyzer(self) -> str | None:
        """The analyzer of an analysed field (text or keyword); None for typed values."""
        return _ANALYZERS.get(self.kind)

    @property
    def stem_field(self) -> str | None:
        """The name of the twin field holding this field's English stems, if it has one."""
        return self.name + STEM_SUFFIX if self.stemmed else None

    @property
    def sortable(self) -> bool:
        return self.fast


@dataclass(frozen=True)
class FieldCatalog:
    """Every queryable field, and the fields a bare term searches with their boosts (e.g.
    identifier 8, title 4, full text 1). A bare term also matches each default field's stemmed
    twin at `stem_boost` times that field's boost."""

    fields: tuple[SearchField, ...]
    default_fields: tuple[tuple[str, float], ...]
    stem_boost: float = 0.5
    _by_name: Mapping[str, SearchField] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        by_name = {f.name: f for f in self.fields}
        if len(by_name) != len(self.fields):
            raise ValueError("duplicate search field names")
        for name, boost in self.default_fields:
            if name not in by_name or boost <= 0:
                raise ValueError(f"default field {name!r} is not a declared field with a positive boost")
        object.__setattr__(self, "_by_name", by_name)

    def get(self, name: str) -> SearchField | None:
        return self._by_name.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def add_to_schema(self, builder: tantivy.SchemaBuilder) -> tantivy.SchemaBuilder:
        """Declare every catalog field (and stemmed twin) on `builder`; the index adds the rest
        (stored-only fields such as `json`) itself."""
        for f in self.fields:
            _add_field(builder, f)
        builder.add_text_field(PRESENT_FIELD, stored=False, tokenizer_name="raw", index_option="basic")
        return builder

    def document(self, values: Mapping[str, object], *, skip_bad_dates: bool = False) -> tantivy.Document:
        """A tantivy document from `{field: value or list of values}`: stemmed twins filled in,
        dates given as `datetime`, `date` or ISO-8601 strings, None and empty lists left out.
        Names outside the catalog are passed through for the fields the index adds itself.
        A value of a date field that is no date is refused (ValueError), or with
        `skip_bad_dates` left out: a record's free-text date must not keep it out of the index."""
        doc = tantivy.Document()
        by_name = self._by_name
        for name, value in values.items():
            # Most values are one string: no list to build for it.
            items = (value and [value]) if value.__class__ is str else _as_list(value)
            if not items:
                continue
            spec = by_name.get(name)
            if spec is None:
                for item in items:
                    _add_value(doc, name, item)
                continue
            kind = spec.kind
            if kind in _ANALYZERS:  # text and keyword: the common case, without per-value dispatch
                texts = [item if item.__class__ is str else str(item) for item in items]
                for twin in (name, spec.stem_field) if spec.stemmed else (name,):
                    for text in texts:
                        doc.add_text(twin, text)
            elif kind is FieldKind.INTEGER:
                for item in items:
                    doc.add_integer(name, int(item))
            elif kind is FieldKind.BOOLEAN:
                for item in items:
                    doc.add_boolean(name, bool(item))
            else:
                for item in items:
                    try:
                        date = _date(spec, item)
                    except ValueError:
                        if skip_bad_dates:
                            continue
                        raise
                    if date is not None:
                        doc.add_date(name, date)
            if not spec.fast:
                doc.add_text(PRESENT_FIELD, name)
        return doc


def _add_field(builder: tantivy.SchemaBuilder, f: SearchField) -> None:
    if f.kind is FieldKind.TEXT:
        builder.add_text_field(f.name, stored=f.stored, tokenizer_name=analysis.TEXT, index_option="position")
        if f.stem_field:
            builder.add_text_field(f.stem_field, stored=False, tokenizer_name=analysis.STEM, index_option="freq")
    elif f.kind is FieldKind.KEYWORD:
        builder.add_text_field(f.name, stored=f.stored, fast=f.fast, tokenizer_name=analysis.KEYWORD, index_option="freq")
    elif f.kind is FieldKind.INTEGER:
        builder.add_integer_field(f.name, stored=f.stored, indexed=True, fast=True)
    elif f.kind is FieldKind.DATE:
        builder.add_date_field(f.name, stored=f.stored, indexed=True, fast=True)
    else:
        builder.add_boolean_field(f.name, stored=f.stored, indexed=True, fast=True)


def _as_list(value: object) -> list[object]:
    # None and "" are no value: the field stays absent (`field:*` does not find the document).
    values = value if isinstance(value, list | tuple | set | frozenset) else [value]
    return [v for v in values if v is not None and v != ""]


def _date(spec: SearchField, value: object) -> dt.datetime | None:
    """A date field's value as tantivy holds it (None: outside the years it can hold)."""
    if isinstance(value, dt.datetime):
        return _indexable_date(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
    text = value.isoformat() if isinstance(value, dt.date) else str(value)
    interval = parse_date_interval(text)
    if interval is None:
        raise ValueError(f"{spec.name}: {value!r} is not a date")
    return _indexable_date(interval[0])


def _indexable_date(value: dt.datetime) -> dt.datetime | None:
    # tantivy holds nanoseconds since 1970 in 64 bits: 1677-2262. A date outside cannot be
    # indexed, so the document goes in without it; historical dates belong in integer year fields.
    return value if tantivy.MIN_DATETIME <= value <= tantivy.MAX_DATETIME else None


def _add_value(doc: tantivy.Document, name: str, value: object) -> None:
    if isinstance(value, bool):
        doc.add_boolean(name, value)
    elif isinstance(value, int):
        doc.add_integer(name, value)
    elif isinstance(value, dt.datetime):
        doc.add_date(name, value)
    elif isinstance(value, float):
        doc.add_float(name, value)
    elif isinstance(value, str):
        doc.add_text(name, value)
    else:
        raise TypeError(f"{name}: cannot index a {type(value).__name__}")
