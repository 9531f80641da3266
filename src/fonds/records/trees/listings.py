"""Whole-tree listings: `ordered_records` (pre-order, published only), the older nested
`…/tree` route (`resource_tree`, `digital_object_tree`; with `limit_to`), and a node's direct
children as full records.

The whole-tree reads take the tree's rows in keyset pages of PAGE (bounded memory per
statement), build the child lists in memory and walk them without recursion."""

from __future__ import annotations

import orjson
from sqlalchemy import or_, select

from fonds.errors import BadRequest
from fonds.records.plain import splice
from fonds.records.trees import decorations, hierarchy, node_fields
from fonds.records.trees.views import LargeTree, node_in
from fonds.storage import records as store

PAGE = 5000


def _rows(tree: LargeTree, columns, where=()):
    """Every node of the tree (or those matching `where`), in keyset pages."""
    table, last = tree.table, 0
    while True:
        page = tree.conn.execute(
            select(*columns)
            .where(table.c[tree.spec.root_column] == tree.root.id, table.c.id > last, *where)
            .order_by(table.c.id)
            .limit(PAGE)
        ).all()
        yield from page
        if len(page) < PAGE:
            return
        last = page[-1].id


def _children_map(rows) -> dict:
    """parent id (None: top level) -> child ids in tree order."""
    lists: dict = {}
    for row in sorted(rows, key=lambda r: (r.position, r.id)):
        lists.setdefault(row.parent_id, []).append(row.id)
    return lists


def _preorder(children: dict, excluded: set) -> list[tuple[int, int]]:
    """(id, depth) in tree order, skipping excluded nodes and everything below them."""
    order, stack = [], [(child, 1) for child in reversed(children.get(None, []))]
    while stack:
        node_id, depth = stack.pop()
        if node_id in excluded:
            continue
        order.append((node_id, depth))
        stack += [(child, depth + 1) for child in reversed(children.get(node_id, []))]
    return order


def ordered_records(tree: LargeTree) -> dict:
    root_doc = orjson.loads(tree.root.json)
    if not root_doc.get("publish") or root_doc.get("suppressed"):
        return {"uris": [], "jsonmodel_type": "resource_ordered_records"}
    table = tree.table
    columns = (table.c.id, table.c.repo_id, table.c.parent_id, table.c.position, table.c.display_string, table.c.level, table.c.publish)
    rows = {row.id: row for row in _rows(tree, columns)}
    excluded = {row.id for row in rows.values() if not row.publish}
    order = _preorder(_children_map(rows.values()), excluded)
    other_levels = _other_levels(tree, [row.id for row in rows.values() if row.level == "otherlevel"])
    node_type = tree.registry[tree.spec.node]
    uris = [{"ref": root_doc["uri"], "display_string": root_doc.get("title"), "depth": 0, "level": decorations.level(root_doc)}]
    for node_id, depth in order:
        row = rows[node_id]
        level = other_levels.get(node_id) or row.level
        uris.append({"ref": node_type.uri(node_id, row.repo_id), "display_string": row.display_string, "depth": depth, "level": level})
    return {"uris": uris, "jsonmodel_type": "resource_ordered_records"}


def _other_levels(tree: LargeTree, ids: list[int]) -> dict[int, str]:
    rows = store.fetch_many(tree.conn, tree.table, ids, columns=("id", "json"))
    return {row.id: orjson.loads(row.json).get("other_level") for row in rows}


def whole_tree(tree: LargeTree, limit_to: str | None) -> dict:
    """The older `…/tree` route (`<root>_tree`): the whole tree nested, or (limit_to) the part
    needed to show one node."""
    table = tree.table
    columns = (table.c.id, table.c.repo_id, table.c.parent_id, table.c.position, table.c.json)
    partial = bool(limit_to)
    if partial:
        ids = _ids_of_interest(tree, limit_to)
        rows = store.fetch_many(tree.conn, table, ids, columns=[c.name for c in columns])
        with_children = set(tree.child_counts(ids))
    else:
        rows, with_children = list(_rows(tree, columns)), None
    docs = [orjson.loads(row.json) for row in rows]
    extras = tree.spec.views.old_tree_nodes(tree, docs)
    children = _children_map(rows)
    node_type = tree.registry[tree.spec.node]
    nodes = {}
    for row, doc, extra in zip(rows, docs, extras):
        nodes[row.id] = {
            "title": doc.get("display_string"),
            "id": row.id,
            "record_uri": node_type.uri(row.id, row.repo_id),
            "publish": bool(doc.get("publish")),
            "suppressed": False,
            "node_type": tree.spec.node,
            **extra,
            "has_children": row.id in with_children if partial else bool(children.get(row.id)),
        }
    for parent_id, child_ids in children.items():
        if parent_id in nodes:
            nodes[parent_id]["children"] = [nodes[i] for i in child_ids]
    for node in nodes.values():
        node.setdefault("children", [])
    return _tree_root(tree, [nodes[i] for i in children.get(None, [])], partial)


def _tree_root(tree: LargeTree, top: list[dict], partial: bool) -> dict:
    doc = orjson.loads(tree.root.json)
    return {
        "jsonmodel_type": f"{tree.spec.root}_tree",
        "title": doc.get("title"),
        "id": tree.root.id,
        "node_type": tree.spec.root,
        "publish": bool(doc.get("publish")),
        "suppressed": False,
        "children": top,
        "record_uri": doc["uri"],
        **tree.spec.views.old_tree_root(tree, doc, partial),
    }


def _ids_of_interest(tree: LargeTree, limit_to: str) -> list[int]:
    """ArchivesSpace's partial tree: the node, its ancestors, the siblings of each, its children."""
    table = tree.table
    if limit_to == "root":
        node, parents = None, [None]
    else:
        if tree.registry.parse_uri(limit_to) is None:
            raise BadRequest({"limit_to": ["Invalid value"]})
        node = node_in(tree, limit_to, "limit_to")
        above = hierarchy.ancestor_rows(tree.conn, table, [node.id], columns=())
        parents = [row.parent_id for row in above.values()] + [node.id]
    # Each list from its own index: below a node (`Siblings.where`: by parent alone), or the top level.
    wanted = [table.c.parent_id.in_([p for p in parents if p is not None])]
    if None in parents:
        wanted.append(tree.siblings(None).where)
    return list(tree.conn.execute(select(table.c.id).where(or_(*wanted))).scalars())


def children(service, conn, node_type, node, resolve: list[str]) -> list[bytes]:
    """A node's direct children as full records, in tree order (their positions are their indexes)."""
    table = conn.info["fonds_tables"][node_type.name]
    rows = conn.execute(select(table).where(table.c.parent_id == node.id).order_by(table.c.position, table.c.id)).all()
    extras = node_fields.read_extras(conn, service.registry, node_type.tree, rows, known_positions=range(len(rows)))
    own = node_type.hooks.read_extras(conn, rows) if rows else None
    if own is not None:
        extras = [{**fields, **more} for fields, more in zip(own, extras)]
    bodies = [splice(row.json, extra) for row, extra in zip(rows, extras)]
    return service.with_resolved(conn, bodies, resolve)
