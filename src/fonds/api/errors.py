"""The one place that turns errors into ArchivesSpace-shaped JSON responses: fonds.errors' own,
FastAPI's parameter errors, Starlette's 404 and 405, and values the database cannot hold."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Route

from fonds.errors import FieldErrors, FondsError
from fonds.log_config import is_secret

log = logging.getLogger("fonds.errors")


def json_error(status: int, body: dict, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)


def _describe_validation_error(err: dict) -> tuple[str, str]:
    """Name a FastAPI parameter error after the parameter, with ArchivesSpace's wording."""
    loc = [str(part) for part in err.get("loc", ()) if part not in ("query", "path", "body", "header", "form")]
    name = loc[0] if loc else "request"
    if err.get("type") == "missing":
        return name, "Parameter required but no value provided"
    wanted = {"int_parsing": "Integer", "bool_parsing": "Boolean", "int_type": "Integer"}.get(err.get("type", ""), "a valid value")
    got = "[redacted]" if is_secret(name) else err.get("input")
    return name, f"Wanted type {wanted} but got '{got}'"


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette's own Allow names only the first route's)."""
    path = request.url.path
    methods = {
        m for route in request.app.router.routes if isinstance(route, Route) and route.path_regex.match(path) for m in route.methods or ()
    }
    return sorted(methods)


def install_error_handlers(app: FastAPI, before_http_error: Callable[[Request], Awaitable[Response | None]] | None = None) -> None:
    """`before_http_error`: consulted first for 404/405 and other framework errors (the session
    check of requests no route matched); a response it returns wins."""

    @app.exception_handler(FondsError)
    async def _fonds_error(request: Request, exc: FondsError) -> Response:
        return json_error(exc.status, exc.body(), exc.headers())

    @app.exception_handler(RequestValidationError)
    async def _param_error(request: Request, exc: RequestValidationError) -> Response:
        errors: FieldErrors = {}
        for err in exc.errors():
            name, message = _describe_validation_error(err)
            errors.setdefault(name, []).append(message)
        return json_error(400, {"error": errors})

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        early = await before_http_error(request) if before_http_error else None
        if early is not None:
            return early
        if exc.status_code == 404:
            return json_error(404, {"error": f"No route matches {request.method} {request.url.path}"})
        if exc.status_code == 405:
            headers = {**(exc.headers or {}), "Allow": ", ".join(_allowed_methods(request))}
            return json_error(405, {"error": f"Method {request.method} is not allowed on {request.url.path}"}, headers)
        return json_error(exc.status_code, {"error": str(exc.detail)}, dict(exc.headers or {}))

    @app.exception_handler(DataError)
    @app.exception_handler(OverflowError)
    async def _unstorable(request: Request, exc: Exception) -> Response:
        # A client's value the database cannot hold or compare: an integer past its range (any
        # backend), a NUL character or over-long text (PostgreSQL). Bad input, not a server fault.
        log.info("value refused by the database on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        return json_error(400, {"error": "A value in the request is out of range or cannot be stored"})

    # Any other exception: fonds.api.middleware.CatchAll (a handler for `Exception` here would
    # answer, then be re-raised by Starlette for the server to log a second time).
