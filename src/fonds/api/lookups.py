"""`GET /repositories/:repo_id/find_by_id/<path>` for every record type that declares lookups
(`RecordType.lookups`): one route per type, its query parameters taken from the declaration."""

from __future__ import annotations

from fastapi import APIRouter, Request

from fonds.api.deps import Services, require
from fonds.api.params import ResolveParam
from fonds.api.routing import add_route, json_response, json_schema_response, with_repo_id
from fonds.records import lookups
from fonds.records.registry import RecordType, Registry
from fonds.records.service import Actor


def _found(record_type: RecordType) -> dict:
    ref = {"type": "object", "required": ["ref"], "properties": {"ref": {"type": "string"}, "_resolved": {"type": "object"}}}
    return {"type": "object", "required": [record_type.path], "properties": {record_type.path: {"type": "array", "items": ref}}}


def _parameters(record_type: RecordType) -> list[dict]:
    return [
        {
            "name": f"{lookup.param}[]",
            "in": "query",
            "required": False,
            "description": f"Match records whose {lookup.param} is one of these (repeat the parameter)",
            "schema": {"type": "array", "items": {"type": "string"}},
            "style": "form",
            "explode": True,
        }
        for lookup in record_type.lookups
    ]


def _register_type(router: APIRouter, record_type: RecordType) -> None:
    permission = record_type.permissions.read

    def find_by_id(request: Request, actor: Actor = require(permission), *, repo_id: int, app: Services, resolve: ResolveParam = []):
        # `ref_id[]=…` as ArchivesSpace's clients send it; a bare `ref_id=…` is taken too.
        query = request.query_params
        sent = {lookup.param: query.getlist(f"{lookup.param}[]") + query.getlist(lookup.param) for lookup in record_type.lookups}
        return json_response(lookups.find_by_id(app.records, record_type, repo_id=repo_id, sent=sent, resolve=resolve))

    names = " and/or ".join(lookup.param for lookup in record_type.lookups)
    add_route(
        router,
        f"/repositories/{{repo_id}}/find_by_id/{record_type.path}",
        with_repo_id(find_by_id, True),
        methods=["GET"],
        permission=permission,
        summary=f"Find {record_type.name} records by {names}",
        name=f"find_{record_type.name}_by_id",
        tags=[record_type.name],
        openapi_extra={"parameters": _parameters(record_type), "responses": json_schema_response(_found(record_type))},
    )


def register(router: APIRouter, registry: Registry) -> None:
    for record_type in registry:
        if record_type.lookups:
            _register_type(router, record_type)
