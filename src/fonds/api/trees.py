"""Tree routes for every declared TreeSpec (resource/archival_object, digital_object/
digital_object_component), with ArchivesSpace's paths, parameters and shapes (aspace-api.md §6,
§10.1, §10.3)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from fonds.api.deps import RawBody, Services, require
from fonds.api.params import ResolveParam
from fonds.api.routing import add_route, json_response, record_response
from fonds.errors import BadRequest, missing_parameter
from fonds.records.registry import RecordType, Registry
from fonds.records.service import Actor
from fonds.records.trees import operations

PublishedOnly = Annotated[str | None, Query(description="true: published, unsuppressed records only")]


def _integer(name: str, raw: str | None, *, required: bool, minimum: int | None = 0) -> int | None:
    if raw is None or raw == "":
        if required:
            raise missing_parameter(name)
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest({name: [f"Wanted type Integer but got '{raw}'"]}) from None
    if minimum is not None and value < minimum:
        raise BadRequest({name: [f"Must be at least {minimum} (you provided {value})"]})
    return value


def _boolean(name: str, raw: str | None) -> bool:
    if raw is None or raw == "":
        return False
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0"):
        return False
    raise BadRequest({name: [f"Wanted type Boolean but got '{raw}'"]})


# The parameters of each tree view the fast lane answers (fonds.api.fastlane.TreeRead), as
# `view_arguments` reads them.
VIEW_PARAMETERS = {
    "root": ("published_only",),
    "waypoint": ("offset", "parent_node", "published_only"),
    "node": ("node_uri", "published_only"),
}


def view_arguments(view: str, params: dict[str, str | None]) -> dict:
    """The keyword arguments of `operations.<view>` (`VIEW_PARAMETERS`) from the request's
    parameters as given (absent: None): what the route reads, and refuses, is read here."""
    arguments: dict = {}
    if view == "waypoint":
        arguments.update(offset=_integer("offset", params.get("offset"), required=True), parent_node=params.get("parent_node"))
    elif view == "node":
        if not params.get("node_uri"):
            raise missing_parameter("node_uri")
        arguments["node_uri"] = params["node_uri"]
    arguments["published_only"] = _boolean("published_only", params.get("published_only"))
    return arguments


def _root_routes(root: RecordType) -> list:
    read, update = root.permissions.read, root.permissions.update

    def tree_root(actor: Actor = require(read), *, repo_id: int, id: int, app: Services, published_only: PublishedOnly = None):
        arguments = view_arguments("root", {"published_only": published_only})
        return json_response(operations.root(app.records, root, root_id=id, repo_id=repo_id, **arguments))

    def tree_waypoint(
        actor: Actor = require(read),
        *,
        repo_id: int,
        id: int,
        app: Services,
        offset: Annotated[str | None, Query()] = None,
        parent_node: Annotated[str | None, Query()] = None,
        published_only: PublishedOnly = None,
    ):
        arguments = view_arguments("waypoint", {"offset": offset, "parent_node": parent_node, "published_only": published_only})
        return json_response(operations.waypoint(app.records, root, root_id=id, repo_id=repo_id, **arguments))

    def tree_node(
        actor: Actor = require(read),
        *,
        repo_id: int,
        id: int,
        app: Services,
        node_uri: Annotated[str | None, Query()] = None,
        published_only: PublishedOnly = None,
    ):
        arguments = view_arguments("node", {"node_uri": node_uri, "published_only": published_only})
        return json_response(operations.node(app.records, root, root_id=id, repo_id=repo_id, **arguments))

    def tree_node_from_root(
        actor: Actor = require(read),
        *,
        repo_id: int,
        id: int,
        app: Services,
        node_ids: Annotated[list[str], Query(alias="node_ids[]")] = [],
        published_only: PublishedOnly = None,
    ):
        if not node_ids:
            raise missing_parameter("node_ids")
        ids = [_integer("node_ids", raw, required=True, minimum=1) for raw in node_ids]
        flag = _boolean("published_only", published_only)
        return json_response(operations.node_from_root(app.records, root, root_id=id, repo_id=repo_id, node_ids=ids, published_only=flag))

    def ordered_records(actor: Actor = require(read), *, repo_id: int, id: int, app: Services):
        return json_response(operations.ordered_records(app.records, root, root_id=id, repo_id=repo_id))

    def whole_tree(actor: Actor = require(read), *, repo_id: int, id: int, app: Services, limit_to: Annotated[str | None, Query()] = None):
        return json_response(operations.whole_tree(app.records, root, root_id=id, repo_id=repo_id, limit_to=limit_to or None))

    listing = [("GET", "ordered_records", ordered_records, read, "Every published record of the tree, in tree order")]
    return [
        ("GET", "tree/root", tree_root, read, "The tree's root with its first waypoint of children"),
        ("GET", "tree/waypoint", tree_waypoint, read, "One waypoint (200 children) of the root or of a node"),
        ("GET", "tree/node", tree_node, read, "A node of the tree with its first waypoint of children"),
        ("GET", "tree/node_from_root", tree_node_from_root, read, "The waypoint path from the root to each node"),
        *(listing if root.tree.views.ordered_records else []),
        ("GET", "tree", whole_tree, read, "The whole tree nested (the older route), or the part shown around `limit_to`"),
        *_shared_routes(root, update),
    ]


def _shared_routes(target: RecordType, update: str) -> list:
    """Routes roots and nodes both have: batch children and accept_children."""

    def add_children(actor: Actor = require(update), *, repo_id: int, id: int, app: Services, body: RawBody):
        return json_response(operations.add_children(app.records, target, target_id=id, repo_id=repo_id, body=body, actor=actor))

    def accept_children(
        actor: Actor = require(update),
        *,
        repo_id: int,
        id: int,
        app: Services,
        children: Annotated[list[str], Query(alias="children[]")] = [],
        position: Annotated[str | None, Query()] = None,
    ):
        index = _integer("position", position, required=True)
        if not children:
            raise missing_parameter("children")
        result = operations.accept_children(app.records, target, target_id=id, repo_id=repo_id, uris=children, position=index, actor=actor)
        return json_response(result)

    return [
        ("POST", "children", add_children, update, "Create several new children at the end, all or none"),
        ("POST", "accept_children", accept_children, update, "Move existing records under this one, from `position` on"),
    ]


def _node_routes(node: RecordType) -> list:
    read, update = node.permissions.read, node.permissions.update

    def list_children(actor: Actor = require(read), *, repo_id: int, id: int, app: Services, resolve: ResolveParam = []):
        return json_response(operations.children(app.records, node, node_id=id, repo_id=repo_id, resolve=resolve))

    def set_parent(
        actor: Actor = require(update),
        *,
        repo_id: int,
        id: int,
        app: Services,
        parent: Annotated[str | None, Query()] = None,
        position: Annotated[str | None, Query()] = None,
    ):
        parent_id = _integer("parent", parent, required=False, minimum=1)
        index = _integer("position", position, required=False)
        result = operations.set_parent(app.records, node, node_id=id, repo_id=repo_id, parent_id=parent_id, position=index, actor=actor)
        return json_response(result)

    return [
        ("GET", "children", list_children, read, "Direct children as full records, in tree order"),
        ("POST", "parent", set_parent, update, "Move under another parent (none: the top level) and/or to a position"),
        *_shared_routes(node, update),
    ]


def register(router: APIRouter, registry: Registry) -> None:
    for spec in registry.trees():
        root, node = registry[spec.root], registry[spec.node]
        for record_type, routes in ((root, _root_routes(root)), (node, _node_routes(node))):
            for method, suffix, endpoint, permission, summary in routes:
                extra = {"responses": record_response(spec.node, many=True)} if (method, suffix) == ("GET", "children") else None
                add_route(
                    router,
                    f"{record_type.collection_path}/{{id}}/{suffix}",
                    endpoint,
                    methods=[method],
                    permission=permission,
                    summary=summary,
                    name=f"{record_type.name}_{suffix.replace('/', '_')}_{method.lower()}",
                    tags=[record_type.name],
                    openapi_extra=extra,
                )
