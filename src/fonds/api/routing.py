"""Adding routes so that none can forget its permission: every route names one, or `PUBLIC`."""

from __future__ import annotations

import inspect

import orjson
from fastapi import APIRouter, Path
from fastapi.routing import APIRoute
from starlette.responses import Response
from starlette.routing import request_response

from fonds.api.deps import hashing_gated, session_checked

JSON = "application/json"


def json_response(content: bytes | dict | list) -> Response:
    body = content if isinstance(content, bytes) else orjson.dumps(content)
    return Response(body, media_type=JSON)


def add_route(
    router: APIRouter,
    path: str,
    endpoint,
    *,
    methods: list[str],
    permission: str,
    fast=None,
    checks_session: bool = True,
    hashes_password: bool = False,
    **kwargs,
) -> APIRoute:
    """`fast`: a plain Starlette handler that serves the route instead of FastAPI's per-request
    machinery (dependency solving, a thread-pool hop per sync dependency), resolving the session
    itself; `endpoint` then only declares the parameters, permission and OpenAPI description.
    `checks_session=False`: the route runs whatever token is sent (logging in is how a client
    with a stale token recovers). `hashes_password`: the route waits its turn at the app's hashing
    gate before taking a request thread."""
    router.add_api_route(path, endpoint, methods=methods, response_class=Response, **kwargs)
    route = router.routes[-1]
    route.fonds_permission = permission
    if hashes_password:
        route.app = hashing_gated(route.app)
    if fast is not None:
        route.app = request_response(fast)
    elif checks_session:
        route.app = session_checked(route.app)
    return route


def with_repo_id(endpoint, repo_scoped: bool):
    """Give a generic endpoint a `repo_id` path parameter only where the path has one."""
    signature = inspect.signature(endpoint)
    # FastAPI calls endpoints with keywords only, so every parameter can be keyword-only.
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values() if p.name != "repo_id"]
    if repo_scoped:
        params.insert(
            0,
            inspect.Parameter("repo_id", inspect.Parameter.KEYWORD_ONLY, annotation=int, default=Path(description="Repository id")),
        )
    endpoint.__signature__ = signature.replace(parameters=params)
    return endpoint


def record_body(schema_name: str) -> dict:
    return {"requestBody": {"required": True, "content": {JSON: {"schema": {"$ref": f"#/components/schemas/{schema_name}"}}}}}


def record_response(schema_name: str, *, many: bool = False) -> dict:
    schema = {"$ref": f"#/components/schemas/{schema_name}"}
    if many:
        schema = {"type": "array", "items": schema}
    return {"200": {"description": "OK", "content": {JSON: {"schema": schema}}}}


def json_schema_response(schema: dict, description: str = "OK") -> dict:
    return {"200": {"description": description, "content": {JSON: {"schema": schema}}}}


WRITE_RESULT = json_schema_response({"$ref": "#/components/schemas/write_result"}, "Created / Updated")
DELETE_RESULT = json_schema_response({"$ref": "#/components/schemas/delete_result"}, "Deleted")


def listing_response(schema_name: str) -> dict:
    """A listing answers in one of three shapes, chosen by its parameters."""
    record = {"$ref": f"#/components/schemas/{schema_name}"}
    page = {
        "type": "object",
        "title": "page",
        "description": "`page` given: one page of records.",
        "required": ["first_page", "last_page", "this_page", "total", "results"],
        "properties": {
            "first_page": {"type": "integer"},
            "last_page": {"type": "integer"},
            "this_page": {"type": "integer"},
            "total": {"type": "integer"},
            "results": {"type": "array", "items": record},
        },
    }
    ids = {"type": "array", "title": "all_ids", "description": "`all_ids` given: every id.", "items": {"type": "integer"}}
    records = {"type": "array", "title": "id_set", "description": "`id_set` given: those records.", "items": record}
    return json_schema_response({"oneOf": [page, ids, records]}, "A page, every id, or the records asked for")
