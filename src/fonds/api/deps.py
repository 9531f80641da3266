"""Dependencies shared by every route: the app's services, the session, permissions, bodies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from fonds.auth.permissions import has_permission
from fonds.auth.sessions import SessionUser, resolve_session
from fonds.config import Settings
from fonds.errors import BadRequest, Denied, TooLarge
from fonds.records.registry import Registry
from fonds.records.service import Actor, RecordService
from fonds.storage.db import Database

SESSION_HEADERS = ("x-service-session", "x-archivesspace-session")
PUBLIC = "public"


@dataclass(frozen=True)
class AppServices:
    settings: Settings
    db: Database
    registry: Registry
    records: RecordService


def services(request: Request) -> AppServices:
    return request.app.state.fonds


Services = Annotated[AppServices, Depends(services)]


def session_token(request: Request) -> str | None:
    for header in SESSION_HEADERS:
        token = request.headers.get(header)
        if token:
            return token
    return None


def current_user(request: Request, app: Services) -> SessionUser | None:
    """The logged-in user, None when no token was sent; 412 for an unknown or expired token."""
    token = session_token(request)
    return resolve_session(app.db, app.settings, token) if token else None


CurrentUser = Annotated[SessionUser | None, Depends(current_user)]


def require(permission: str):
    """A dependency granting access only to holders of `permission` in the URL's repository."""

    def check(request: Request, user: CurrentUser) -> Actor:
        if user is None:
            raise Denied()
        repo_id = request.path_params.get("repo_id")
        try:
            repo = int(repo_id) if repo_id is not None else None
        except ValueError:
            # Path parameters are validated after dependencies like this one: answer as they would.
            raise BadRequest({"repo_id": [f"Wanted type Integer but got '{repo_id}'"]}) from None
        if not has_permission(user, permission, repo):
            raise Denied()
        return Actor(user.user_id, user.username, user.is_admin)

    check.fonds_permission = permission
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
