"""Domain errors and the one place that turns them into ArchivesSpace-shaped JSON responses."""

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

from fonds.log_config import is_secret

log = logging.getLogger("fonds.errors")

FieldErrors = dict[str, list[str]]


class FondsError(Exception):
    status = 500

    def __init__(self, error: str | FieldErrors, **extra):
        super().__init__(error if isinstance(error, str) else orjson.dumps(error).decode())
        self.error = error
        self.extra = extra

    def body(self) -> dict:
        return {"error": self.error, **self.extra}

    def headers(self) -> dict[str, str]:
        return {}

    def __reduce__(self):
        # As raised: an error crosses from the processes writing large imports to the server,
        # and Exception's own pickling would rebuild it from its message alone.
        return _rebuilt, (self.__class__, self.error, self.extra), self.__dict__


def _rebuilt(cls: type[FondsError], error: str | FieldErrors, extra: dict) -> FondsError:
    rebuilt = cls.__new__(cls)
    FondsError.__init__(rebuilt, error, **extra)
    return rebuilt


class BadRequest(FondsError):
    """400: the request itself is wrong (unparseable, bad parameter, reference to nothing)."""

    status = 400


class Invalid(BadRequest):
    """400 for a record that fails validation: `{"error": {path: [msgs]}, "warning": {...}}`."""

    def __init__(self, errors: FieldErrors, warnings: FieldErrors | None = None):
        super().__init__(errors, warning=warnings or {})


def nested_under(error: Invalid, prefix: str) -> Invalid:
    """A record's validation errors, named by where the record sits in a batch (`children/3/title`)."""
    errors = error.error if isinstance(error.error, dict) else {"": [str(error.error)]}
    warnings = error.extra.get("warning") or {}
    return Invalid({f"{prefix}/{path}".rstrip("/"): messages for path, messages in errors.items()}, warnings)


def invalid_field(path: str, message: str) -> Invalid:
    return Invalid({path: [message]})


def missing_parameter(*names: str) -> Invalid:
    return Invalid({name: ["Parameter required but no value provided"] for name in names})


class Denied(FondsError):
    status = 403

    def __init__(self, error: str = "Access denied"):
        super().__init__(error)


class LoginFailed(Denied):
    def __init__(self):
        super().__init__("Login failed")


class NotFound(FondsError):
    status = 404


class Conflict(FondsError):
    status = 409


class SessionGone(FondsError):
    status = 412

    def __init__(self, code: str = "SESSION_GONE", error: str = "No session found for the token given"):
        super().__init__(error, code=code)


class TooLarge(FondsError):
    status = 413


class TooManyRequests(FondsError):
    status = 429

    def __init__(self, error: str, retry_after: int):
        super().__init__(error)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class ServiceBusy(TooManyRequests):
    """503: the server is busy with work of this kind (password hashing); Retry-After says when to retry."""

    status = 503


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
