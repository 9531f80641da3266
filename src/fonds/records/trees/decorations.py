"""What tree views show of a record beyond its place. `TreeViews` is what a tree declares
(`TreeSpec.views`): the fields its roots and nodes add to the shared ones, as ArchivesSpace's
LargeTree decorators and the `load_*_properties` of its older tree mixins do. The resource tree's
(`ArchivalTreeViews`: level, identifier, dates, containers, digital instances) is here; other
trees declare theirs beside their types."""

from __future__ import annotations

import html

import orjson
from sqlalchemy import select

IDENTIFIER_PARTS = ("id_0", "id_1", "id_2", "id_3")
DATE_FIELDS = (("type", "date_type"), ("label", "label"), ("expression", "expression"), ("begin", "begin"), ("end", "end"))


def parsed_title(title: str | None) -> str | None:
    """ArchivesSpace's MixedContentParser output for a title: trimmed, text escaped as XHTML.
    Titles holding markup pass through unchanged."""
    if title is None:
        return None
    title = title.strip()
    return title if "<" in title else html.escape(title, quote=False)


def level(doc: dict) -> str | None:
    return doc.get("other_level") or doc.get("level")


def identifier(doc: dict) -> str:
    return "-".join(doc[part] for part in IDENTIFIER_PARTS if doc.get(part))


def dates(doc: dict) -> list[dict]:
    return [{key: date[field] for key, field in DATE_FIELDS if date.get(field)} for date in doc.get("dates", [])]


def has_digital_instance(doc: dict) -> bool:
    return any(instance.get("digital_object") for instance in doc.get("instances", []))


def _top_container_ids(registry, docs: list[dict]) -> set[int]:
    found = set()
    for doc in docs:
        for instance in doc.get("instances", []):
            ref = (instance.get("sub_container") or {}).get("top_container", {}).get("ref")
            parsed = registry.parse_uri(ref) if ref else None
            if parsed is not None:
                found.add(parsed.record_id)
    return found


def top_containers(conn, registry, docs: list[dict]) -> dict[int, dict]:
    """The top containers the instances of `docs` point at, read in one query: id -> JSON."""
    ids = _top_container_ids(registry, docs)
    if not ids:
        return {}
    table = conn.info["fonds_tables"]["top_container"]
    return {row.id: orjson.loads(row.json) for row in conn.execute(select(table.c.id, table.c.json).where(table.c.id.in_(ids)))}


def _container_of(registry, boxes: dict[int, dict], sub: dict) -> dict | None:
    ref = (sub.get("top_container") or {}).get("ref")
    parsed = registry.parse_uri(ref) if ref else None
    return boxes.get(parsed.record_id) if parsed else None


def waypoint_containers(registry, boxes: dict[int, dict], doc: dict) -> list[dict]:
    """One entry per instance, as the tree/root and waypoint routes list them."""
    result = []
    for instance in doc.get("instances", []):
        sub = instance.get("sub_container") or {}
        box = _container_of(registry, boxes, sub) or {}
        entry = {
            "instance_type": instance.get("instance_type"),
            "top_container_type": box.get("type"),
            "top_container_indicator": box.get("indicator"),
            "top_container_barcode": box.get("barcode"),
            "type_2": sub.get("type_2"),
            "indicator_2": sub.get("indicator_2"),
            "barcode_2": sub.get("barcode_2"),
            "type_3": sub.get("type_3"),
            "indicator_3": sub.get("indicator_3"),
        }
        result.append({key: value for key, value in entry.items() if value})
    return result


def tree_containers(registry, boxes: dict[int, dict], doc: dict) -> dict:
    """`instance_types` and `containers` of the older resource_tree route (only when there are instances)."""
    instances = doc.get("instances", [])
    if not instances:
        return {}
    containers = []
    for instance in instances:
        sub = instance.get("sub_container")
        if not sub:
            continue
        entry = {}
        box = _container_of(registry, boxes, sub)
        if box is not None:
            entry["type_1"] = box.get("type") or "Container"
            entry["indicator_1"] = box.get("indicator", "") + (f" [{box['barcode']}]" if box.get("barcode") else "")
        entry.update({key: sub.get(key) for key in ("type_2", "indicator_2", "barcode_2", "type_3", "indicator_3")})
        containers.append(entry)
    return {"instance_types": [instance.get("instance_type") for instance in instances], "containers": containers}


class TreeViews:
    """A tree that shows nothing beyond the shared fields. Every method answers for a whole page of
    records at once, so a view costs a fixed number of queries however wide it is."""

    # ArchivesSpace lists a tree's published records in order (`…/ordered_records`) for resources only.
    ordered_records = False
    # Whether a node's `ancestors` carry each ancestor's level (ArchivesSpace's AncestorListing#has_level?).
    ancestor_levels = False

    def has_digital_instance(self, doc: dict) -> bool:
        return False

    def root(self, tree, doc: dict) -> dict:
        """Fields `tree/root` adds for the root record."""
        return {}

    def waypoint(self, tree, docs: list[dict]) -> list[dict]:
        """Fields each waypoint entry adds, one dict per node."""
        return [{} for _ in docs]

    def node(self, doc: dict) -> dict:
        """Fields `tree/node` adds for the node."""
        return {}

    def old_tree_root(self, tree, doc: dict, partial: bool) -> dict:
        """Fields the older whole-tree route adds to its root."""
        return {}

    def old_tree_nodes(self, tree, docs: list[dict]) -> list[dict]:
        """Fields the older whole-tree route adds to each node, one dict per node."""
        return [{} for _ in docs]


def _tree_level(doc: dict) -> str | None:
    return doc.get("other_level") if doc.get("level") == "otherlevel" else doc.get("level")


class ArchivalTreeViews(TreeViews):
    """The resource tree (ArchivesSpace's LargeTreeResource and ResourceTrees)."""

    ordered_records = True
    ancestor_levels = True

    def has_digital_instance(self, doc: dict) -> bool:
        return has_digital_instance(doc)

    def root(self, tree, doc: dict) -> dict:
        extra = {"level": level(doc), "identifier": identifier(doc)}
        boxes = top_containers(tree.conn, tree.registry, [doc])
        containers = waypoint_containers(tree.registry, boxes, doc)
        if containers:
            extra["containers"] = containers
        return extra

    def waypoint(self, tree, docs: list[dict]) -> list[dict]:
        boxes = top_containers(tree.conn, tree.registry, docs)
        extras = []
        for doc in docs:
            extra = {"identifier": doc.get("component_id"), "level": level(doc)}
            if doc.get("dates"):
                extra["dates"] = dates(doc)
            containers = waypoint_containers(tree.registry, boxes, doc)
            if containers:
                extra["containers"] = containers
            extras.append(extra)
        return extras

    def node(self, doc: dict) -> dict:
        return {"identifier": doc.get("component_id")}

    def old_tree_root(self, tree, doc: dict, partial: bool) -> dict:
        extra = {"finding_aid_filing_title": doc["finding_aid_filing_title"]} if doc.get("finding_aid_filing_title") else {}
        extra["level"] = _tree_level(doc)
        if partial:
            extra.update(tree_containers(tree.registry, top_containers(tree.conn, tree.registry, [doc]), doc))
        return extra

    def old_tree_nodes(self, tree, docs: list[dict]) -> list[dict]:
        boxes = top_containers(tree.conn, tree.registry, docs)
        return [
            {
                **({"component_id": doc["component_id"]} if doc.get("component_id") else {}),
                "level": _tree_level(doc),
                **tree_containers(tree.registry, boxes, doc),
            }
            for doc in docs
        ]
