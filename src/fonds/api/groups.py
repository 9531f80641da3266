"""Group routes with ArchivesSpace's parameters (`group_code`, `with_members`), and the public
permission list. Creating and deleting groups are the generic record routes."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Query

from fonds.api.deps import PUBLIC, RawBody, Services, require
from fonds.api.routing import WRITE_RESULT, add_route, json_response, json_schema_response, record_body, record_response
from fonds.api.sessions import parse_bool
from fonds.auth.permissions import permission_listing
from fonds.auth.types import group_code_key
from fonds.errors import BadRequest, missing_parameter
from fonds.records.service import Actor

MANAGE = "manage_repository"
LEVELS = ("repository", "global", "all")
WithMembers = Annotated[str | None, Query(description="Default true. Read: list members. Update: replace the member list.")]


def list_groups(
    actor: Actor = require(MANAGE),
    *,
    repo_id: int,
    app: Services,
    group_code: Annotated[str | None, Query(description="Only the group with this code.")] = None,
):
    matching = {"group_code_key": group_code_key(group_code)} if group_code else None
    return json_response(app.records.list_all(app.registry["group"], repo_id=repo_id, resolve=[], matching=matching))


def read_group(actor: Actor = require(MANAGE), *, repo_id: int, id: int, app: Services, with_members: WithMembers = None):
    body = app.records.read(app.registry["group"], id, repo_id=repo_id, resolve=[])
    if parse_bool("with_members", with_members, True):
        return json_response(body)
    doc = orjson.loads(body)
    doc.pop("member_usernames", None)
    return json_response(doc)


def update_group(actor: Actor = require(MANAGE), *, repo_id: int, id: int, app: Services, body: RawBody, with_members: WithMembers = None):
    options = {"with_members": parse_bool("with_members", with_members, True)}
    return json_response(app.records.update(app.registry["group"], id, body, repo_id=repo_id, actor=actor, options=options))


def list_permissions(level: Annotated[str | None, Query(description="repository, global or all")] = None):
    if not level:
        raise missing_parameter("level")
    if level not in LEVELS:
        raise BadRequest({"level": [f"Must be one of {', '.join(LEVELS)} (you provided '{level}')"]})
    return json_response(permission_listing(level))


PERMISSION = {
    "type": "object",
    "required": ["permission_code", "description", "level", "uri", "jsonmodel_type"],
    "properties": {
        "permission_code": {"type": "string"},
        "description": {"type": "string"},
        "level": {"type": "string", "enum": ["repository", "global"]},
        "uri": {"type": "string"},
        "jsonmodel_type": {"type": "string", "const": "permission"},
    },
}


def register(router: APIRouter) -> None:
    tags = ["group"]
    base, item = "/repositories/{repo_id}/groups", "/repositories/{repo_id}/groups/{id}"
    add_route(
        router,
        base,
        list_groups,
        methods=["GET"],
        permission=MANAGE,
        summary="The repository's groups",
        tags=tags,
        openapi_extra={"responses": record_response("group", many=True)},
    )
    add_route(
        router,
        item,
        read_group,
        methods=["GET"],
        permission=MANAGE,
        summary="Read a group",
        tags=tags,
        openapi_extra={"responses": record_response("group")},
    )
    add_route(
        router,
        item,
        update_group,
        methods=["POST"],
        permission=MANAGE,
        summary="Update a group (whole record, current lock_version)",
        tags=tags,
        openapi_extra={**record_body("group"), "responses": WRITE_RESULT},
    )
    add_route(
        router,
        "/permissions",
        list_permissions,
        methods=["GET"],
        permission=PUBLIC,
        summary="Permission codes and levels",
        tags=["permission"],
        openapi_extra={"responses": json_schema_response({"type": "array", "items": PERMISSION})},
    )
