"""A top container's fields that depend on the records pointing at it, computed when it is read
(ArchivesSpace's TopContainer#sequel_to_jsonmodel): `collection`, `series`,
`is_linked_to_published_record`, `subcontainer_barcodes`, `display_string` and
`long_display_string`. A whole page of containers costs a fixed number of queries, whatever
the number of containers or of records pointing at them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import orjson
from sqlalchemy import select

from fonds.records.search_spec import instance_containers, instance_dependents, unchanged_since_created
from fonds.records.trees import hierarchy
from fonds.storage import links as link_table
from fonds.storage.chunks import is_in, select_any

INSTANCE_LINK = "instances/*/sub_container/top_container"
# The records whose instances may point at a container, and their collection paths.
HOLDERS = {"resource": "resources", "accession": "accessions", "archival_object": "archival_objects"}
# ArchivesSpace's TopContainer::SERIES_LEVELS / OTHERLEVEL_SERIES_LEVELS.
SERIES_LEVELS = ("series",)
OTHERLEVEL_SERIES_LEVELS = ("accession",)
LEVEL_LABELS = {"series": "Series"}  # common/locales/enums/en.yml, archival_record_level


@dataclass
class Linked:
    """What the records pointing at a set of containers say about each container."""

    resources: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    direct_resources: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    accessions: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    objects: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    barcodes: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))


def _rows_by_id(conn, table, ids) -> dict[int, object]:
    return {row.id: row for row in select_any(conn, lambda chunk: select(table).where(is_in(table.c.id, chunk)), sorted(set(ids)))}


def _docs(rows: dict[int, object]) -> dict[int, dict]:
    return {i: orjson.loads(row.json) for i, row in rows.items()}


def _at(doc: dict, path: str):
    """The instance a link's path (`instances/3/sub_container/top_container`) lies in."""
    index = int(path.split("/")[1])
    instances = doc.get("instances") or []
    return instances[index] if index < len(instances) else {}


def _gather(conn, tables, container_ids: list[int]) -> tuple[Linked, dict[str, dict[int, dict]], dict[int, object]]:
    table = link_table.readable(conn)
    links = select_any(
        conn,
        lambda chunk: select(table).where(
            table.c.target_type == "top_container", is_in(table.c.target_id, chunk), table.c.field == INSTANCE_LINK
        ),
        container_ids,
    )
    wanted: dict[str, set[int]] = defaultdict(set)
    for link in links:
        wanted[link.source_type].add(link.source_id)
    object_rows = _rows_by_id(conn, tables["archival_object"], wanted.get("archival_object", ()))
    docs = {"archival_object": _docs(object_rows)}
    wanted["resource"] |= {row.resource_id for row in object_rows.values() if row.resource_id is not None}
    for name in ("resource", "accession"):
        docs[name] = _docs(_rows_by_id(conn, tables[name], wanted.get(name, ())))
    return _sort_out(links, docs, object_rows), docs, object_rows


def _sort_out(links, docs: dict[str, dict[int, dict]], object_rows: dict[int, object]) -> Linked:
    """Which records point at which container, and the barcodes of their sub-containers."""
    linked = Linked()
    for link in sorted(links, key=lambda r: (r.source_type, r.source_id, r.path)):
        doc = docs.get(link.source_type, {}).get(link.source_id)
        if doc is None:
            continue
        barcode = (_at(doc, link.path).get("sub_container") or {}).get("barcode_2")
        if barcode:
            linked.barcodes[link.target_id].append(barcode)
        if link.source_type == "archival_object":
            linked.objects[link.target_id].add(link.source_id)
            resource_id = object_rows[link.source_id].resource_id
            if resource_id is not None:
                linked.resources[link.target_id].add(resource_id)
        elif link.source_type == "resource":
            linked.resources[link.target_id].add(link.source_id)
            linked.direct_resources[link.target_id].add(link.source_id)
        else:
            linked.accessions[link.target_id].add(link.source_id)
    return linked


