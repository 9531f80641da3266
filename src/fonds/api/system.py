"""System routes: service info, version, schemas, the API docs page."""

from __future__ import annotations

import platform
from importlib import resources

from fastapi import APIRouter
from starlette.responses import HTMLResponse, PlainTextResponse

from fonds import __version__
from fonds.api.deps import PUBLIC, Services
from fonds.api.routing import add_route, json_response, json_schema_response
from fonds.errors import NotFound


def info(app: Services):
    return json_response(
        {
            "name": "Fonds",
            "version": __version__,
            "archivesSpaceVersion": "v4.2.1",
            "databaseProductName": app.db.kind,
            "databaseProductVersion": app.db.version,
            "python_version": platform.python_version(),
        }
    )


def version():
    return PlainTextResponse(f"Fonds (v{__version__})")


def schemas(app: Services):
    return json_response(app.records.schemas.schemas)


def schema(name: str, app: Services):
    found = app.records.schemas.schemas.get(name)
    if found is None:
        raise NotFound(f"No schema named {name!r}")
    return json_response(found)


def docs_page():
    return HTMLResponse((resources.files("fonds.api") / "docs.html").read_text())


INFO = {
    "type": "object",
    "required": ["name", "version", "archivesSpaceVersion", "databaseProductName", "databaseProductVersion"],
    "properties": {
        name: {"type": "string"} for name in ("name", "version", "archivesSpaceVersion", "databaseProductName", "databaseProductVersion")
    },
}
TEXT = {"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}}


def register(router: APIRouter) -> None:
    tags = ["system"]

    def documented(schema: dict) -> dict:
        return {"openapi_extra": {"responses": json_schema_response(schema)}}

    add_route(router, "/", info, methods=["GET"], permission=PUBLIC, summary="Service information", tags=tags, **documented(INFO))
    add_route(
        router,
        "/version",
        version,
        methods=["GET"],
        permission=PUBLIC,
        summary="Version string",
        tags=tags,
        openapi_extra={"responses": TEXT},
    )
    add_route(
        router,
        "/schemas",
        schemas,
        methods=["GET"],
        permission=PUBLIC,
        summary="Every record schema",
        tags=tags,
        **documented({"type": "object"}),
    )
    add_route(
        router,
        "/schemas/{name}",
        schema,
        methods=["GET"],
        permission=PUBLIC,
        summary="One record schema",
        tags=tags,
        **documented({"type": "object"}),
    )
    add_route(
        router, "/docs", docs_page, methods=["GET"], permission=PUBLIC, summary="API documentation page", include_in_schema=False, tags=tags
    )
