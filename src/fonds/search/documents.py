"""Search documents: a record as GET returns it, turned into the fields its type's SearchSpec
declares plus those every document has (aspace-api §9.5; no `jsonmodel_type`)."""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable

import orjson
import tantivy
from sqlalchemy import select

from fonds.records.registry import RecordType, Registry
from fonds.search.catalog import FieldCatalog
from fonds.search.fields import STORED_DOCUMENT
from fonds.storage.chunks import is_in, select_any

# Keys whose values are plumbing, not words anyone searches for.
NOT_FULL_TEXT = frozenset(
    ("ref", "uri", "jsonmodel_type", "lock_version", "created", "modified", "create_time", "system_mtime", "user_mtime")
)
AUDIT_FIELDS = ("created_by", "last_modified_by", "create_time", "system_mtime", "user_mtime")


def sort_key(title: str | None) -> str:
    """Case- and accent-insensitive sort key (`title_sort`)."""
    folded = unicodedata.normalize("NFKD", title or "").encode("ascii", "ignore").decode()
    return " ".join(folded.lower().split())


def full_text(node, out: list[str]) -> list[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in NOT_FULL_TEXT:
                full_text(value, out)
    elif isinstance(node, list):
        for value in node:
            full_text(value, out)
    elif isinstance(node, str):
        out.append(node)
    return out


def _refs_in(node, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        if isinstance(node.get("ref"), str):
            out.add(node["ref"])
        for value in node.values():
            _refs_in(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs_in(value, out)
    return out


class LinkedTitles:
    """Titles of the records a batch of records links to, fetched in one query per type."""

    def __init__(self, conn, registry: Registry, records: Iterable[dict]):
        wanted: dict[str, list[int]] = defaultdict(list)
        for uri in set().union(*(_refs_in(record, set()) for record in records)):
            parsed = registry.parse_uri(uri)
            if parsed and parsed.record_type.search and parsed.record_type.search.shown_in_linkers:
                wanted[parsed.record_type.name].append(parsed.record_id)
        self._titles: dict[str, str] = {}
        for name, ids in wanted.items():
            # A linked record's title is derived when it is written: its stored JSON holds it, so
            # the fields computed at read time (an agent's, from every record linking it) are skipped.
            record_type, table = registry[name], conn.info["fonds_tables"][name]
            for (body,) in select_any(conn, lambda chunk, table=table: select(table.c.json).where(is_in(table.c.id, chunk)), ids):
                doc = orjson.loads(body)
                self._titles[doc["uri"]] = record_type.search.title(doc) or ""

    def titles(self, refs: Iterable[dict]) -> list[str]:
        return [self._titles[r["ref"]] for r in refs if r.get("ref") in self._titles]


def load_records(conn, record_type: RecordType, ids: list[int], render) -> dict[int, tuple[dict, bytes]]:
    """The searchable records among `ids` as GET returns them, parsed and as bytes (hidden ones,
    such as the global repository, left out)."""
    table = conn.info["fonds_tables"][record_type.name]
    found: dict[int, tuple[dict, bytes]] = {}
    hidden = record_type.hooks.list_filter(table)
    shown = [] if hidden is None else [hidden]
    rows = select_any(conn, lambda chunk: select(table).where(is_in(table.c.id, chunk), *shown), ids)
    for row, body in zip(rows, render(conn, record_type, rows)):
        found[row.id] = (orjson.loads(body), body)
    return found


def _as_list(value) -> list:
    if value is None or value == "":
        return []
    return [v for v in value if v is not None and v != ""] if isinstance(value, list | tuple) else [value]


def result_fields(record_type: RecordType, doc: dict, linked: LinkedTitles) -> dict:
    """The fields of the document the search routes return (everything but the full text)."""
    spec = record_type.search
    title = spec.title(doc)
    suppressed = bool(doc.get("suppressed"))
    repository = doc.get("repository", {}).get("ref") if record_type.repo_scoped else None
    fields = {
        "id": doc["uri"],
        "uri": doc["uri"],
        "title": title,
        "title_sort": sort_key(title),
        "primary_type": record_type.name,
        "types": [record_type.name, *spec.types],
        "repository": repository or (doc["uri"] if record_type.hooks.contains_repository_records else "global"),
        "publish": bool(doc.get("publish")) and not suppressed,
        "suppressed": suppressed,
        "system_generated": bool(doc.get("system_generated")),
        **{name: doc.get(name) for name in AUDIT_FIELDS if doc.get(name) is not None},
    }
    for field in spec.fields:
        value = field.value(doc, linked)
        if _as_list(value):
            fields[field.name] = value
    return fields


def to_index_document(catalog: FieldCatalog, fields: dict, record: dict, body: bytes) -> tantivy.Document:
    """The tantivy document: each catalog field indexed, the result document stored whole."""
    document = catalog.document({**fields, "fullrecord": " ".join(full_text(record, []))}, skip_bad_dates=True)
    document.add_bytes(STORED_DOCUMENT, orjson.dumps({**fields, "json": body.decode()}))
    return document