def _identifier(doc: dict) -> str:
    """Identifiers.format: the parts there are, joined with `--`."""
    return "--".join(doc[p] for p in ("id_0", "id_1", "id_2", "id_3") if doc.get(p))


class Series:
    """The top-level archival objects above the linked ones that are series (TopContainer#series)."""

    def __init__(self, conn, table, object_ids):
        self.above = hierarchy.ancestor_rows(conn, table, object_ids, columns=("level", "component_id", "publish", "display_string"))
        tops = {self.top_of(i) for i in object_ids} - {None}
        candidates = [i for i in tops if self.above[i].component_id and self.above[i].level in (*SERIES_LEVELS, "otherlevel")]
        self.docs = _docs(_rows_by_id(conn, table, candidates))

    def top_of(self, object_id: int) -> int | None:
        seen, current = set(), self.above.get(object_id)
        while current is not None and current.parent_id is not None and current.id not in seen:
            seen.add(current.id)
            current = self.above.get(current.parent_id)
        return current.id if current is not None else None

    def entry(self, object_id: int) -> dict | None:
        doc = self.docs.get(object_id)
        if doc is None:
            return None
        other = (doc.get("other_level") or "").lower()
        if doc.get("level") not in SERIES_LEVELS and not (doc.get("level") == "otherlevel" and other in OTHERLEVEL_SERIES_LEVELS):
            return None
        return {
            "ref": doc["uri"],
            "identifier": doc.get("component_id"),
            "display_string": doc.get("display_string") or doc.get("title"),
            "level_display_string": doc.get("other_level") or LEVEL_LABELS.get(doc.get("level"), doc.get("level")),
            "publish": bool(doc.get("publish")) and not doc.get("suppressed"),
        }

    def node_published(self, object_id: int) -> bool:
        """The node and every node above it published (their suppression lives in their JSON,
        which is read for the linked nodes only)."""
        seen, current = set(), self.above.get(object_id)
        while current is not None and current.id not in seen:
            if not current.publish:
                return False
            seen.add(current.id)
            current = self.above.get(current.parent_id)
        return True


def read_extras(conn, rows) -> list[dict]:
    tables = conn.info["fonds_tables"]
    containers = [orjson.loads(row.json) for row in rows]
    linked, docs, object_rows = _gather(conn, tables, [row.id for row in rows])
    series = Series(conn, tables["archival_object"], list(object_rows))
    published = Publication(conn, tables, docs, object_rows, series)
    names = _names(conn, tables, containers)
    extras = []
    for row, container in zip(rows, containers):
        collection = [_collection_entry(docs["resource"][i]) for i in sorted(linked.resources[row.id]) if i in docs["resource"]]
        collection += [_collection_entry(docs["accession"][i]) for i in sorted(linked.accessions[row.id]) if i in docs["accession"]]
        tops = sorted({series.top_of(i) for i in linked.objects[row.id]} - {None})
        entries = [entry for entry in (series.entry(i) for i in tops) if entry is not None]
        extras.append(
            {
                **_display_strings(container, entries, collection, names),
                "collection": collection,
                "series": entries,
                "is_linked_to_published_record": published.any_of(linked, row.id),
                "subcontainer_barcodes": "".join(f"{b} " for b in linked.barcodes[row.id]),
            }
        )
    return extras


