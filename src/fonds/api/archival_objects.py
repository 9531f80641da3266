"""Archival-object routes beyond CRUD and trees: lookup by ref_id / component_id."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from fonds.api.deps import Services, require
from fonds.api.params import ResolveParam
from fonds.api.routing import add_route, json_response, json_schema_response
from fonds.records.service import Actor

VIEW = "view_repository"


def find_by_id(
    actor: Actor = require(VIEW),
    *,
    repo_id: int,
    app: Services,
    ref_id: Annotated[list[str], Query(alias="ref_id[]")] = [],
    component_id: Annotated[list[str], Query(alias="component_id[]")] = [],
    resolve: ResolveParam = [],
):
    return json_response(app.records.find_archival_objects(repo_id=repo_id, ref_ids=ref_id, component_ids=component_id, resolve=resolve))


FOUND = {
    "type": "object",
    "required": ["archival_objects"],
    "properties": {
        "archival_objects": {
            "type": "array",
            "items": {"type": "object", "required": ["ref"], "properties": {"ref": {"type": "string"}, "_resolved": {"type": "object"}}},
        }
    },
}


def register(router: APIRouter) -> None:
    tags = ["archival_object"]
    add_route(
        router,
        "/repositories/{repo_id}/find_by_id/archival_objects",
        find_by_id,
        methods=["GET"],
        permission=VIEW,
        summary="Find archival objects by ref_id and/or component_id",
        tags=tags,
        openapi_extra={"responses": json_schema_response(FOUND)},
    )
