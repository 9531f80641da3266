"""The tree operations the API calls, each in its own transaction: plain keyword-only functions
over the record service (`service`), for any declared TreeSpec."""

from __future__ import annotations

import orjson

from fonds.errors import NotFound
from fonds.records.trees import children as batch
from fonds.records.trees import listings, moves
from fonds.records.trees.views import node_in, open_tree
from fonds.storage import records as store


def root(service, root_type, *, root_id: int, repo_id: int, published_only: bool) -> bytes:
    with service.db.read() as conn:
        return orjson.dumps(open_tree(service, conn, root_type, root_id, repo_id, published_only).root_view())


def waypoint(service, root_type, *, root_id: int, repo_id: int, offset: int, parent_node: str | None, published_only: bool) -> bytes:
    with service.db.read() as conn:
        tree = open_tree(service, conn, root_type, root_id, repo_id, published_only)
        parent_id = node_in(tree, parent_node, "parent_node").id if parent_node else None
        return orjson.dumps(tree.waypoint(parent_id, offset))


def node(service, root_type, *, root_id: int, repo_id: int, node_uri: str, published_only: bool) -> bytes:
    with service.db.read() as conn:
        tree = open_tree(service, conn, root_type, root_id, repo_id, published_only)
        return orjson.dumps(tree.node_view(node_in(tree, node_uri, "node_uri")))


def node_from_root(service, root_type, *, root_id: int, repo_id: int, node_ids: list[int], published_only: bool) -> bytes:
    with service.db.read() as conn:
        tree = open_tree(service, conn, root_type, root_id, repo_id, published_only)
        return orjson.dumps(tree.node_from_root(node_ids))


def ordered_records(service, root_type, *, root_id: int, repo_id: int) -> bytes:
    with service.db.read() as conn:
        return orjson.dumps(listings.ordered_records(open_tree(service, conn, root_type, root_id, repo_id, False)))


def whole_tree(service, root_type, *, root_id: int, repo_id: int, limit_to: str | None) -> bytes:
    with service.db.read() as conn:
        return orjson.dumps(listings.whole_tree(open_tree(service, conn, root_type, root_id, repo_id, False), limit_to))


def children(service, node_type, *, node_id: int, repo_id: int, resolve: list[str]) -> bytes:
    with service.db.read() as conn:
        service.check_repository(conn, node_type, repo_id)
        node_row = store.fetch(conn, conn.info["fonds_tables"][node_type.name], node_id, repo_id=repo_id)
        if node_row is None:
            raise NotFound(node_type.not_found())
        return b"[" + b",".join(listings.children(service, conn, node_type, node_row, resolve)) + b"]"


def add_children(service, target_type, *, target_id: int, repo_id: int, body: bytes, actor) -> dict:
    return batch.add_children(service, target_type, target_id, repo_id, body, actor)


def set_parent(service, node_type, *, node_id: int, repo_id: int, parent_id: int | None, position: int | None, actor) -> dict:
    with service.db.write() as conn:
        service.check_repository(conn, node_type, repo_id, writing=True)
        return moves.set_parent(
            conn,
            service.registry,
            node_type,
            node_id,
            repo_id,
            parent_id=parent_id,
            position=position,
            actor=actor.username,
            now=store.utcnow(),
        )


def accept_children(service, target_type, *, target_id: int, repo_id: int, uris: list[str], position: int, actor) -> dict:
    with service.db.write() as conn:
        service.check_repository(conn, target_type, repo_id, writing=True)
        return moves.accept_children(
            conn, service.registry, target_type, target_id, repo_id, uris=uris, position=position, actor=actor.username, now=store.utcnow()
        )