class Publication:
    """ImpliedPublicationCalculator#for_top_containers: a container is linked to a published
    record when a resource or accession pointing at it is published and not suppressed, or an
    archival object pointing at it is, with every node above it and its resource; all in a
    published repository."""

    def __init__(self, conn, tables, docs, object_rows, series: Series):
        self.docs, self.object_rows, self.series = docs, object_rows, series
        repo_ids = {
            doc["repository"]["ref"].rsplit("/", 1)[1] for found in docs.values() for doc in found.values() if doc.get("repository")
        }
        table = tables["repository"]
        query = select(table.c.id, table.c.json).where(table.c.id.in_([int(i) for i in repo_ids]))
        self.repositories = {i: bool(orjson.loads(body).get("publish")) for i, body in conn.execute(query)} if repo_ids else {}

    def record(self, doc: dict | None) -> bool:
        if doc is None or not doc.get("publish") or doc.get("suppressed"):
            return False
        repository = (doc.get("repository") or {}).get("ref", "")
        return self.repositories.get(int(repository.rsplit("/", 1)[1]), True) if repository else True

    def node(self, object_id: int) -> bool:
        row = self.object_rows[object_id]
        if not self.record(self.docs["archival_object"].get(object_id)) or not self.series.node_published(object_id):
            return False
        return row.resource_id is None or self.record(self.docs["resource"].get(row.resource_id))

    def any_of(self, linked: Linked, container_id: int) -> bool:
        return (
            any(self.record(self.docs["resource"].get(i)) for i in linked.direct_resources[container_id])
            or any(self.record(self.docs["accession"].get(i)) for i in linked.accessions[container_id])
            or any(self.node(i) for i in linked.objects[container_id])
        )


def _collection_entry(doc: dict) -> dict:
    title = doc.get("display_string") if doc.get("jsonmodel_type") == "accession" else doc.get("title")
    return {"ref": doc["uri"], "identifier": _identifier(doc), "display_string": title or doc.get("title") or ""}


def _names(conn, tables, containers: list[dict]) -> dict[str, str]:
    """Profile names and location titles by URI, for the long display strings."""
    wanted: dict[str, set[int]] = defaultdict(set)
    for container in containers:
        if container.get("container_profile"):
            wanted["container_profile"].add(int(container["container_profile"]["ref"].rsplit("/", 1)[1]))
        for place in (container.get("container_locations") or [])[:1]:
            wanted["location"].add(int(place["ref"].rsplit("/", 1)[1]))
    names = {}
    for name, key in (("container_profile", "name"), ("location", "title")):
        for doc in _docs(_rows_by_id(conn, tables[name], wanted.get(name, ()))).values():
            names[doc["uri"]] = doc.get(key)
    return names


def _display_strings(container: dict, series: list[dict], collection: list[dict], names: dict[str, str]) -> dict:
    """TopContainer#display_string and #long_display_string, parts that are missing left out."""
    kind = (container.get("type") or "").capitalize()
    barcode = f"[Barcode: {container['barcode']}]" if container.get("barcode") else None
    label = "; ".join(f"{s['level_display_string']} {s['identifier']}" for s in series) or None
    short = " ".join(p for p in (kind, f"{container.get('indicator', '')}:", label, barcode) if p)
    short = short[:-1] if short.endswith(":") else short
    profile = names.get((container.get("container_profile") or {}).get("ref"))
    places = container.get("container_locations") or []
    location = names.get(places[0]["ref"]) if places else None
    first = ", ".join(p for p in (collection[0]["identifier"], collection[0]["display_string"]) if p) if collection else None
    box = " ".join(p for p in (kind, container.get("indicator"), barcode) if p)
    return {"display_string": short, "long_display_string": ", ".join(p for p in (box, profile, location, first, label) if p)}


# What a record pointing at a container shows in the container's document (`collection`,
# `series`, publication), directly or for the nodes below it.
SHOWN = ("title", "display_string", "component_id", "level", "other_level", "publish", "suppressed", "parent", "resource")
SHOWN += ("id_0", "id_1", "id_2", "id_3")


def _containers_below(conn, registry, doc: dict, nodes_below) -> list[str]:
    """The containers that nodes below the record (`nodes_below(table, record_id)`, a SELECT of
    archival object ids) point at: one query."""
    parsed = registry.parse_uri(doc["uri"])
    tables = conn.info["fonds_tables"]
    links = link_table.readable(conn)
    query = select(links.c.target_id).where(
        links.c.source_type == "archival_object",
        links.c.field == INSTANCE_LINK,
        links.c.source_id.in_(nodes_below(tables["archival_object"], parsed.record_id)),
    )
    return [registry["top_container"].uri(i, parsed.repo_id) for i in conn.execute(query.distinct()).scalars()]


