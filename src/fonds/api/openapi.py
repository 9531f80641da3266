"""The OpenAPI document: FastAPI's, made to tell the truth about Fonds.

FastAPI documents every operation as answering 200 or 422. Fonds never answers 422 (parameter
errors are ArchivesSpace's 400) and does answer 400, 403, 404, 409, 412, 413 and 429, all with
one error body. Record schemas come from the JSON Schemas the server validates with; listings
document their three shapes; what a client must send or will receive is marked required."""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from fonds import __version__
from fonds.api.deps import PUBLIC
from fonds.api.routing import JSON
from fonds.records.registry import Registry

LOGIN_PATH = "/users/{username}/login"
ERROR_MESSAGES = {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}
SCHEMAS = {
    "error": {
        "type": "object",
        "description": "Every error: a message, or messages by field path (validation), with warnings beside.",
        "required": ["error"],
        "properties": {
            "error": {"anyOf": [{"type": "string"}, ERROR_MESSAGES]},
            "warning": ERROR_MESSAGES,
            "code": {"type": "string", "description": "SESSION_GONE / SESSION_EXPIRED (412)"},
        },
    },
    "write_result": {
        "type": "object",
        "required": ["status", "id", "lock_version", "uri", "warnings"],
        "properties": {
            "status": {"type": "string", "enum": ["Created", "Updated"]},
            "id": {"type": "integer"},
            "lock_version": {"type": "integer"},
            "stale": {"type": ["boolean", "null"]},
            "uri": {"type": "string"},
            "warnings": {"anyOf": [ERROR_MESSAGES, {"type": "array", "maxItems": 0}]},
        },
    },
    "delete_result": {
        "type": "object",
        "required": ["status", "id"],
        "properties": {"status": {"type": "string", "const": "Deleted"}, "id": {"type": "integer"}},
    },
}


def build(app: FastAPI, record_schemas: dict, registry: Registry) -> dict:
    spec = get_openapi(title="Fonds", version=__version__, routes=app.routes, description="ArchivesSpace-compatible archival records API.")
    components = spec.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    for name, schema in record_schemas.items():
        components[name] = _as_component(schema)
    for record_type in registry:
        _require_minimum(components[record_type.name], record_type)
    components.update(SCHEMAS)
    routes = {(route.path, method.lower()): route for route in app.routes if isinstance(route, APIRoute) for method in route.methods}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            _document_statuses(operation, routes[(path, method)], method)
    return spec


def _require_minimum(component: dict, record_type) -> None:
    """`jsonmodel_type` always, and at least one field of each of the type's minimum groups."""
    component["required"] = sorted({*component.get("required", ()), "jsonmodel_type"})
    groups = [{"anyOf": [{"required": [field]} for field in group.fields]} for group in record_type.minimum]
    if groups:
        component["allOf"] = [*component.get("allOf", ()), *groups]


def _statuses(route: APIRoute, method: str, operation: dict) -> set[int]:
    # Any request: a NUL in the path or parameters (400); a stale session token (412).
    statuses = {400, 412}
    public = route.fonds_permission == PUBLIC
    if not public or route.path == LOGIN_PATH:
        statuses.add(403)
    if "{" in route.path:
        statuses.add(404)
    if method in ("post", "delete") and not public:
        statuses.add(409)
    if "requestBody" in operation and not public:
        statuses.add(413)
    if route.path == LOGIN_PATH:
        statuses.add(429)
    return statuses


def _document_statuses(operation: dict, route: APIRoute, method: str) -> None:
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)
    ok = responses.setdefault("200", {})
    ok["description"] = ok.get("description") if ok.get("description") != "Successful Response" else "OK"
    ok.setdefault("content", {JSON: {"schema": {"type": "object"}}})
    for status in sorted(_statuses(route, method, operation)):
        responses[str(status)] = {
            "description": HTTPStatus(status).phrase,
            "content": {JSON: {"schema": {"$ref": "#/components/schemas/error"}}},
        }


def _as_component(node):
    if isinstance(node, dict):
        return {
            key: (f"#/components/schemas/{value}" if key == "$ref" else _as_component(value))
            for key, value in node.items()
            if key not in ("$schema", "$id")
        }
    if isinstance(node, list):
        return [_as_component(item) for item in node]
    return node
