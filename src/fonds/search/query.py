"""Placeholder until the search-query branch is merged (it brings the luqum translation)."""

from __future__ import annotations

import tantivy

from fonds.errors import BadRequest


def to_query(text, catalog, schema, parameter="q"):
    clauses = []
    for word in text.split():
        if ":" in word and word.split(":", 1)[0] in catalog:
            name, value = word.split(":", 1)
            if value == "*":
                clauses.append((tantivy.Occur.Must, tantivy.Query.all_query()))
                continue
            info = catalog[name]
            value = value.strip('"')
            if info.kind == "boolean":
                value = value == "true"
            elif info.kind == "text":
                value = value.lower()
            clauses.append((tantivy.Occur.Must, tantivy.Query.term_query(schema, name, value)))
        else:
            shoulds = [
                (tantivy.Occur.Should, tantivy.Query.term_query(schema, n, word.lower()))
                for n, i in catalog.items()
                if i.default_weight and i.kind == "text"
            ]
            clauses.append((tantivy.Occur.Must, tantivy.Query.boolean_query(shoulds)))
    return tantivy.Query.boolean_query(clauses) if clauses else tantivy.Query.all_query()


def to_sort(sort, catalog):
    name, _, direction = sort.strip().partition(" ")
    if name not in catalog or not catalog[name].sortable:
        raise BadRequest({"sort": [f"Cannot sort on '{name}'"]})
    return name, direction.strip().lower() == "desc"
