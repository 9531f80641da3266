"""ArchivesSpace's large-tree routes (`backend/app/model/large_tree.rb`): tree/root, tree/waypoint,
tree/node and tree/node_from_root. A waypoint is a page of 200 children; every figure in it
(child counts, dates, containers) comes from a fixed number of queries, however wide the list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import orjson

from fonds.errors import BadRequest, NotFound
from fonds.records.trees import decorations, hierarchy, positions
from fonds.records.trees.positions import Siblings
from fonds.storage import driver
from fonds.storage import records as store

WAYPOINT_SIZE = 200


class _Entry(NamedTuple):
    """A node of a waypoint, as its statement reads it."""

    id: int
    repo_id: int
    json: bytes


def waypoint_counts(child_count: int) -> dict:
    return {"child_count": child_count, "waypoints": -(-child_count // WAYPOINT_SIZE), "waypoint_size": WAYPOINT_SIZE}


@dataclass
class LargeTree:
    """The tree of one root record, read in one transaction."""

    conn: object
    registry: object
    spec: object
    root: object  # the root's row
    published_only: bool = False

    @property
    def table(self):
        return self.conn.info["fonds_tables"][self.spec.node]

    @property
    def _from(self) -> str:
        """The node table as the statements run through the driver name it (quoted, as storage does)."""
        return self.conn.dialect.identifier_preparer.quote(self.spec.node)

    def siblings(self, parent_id: int | None) -> Siblings:
        return Siblings(self.table, self.spec.root_column, self.root.id, parent_id)

    def visible(self) -> list:
        """Only published nodes when asked (Fonds has no suppression, so none is suppressed)."""
        return [self.table.c.publish.is_(True)] if self.published_only else []

    def _siblings_sql(self, parent_id: int | None) -> tuple[str, tuple]:
        """(condition, parameters) of the sibling list under `parent_id`, as `siblings(…).where`
        and `visible` select it, for the statements a view runs through the driver."""
        condition, parameters = self.siblings(parent_id).sql(self.conn)
        return condition + (" AND publish IS TRUE" if self.published_only else ""), parameters

    def count_children(self, parent_id: int | None) -> int:
        where, parameters = self._siblings_sql(parent_id)
        return driver.scalar(self.conn, f"SELECT count(*) FROM {self._from} WHERE {where}", parameters)

    def child_counts(self, parent_ids: list[int]) -> dict[int, int]:
        # By parent alone, from the index of sibling lists: a node's children are of its tree.
        head = f"SELECT parent_id, count(*) FROM {self._from} WHERE " + ("publish IS TRUE AND " if self.published_only else "")
        counts: dict[int, int] = {}
        for statement, parameters in store.where_in(self.conn, self.table, head, {}, "parent_id", parent_ids, " GROUP BY parent_id"):
            counts.update(driver.rows(self.conn, statement, parameters))
        return counts

    def root_view(self) -> dict:
        doc = orjson.loads(self.root.json)
        title = doc.get("title")
        response = {
            **waypoint_counts(self.count_children(None)),
            "title": title,
            "uri": doc["uri"],
            "slugged_url": "",
            "jsonmodel_type": self.spec.root,
            "parsed_title": decorations.parsed_title(title),
            "suppressed": 0,
            "has_digital_instance": self.spec.views.has_digital_instance(doc),
            **self.spec.views.root(self, doc),
        }
        return self._precompute(response, None, "")

    def _precompute(self, response: dict, parent_id: int | None, key: str) -> dict:
        response["precomputed_waypoints"] = {key: {"0": self.waypoint(parent_id, 0)}} if response["waypoints"] > 0 else {}
        return response

    def waypoint(self, parent_id: int | None, offset: int) -> list[dict]:
        where, parameters = self._siblings_sql(parent_id)
        mark = store.placeholder(self.conn, self.table, "position")
        statement = f"SELECT id, repo_id, json FROM {self._from} WHERE {where} ORDER BY position, id LIMIT {mark} OFFSET {mark}"
        rows = [_Entry(*row) for row in driver.rows(self.conn, statement, (*parameters, WAYPOINT_SIZE, offset * WAYPOINT_SIZE))]
        counts = self.child_counts([row.id for row in rows])
        docs = [orjson.loads(row.json) for row in rows]
        node_type, views = self.registry[self.spec.node], self.spec.views
        entries = []
        for index, (row, doc, extra) in enumerate(zip(rows, docs, views.waypoint(self, docs))):
            title = doc.get("title")
            entry = {
                **waypoint_counts(counts.get(row.id, 0)),
                "title": title,
                "slugged_url": "",
                "parsed_title": decorations.parsed_title(title),
                "uri": node_type.uri(row.id, row.repo_id),
                "position": offset * WAYPOINT_SIZE + index,
                "parent_id": parent_id,
                "suppressed": 0,
                "jsonmodel_type": self.spec.node,
                "has_digital_instance": views.has_digital_instance(doc),
                **extra,
            }
            entries.append(entry)
        return entries

    def node_view(self, node) -> dict:
        doc = orjson.loads(node.json)
        where, parameters = self._siblings_sql(node.parent_id)
        before = f"SELECT count(*) FROM {self._from} WHERE {where} AND position < {store.placeholder(self.conn, self.table, 'position')}"
        response = {
            **waypoint_counts(self.count_children(node.id)),
            "title": doc.get("display_string"),
            "uri": doc["uri"],
            "position": driver.scalar(self.conn, before, (*parameters, node.position)) + 1,
            "jsonmodel_type": self.spec.node,
            "has_digital_instance": self.spec.views.has_digital_instance(doc),
            **self.spec.views.node(doc),
        }
        return self._precompute(response, node.id, doc["uri"])

    def node_from_root(self, node_ids: list[int]) -> dict:
        table = self.table
        above = hierarchy.ancestor_rows(
            self.conn, table, node_ids, columns=("display_string", "position", self.spec.root_column, "publish")
        )
        missing = [i for i in node_ids if i not in above or getattr(above[i], self.spec.root_column) != self.root.id]
        hidden = [i for i in above if self.published_only and not above[i].publish]
        if missing or any(i in hidden for i in node_ids):
            raise NotFound(self.registry[self.spec.node].not_found())
        logical = positions.logical_positions(self.conn, table, self.spec.root_column, list(above.values()), where=self.visible())
        root_uri = self.registry[self.spec.root].uri(self.root.id, self.root.repo_id)
        root_title = orjson.loads(self.root.json).get("title")
        result = {}
        for node_id in node_ids:
            path, current = [], above[node_id]
            while current.parent_id is not None:
                parent = above[current.parent_id]
                path.append(self._path_entry(parent, root_uri, logical[current.id]))
                current = parent
            path.append(
                {
                    "node": None,
                    "root_record_uri": root_uri,
                    "offset": logical[current.id] // WAYPOINT_SIZE,
                    "jsonmodel_type": self.spec.root,
                    "title": root_title,
                    "parsed_title": decorations.parsed_title(root_title),
                }
            )
            result[str(node_id)] = path[::-1]
        return result

    def _path_entry(self, parent, root_uri: str, child_position: int) -> dict:
        return {
            "node": self.registry[self.spec.node].uri(parent.id, parent.repo_id),
            "root_record_uri": root_uri,
            "jsonmodel_type": self.spec.node,
            "title": parent.display_string,
            "offset": child_position // WAYPOINT_SIZE,
            "parsed_title": decorations.parsed_title(parent.display_string),
        }


def open_tree(service, conn, root_type, root_id: int, repo_id: int, published_only: bool) -> LargeTree:
    service.check_repository(conn, root_type, repo_id)
    root = store.fetch(conn, conn.info["fonds_tables"][root_type.name], root_id, repo_id=repo_id)
    if root is None:
        raise NotFound(root_type.not_found())
    return LargeTree(conn, service.registry, root_type.tree, root, published_only)


def node_in(tree: LargeTree, uri: str, field: str):
    """The row of the node at `uri`, which must belong to this tree."""
    parsed = tree.registry.parse_uri(uri or "")
    if parsed is None or parsed.record_type.name != tree.spec.node:
        raise BadRequest({field: [f"Must be the URI of a {tree.spec.node} (you provided '{uri}')"]})
    node = store.fetch(tree.conn, tree.table, parsed.record_id, repo_id=tree.root.repo_id)
    if node is None or getattr(node, tree.spec.root_column) != tree.root.id:
        raise NotFound(tree.registry[tree.spec.node].not_found())
    return node
