"""Login and logout."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request

from fonds.api.deps import PUBLIC, Services, session_token
from fonds.api.routing import add_route, json_response, json_schema_response
from fonds.auth import login as login_service
from fonds.auth.sessions import end_session
from fonds.auth.types import normal_username
from fonds.errors import BadRequest, missing_parameter


def parse_bool(name: str, raw: str | None, default: bool) -> bool:
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise BadRequest({name: [f"Wanted type Boolean but got '{raw}'"]})


def login(
    username: str,
    request: Request,
    app: Services,
    password: Annotated[str | None, Query(description="The password (or send it as a form field).")] = None,
    expiring: Annotated[str | None, Query(description="false: a long-lived session.")] = None,
    password_form: Annotated[str | None, Form(alias="password")] = None,
    expiring_form: Annotated[str | None, Form(alias="expiring")] = None,
):
    name = normal_username(username)
    if name is None:
        raise BadRequest("Invalid username")
    secret = password_form if password_form is not None else password
    if secret is None or secret == "":
        raise missing_parameter("password")
    keep = parse_bool("expiring", expiring_form if expiring_form is not None else expiring, True)
    address = request.client.host if request.client else None
    return json_response(login_service.login(app.records, username=name, password=secret, expiring=keep, address=address))


def logout(request: Request, app: Services):
    token = session_token(request)
    ended = bool(token) and end_session(app.db, token)
    return json_response({"status": "session_logged_out" if ended else "no_active_session"})


LOGGED_IN_RESPONSE = {
    "type": "object",
    "required": ["session", "user"],
    "properties": {
        "session": {"type": "string"},
        "user": {"$ref": "#/components/schemas/user"},
        "expire_after_seconds": {"type": "integer"},
    },
}
LOGGED_OUT = {
    "type": "object",
    "required": ["status"],
    "properties": {"status": {"type": "string", "enum": ["session_logged_out", "no_active_session"]}},
}


def register(router: APIRouter) -> None:
    tags = ["sessions"]
    add_route(
        router,
        "/users/{username}/login",
        login,
        methods=["POST"],
        permission=PUBLIC,
        checks_session=False,
        hashes_password=True,
        summary="Log in; returns a session token",
        tags=tags,
        openapi_extra={"responses": json_schema_response(LOGGED_IN_RESPONSE)},
    )
    add_route(
        router,
        "/logout",
        logout,
        methods=["POST"],
        permission=PUBLIC,
        summary="End the current session",
        tags=tags,
        openapi_extra={"responses": json_schema_response(LOGGED_OUT)},
    )
