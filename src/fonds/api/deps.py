"""Dependencies shared by every route: the app's services, the session, permissions, bodies."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from fonds.auth.permissions import has_permission
from fonds.auth.sessions import SessionUser, resolve_session
from fonds.config import Settings
from fonds.errors import BadRequest, Denied, SessionGone, TooLarge, json_error
from fonds.records.enumerations import Enumerations
from fonds.records.registry import Registry
from fonds.records.service import Actor, RecordService
from fonds.search.engine import SearchEngine
from fonds.storage.db import Database

SESSION_HEADERS = ("x-service-session", "x-archivesspace-session")
PUBLIC = "public"
# Routes any logged-in user may call (their own account); checks on the target are inside.
LOGGED_IN = "logged_in"


@dataclass(frozen=True)
class AppServices:
    settings: Settings
    db: Database
    registry: Registry
    records: RecordService
    enumerations: Enumerations
    search: SearchEngine


def services(request: Request) -> AppServices:
    return request.app.state.fonds


Services = Annotated[AppServices, Depends(services)]


def session_token(request: Request) -> str | None:
    return token_in_headers(request.headers)


def token_in_headers(headers) -> str | None:
    for header in SESSION_HEADERS:
        token = headers.get(header)
        if token:
            return token
    return None


def current_user(request: Request) -> SessionUser | None:
    """The logged-in user (resolved by `SessionCheck` before routing), None when no token was sent."""
    return request.scope.get("state", {}).get(SESSION_USER)


CurrentUser = Annotated[SessionUser | None, Depends(current_user)]
SESSION_USER = "fonds_session_user"
# Logging in must work whatever stale token a client still sends (it is how it recovers).
LOGIN_PATH = re.compile(r"^/users/[^/]+/login$")


class SessionCheck:
    """Resolve the session token on every path, as ArchivesSpace does before routing: an unknown
    or expired token is 412 even on public and unknown routes."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not LOGIN_PATH.match(scope["path"]):
            token = token_in_headers(Headers(scope=scope))
            if token:
                services = scope["app"].state.fonds
                try:
                    user = await run_in_threadpool(resolve_session, services.db, services.settings, token)
                except SessionGone as gone:
                    return await json_error(gone.status, gone.body())(scope, receive, send)
                scope.setdefault("state", {})[SESSION_USER] = user
        await self.app(scope, receive, send)


def _repo_in_path(request: Request) -> int | None:
    repo_id = request.path_params.get("repo_id")
    try:
        return int(repo_id) if repo_id is not None else None
    except ValueError:
        # Path parameters are validated after dependencies like this one: answer as they would.
        raise BadRequest({"repo_id": [f"Wanted type Integer but got '{repo_id}'"]}) from None


def actor_of(user: SessionUser) -> Actor:
    return Actor(user.user_id, user.username, user.grants)


def require(permission: str):
    """A dependency granting access only to holders of `permission` in the URL's repository."""

    def check(request: Request, user: CurrentUser) -> Actor:
        if user is None:
            raise Denied()
        if not has_permission(user.grants, permission, _repo_in_path(request)):
            raise Denied()
        return actor_of(user)

    check.fonds_permission = permission
    return Depends(check)


def require_self_or(permission: str):
    """For /users/{id}: the user themself, or a holder of `permission`."""

    def check(request: Request, user: CurrentUser) -> Actor:
        if user is None:
            raise Denied()
        if str(user.user_id) != request.path_params.get("id") and not has_permission(user.grants, permission, None):
            raise Denied()
        return actor_of(user)

    return Depends(check)


def require_login():
    def check(user: CurrentUser) -> Actor:
        if user is None:
            raise Denied()
        return actor_of(user)

    return Depends(check)


async def raw_body(request: Request, app: Services) -> bytes:
    """The request body, refused with 413 past the configured size (checked while streaming)."""
    limit = app.settings.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"Request body too large: the limit is {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"Request body too large: the limit is {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


RawBody = Annotated[bytes, Depends(raw_body)]