def _dependents(conn, registry, old, new, nodes_below) -> list[str]:
    found = set(instance_dependents(conn, registry, old, new))
    if old and new and any(old.get(key) != new.get(key) for key in SHOWN):
        found.update(_containers_below(conn, registry, new, nodes_below))
    return sorted(found)


def resource_container_dependents(conn, registry, old: dict | None, new: dict | None, indexed=None) -> list[str]:
    """Containers whose documents show this resource: through its own instances and those of
    its archival objects (their `collection`)."""
    return _dependents(conn, registry, old, new, lambda table, i: select(table.c.id).where(table.c.resource_id == i))


def node_container_dependents(conn, registry, old: dict | None, new: dict | None, indexed=None) -> list[str]:
    """Containers whose documents show this archival object: through its own instances and, as a
    series or an ancestor that must be published, those of the nodes below it. A new node's
    containers only when the node can change what their documents show (`_addition_shows_nothing_new`)."""
    if old is None and new is not None and indexed is not None and unchanged_since_created(new):
        containers = instance_containers(new)
        return sorted(uri for uri in containers if not _addition_shows_nothing_new(conn, registry, indexed(uri), new, uri))
    return _dependents(conn, registry, old, new, lambda table, i: hierarchy.descendants_select(table, [i]))


def _addition_shows_nothing_new(conn, registry, container: dict | None, node: dict, container_uri: str) -> bool:
    """Whether a new archival object pointing at a container, indexed as `container`, leaves the
    container's document as it is. A bulk load files folder after folder in the same box; each
    would otherwise re-render the box, reading every record in it (quadratic in the box's size).

    Exact: between two renders of a container the records pointing at it only gain new nodes
    (any other change to them re-renders it, `_dependents`), and a node adds nothing when its
    resource is in the `collection` already, its top node is a `series` entry already or cannot
    be one (not of a series level), the container is shown linked to a published record already
    or the node cannot make it so (unpublished, suppressed, or in an unpublished repository), and
    its sub-containers pointing there carry no barcode (`subcontainer_barcodes`). The display
    strings follow from the collection and the series."""
    if container is None:
        return False
    pointing = [
        item.get("sub_container") or {}
        for item in node.get("instances") or []
        if isinstance(item, dict) and ((item.get("sub_container") or {}).get("top_container") or {}).get("ref") == container_uri
    ]
    if any(sub.get("barcode_2") for sub in pointing):
        return False
    resource = (node.get("resource") or {}).get("ref")
    if resource is None or resource not in {entry.get("ref") for entry in container.get("collection") or []}:
        return False
    top_uri, top_level = _top_node(node)
    shown_series = {entry.get("ref") for entry in container.get("series") or []}
    if top_uri not in shown_series and top_level in (*SERIES_LEVELS, "otherlevel"):
        return False
    return bool(container.get("is_linked_to_published_record")) or not _may_be_published(conn, registry, node)


def _top_node(node: dict) -> tuple[str, str | None]:
    """The URI and level of the top node of a node's tree branch, from its `ancestors` (parent
    first; the resource last)."""
    nodes = [a for a in node.get("ancestors") or [] if "/archival_objects/" in (a.get("ref") or "")]
    top = nodes[-1] if nodes else node
    return top.get("ref") or top.get("uri"), top.get("level")


def _may_be_published(conn, registry, node: dict) -> bool:
    """Whether the node might count as a published record (`Publication.node`): published, not
    suppressed, in a published repository (its ancestors and resource are not looked at)."""
    if not node.get("publish") or node.get("suppressed"):
        return False
    parsed = registry.parse_uri(node.get("uri") or "")
    if parsed is None or parsed.repo_id is None:
        return True
    table = conn.info["fonds_tables"]["repository"]
    body = conn.execute(select(table.c.json).where(table.c.id == parsed.repo_id)).scalar()
    return body is None or bool(orjson.loads(body).get("publish"))
