"""What a record type puts in its search document, declared beside the type (`RecordType.search`).

A document has the fields every type shares (built by `fonds.search.documents`: id, uri, title,
types, json, repository, audit fields, the full text …) plus the `DocumentField`s its type
declares. A field is named once with one kind across all types (the index has one schema); its
value is computed from the record exactly as GET returns it, and from the records it links to
(`Linked`: the titles of its subjects, say). A type whose records appear in other records'
documents (a subject's title in every record it is linked to) says so with `shown_in_linkers`;
a type whose documents depend on other records' positions (a node's ancestors) names those
dependents with `dependents`. Types without a `SearchSpec` are not searchable."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

FieldKind = Literal["text", "keyword", "date", "integer", "boolean"]


class Linked(Protocol):
    """What a document builder knows about the records a record links to."""

    def titles(self, refs: Iterable[dict]) -> list[str]: ...


@dataclass(frozen=True)
class DocumentField:
    """`text`: analysed words (full-text, phrases, highlighting); `keyword`: the exact value
    (facets, sorting, exact filters); `date`, `integer`, `boolean`: typed values (ranges)."""

    name: str
    kind: FieldKind
    value: Callable[[dict, Linked], Any]
    # Also a default field of queries without a field name, with this weight (identifier > title > full text).
    default_weight: float | None = None


def _default_title(doc: dict) -> str | None:
    return doc.get("title") or doc.get("display_string") or doc.get("name")


def copied(name: str, kind: FieldKind, key: str | None = None, *, default_weight: float | None = None) -> DocumentField:
    """A field holding one of the record's own properties (`key`, by default the field's name)."""
    return DocumentField(name, kind, lambda doc, _: doc.get(key or name), default_weight=default_weight)


# A record's URI -> the record as the search index last saw it (its document's `json`), or None.
Indexed = Callable[[str], dict | None]


@dataclass(frozen=True)
class SearchSpec:
    fields: tuple[DocumentField, ...] = ()
    title: Callable[[dict], str | None] = _default_title
    # Records linking to one of this type show its title in their documents (subjects, agents).
    shown_in_linkers: bool = False
    # (read connection, registry, document before, document after, indexed) -> URIs of other
    # records whose documents changed with this one although their own rows did not; `indexed`
    # gives a record as the index last saw it (or None), to skip those whose documents can't change.
    dependents: Callable[[Any, Any, dict | None, dict | None, Indexed], Iterable[str]] | None = None
    # Types its documents carry besides its own, for `type[]` (every agent is also an `agent`).
    types: tuple[str, ...] = ()


# -- fields several types share ------------------------------------------------------------

IDENTIFIER_PARTS = ("id_0", "id_1", "id_2", "id_3")
YEAR = re.compile(r"^(-?\d{1,4})")


def four_part_identifier(doc: dict) -> str | None:
    parts = [doc[p] for p in IDENTIFIER_PARTS if doc.get(p)]
    return "-".join(parts) or None


def _refs(doc: dict, key: str) -> list[dict]:
    return [item for item in doc.get(key) or [] if isinstance(item, dict) and item.get("ref")]


def _date_labels(doc: dict) -> list[str]:
    labels = []
    for date in doc.get("dates") or []:
        if date.get("expression"):
            labels.append(date["expression"])
        elif date.get("begin"):
            labels.append(f"{date['begin']} - {date['end']}" if date.get("end") else date["begin"])
    return labels


def years(doc: dict) -> list[int]:
    """Every year a record's dates span (ArchivesSpace's `years`), at most a millennium per date."""
    found: set[int] = set()
    for date in doc.get("dates") or []:
        begin, end = (YEAR.match(str(date.get(k) or "")) for k in ("begin", "end"))
        if begin:
            first = int(begin.group(1))
            last = int(end.group(1)) if end else first
            found.update(range(first, min(last, first + 1000) + 1))
    return sorted(found)


def _extents(doc: dict) -> list[str]:
    return [f"{e.get('number', '')} {e.get('extent_type', '')}".strip() for e in doc.get("extents") or []]


IDENTIFIER = DocumentField("identifier", "keyword", lambda doc, _: four_part_identifier(doc), default_weight=3.0)
FOUR_PART_ID = DocumentField("four_part_id", "text", lambda doc, _: four_part_identifier(doc))
SUBJECTS = (
    DocumentField("subjects", "keyword", lambda doc, linked: linked.titles(_refs(doc, "subjects"))),
    DocumentField("subjects_text", "text", lambda doc, linked: linked.titles(_refs(doc, "subjects"))),
    DocumentField("subject_uris", "keyword", lambda doc, _: [r["ref"] for r in _refs(doc, "subjects")]),
)


def _agent_refs(doc: dict, role: str | None = None) -> list[dict]:
    return [r for r in _refs(doc, "linked_agents") if role is None or r.get("role") == role]


# The agents a record links, by their titles (display names' sort names): bare query terms find a
# record by its agents' names; `creators` are those linked with the role `creator`.
LINKED_AGENTS = (
    DocumentField("agents", "keyword", lambda doc, linked: linked.titles(_agent_refs(doc))),
    DocumentField("agents_text", "text", lambda doc, linked: linked.titles(_agent_refs(doc)), default_weight=1.0),
    DocumentField("agent_uris", "keyword", lambda doc, _: [r["ref"] for r in _agent_refs(doc)]),
    DocumentField("creators", "keyword", lambda doc, linked: linked.titles(_agent_refs(doc, "creator"))),
    DocumentField("creators_text", "text", lambda doc, linked: linked.titles(_agent_refs(doc, "creator"))),
)
DATES = (
    DocumentField("dates", "text", lambda doc, _: _date_labels(doc)),
    DocumentField("years", "integer", lambda doc, _: years(doc)),
)
EXTENTS = DocumentField("extents", "text", lambda doc, _: _extents(doc))
LEVEL = DocumentField("level", "keyword", lambda doc, _: doc.get("other_level") if doc.get("level") == "otherlevel" else doc.get("level"))
DESCRIBED = (*SUBJECTS, *LINKED_AGENTS, *DATES, EXTENTS)


# -- per-type specs (each sits beside its type's declaration) --------------------------------


def ref_of(doc: dict, key: str) -> str | None:
    value = doc.get(key)
    return value.get("ref") if isinstance(value, dict) else None


def ancestor_uris(doc: dict) -> list[str]:
    return [a["ref"] for a in doc.get("ancestors") or [] if isinstance(a, dict) and a.get("ref")]


def _list_of(registry, node_type: str, doc: dict):
    """The record type, parent and root (parsed refs, or None) of the sibling list `doc` is in."""
    record_type = registry[node_type]
    parent = registry.parse_uri(ref_of(doc, "parent") or "")
    root = registry.parse_uri(ref_of(doc, record_type.tree.root_field) or "")
    return record_type, parent, root


def _list_conditions(table, record_type, parent, root, value=lambda parsed, name: parsed.record_id) -> list:
    """The conditions selecting a sibling list (`value` gives the compared value: an id, or a bound parameter)."""
    root_column = table.c[record_type.tree.root_column]
    return [
        table.c.parent_id.is_(None) if parent is None else table.c.parent_id == value(parent, "parent"),
        root_column.is_(None) if root is None else root_column == value(root, "root"),
    ]


# Built once per table and list kind (top level or not) with bound parameters: the indexer runs
# one for every node it indexes, and building the statement cost more than running it.
_FROM_NODE: dict[tuple, object] = {}


def _siblings_from_node(conn, registry, node_type: str, doc: dict) -> list[str]:
    """URIs of the node `doc` (as stored now) and of the siblings after it: one range of the
    sibling index, so a node appended to a list of 100,000 finds only itself."""
    from sqlalchemy import bindparam, select

    table = conn.info["fonds_tables"][node_type]
    record_type, parent, root = _list_of(registry, node_type, doc)
    key = (table.name, parent is None, root is None)
    if key not in _FROM_NODE:
        own = select(table.c.position).where(table.c.id == bindparam("node")).scalar_subquery()
        where = _list_conditions(table, record_type, parent, root, lambda _, name: bindparam(name))
        _FROM_NODE[key] = select(table.c.id, table.c.repo_id).where(*where, table.c.position >= own)
    params = {"node": registry.parse_uri(doc["uri"]).record_id}
    params.update({name: parsed.record_id for name, parsed in (("parent", parent), ("root", root)) if parsed is not None})
    return [record_type.uri(i, repo) for i, repo in conn.execute(_FROM_NODE[key], params)]


def _siblings_from_position(conn, registry, node_type: str, doc: dict, position: int) -> list[str]:
    """URIs of the siblings of the list `doc` names at logical `position` (0-based) or after.
    Positions a client sees are logical; the column holds physical ones with gaps
    (trees/positions.py), so the list is counted in order, not compared with the column."""
    from sqlalchemy import select

    table = conn.info["fonds_tables"][node_type]
    record_type, parent, root = _list_of(registry, node_type, doc)
    where = _list_conditions(table, record_type, parent, root)
    rows = conn.execute(select(table.c.id, table.c.repo_id).where(*where).order_by(table.c.position).offset(position))
    return [record_type.uri(i, repo) for i, repo in rows]


def _node_descendants(conn, registry, node_type: str, uri: str) -> list[str]:
    from sqlalchemy import select

    table = conn.info["fonds_tables"][node_type]
    record_type = registry[node_type]
    found, frontier = [], [registry.parse_uri(uri).record_id]
    while frontier:
        rows = []
        for start in range(0, len(frontier), 500):
            chunk = frontier[start : start + 500]
            rows += conn.execute(select(table.c.id, table.c.repo_id).where(table.c.parent_id.in_(chunk))).all()
        found += [record_type.uri(i, repo) for i, repo in rows]
        frontier = [i for i, _ in rows]
    return found


def both(*functions):
    """Dependents from several rules (a node that also links agents)."""

    def combined(conn, registry, old, new, indexed):
        return [uri for function in functions for uri in function(conn, registry, old, new, indexed)]

    return combined


def node_dependents(conn, registry, old: dict | None, new: dict | None, indexed=None) -> list[str]:
    """A node's `position` and `ancestors` are computed when it is read: when one node is added,
    moved or removed, its later siblings' positions shift and a moved node's descendants get new
    ancestors, although their rows did not change."""
    node_type = (new or old)["jsonmodel_type"]
    root_field = registry[node_type].tree.root_field
    found: list[str] = []
    before = (ref_of(old, root_field), ref_of(old, "parent"), old.get("position")) if old else None
    after = (ref_of(new, root_field), ref_of(new, "parent"), new.get("position")) if new else None
    if before == after:
        return found
    if old and before[:2] != (after or (None, None))[:2]:
        # Gone from its list (moved elsewhere or deleted): the siblings that were after it.
        found += _siblings_from_position(conn, registry, node_type, old, old.get("position") or 0)
    if new:
        if old and before[:2] == after[:2] and (old.get("position") or 0) < (new.get("position") or 0):
            # Moved later within its list: the siblings from where it was.
            found += _siblings_from_position(conn, registry, node_type, new, old.get("position") or 0)
        else:
            found += _siblings_from_node(conn, registry, node_type, new)
        if old and ancestor_uris(old) != ancestor_uris(new):
            found += _node_descendants(conn, registry, node_type, new["uri"])
    return found


def unchanged_since_created(record: dict) -> bool:
    """Whether a record the index has not seen yet (no document before) may be taken as new to
    the documents showing it: only if never changed, for a document rendered between its
    creation and a change shows it as it was then."""
    return record.get("lock_version") == 0


def instance_containers(doc: dict | None) -> set[str]:
    found = set()
    for item in (doc or {}).get("instances") or []:
        ref = ((item.get("sub_container") or {}).get("top_container") or {}).get("ref") if isinstance(item, dict) else None
        if isinstance(ref, str):
            found.add(ref)
    return found


def instance_dependents(conn, registry, old: dict | None, new: dict | None, indexed=None) -> list[str]:
    """A top container's document shows the records whose instances point at it (`collection`,
    `series`, publication): when such a record changes, comes or goes, so do those documents."""
    if old == new:
        return []
    return sorted(instance_containers(old) | instance_containers(new))
