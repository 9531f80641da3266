"""Dependencies shared by every route: the app's services, the session, permissions, bodies."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from fonds.api.errors import json_error
from fonds.auth.passwords import HashingGate
from fonds.auth.permissions import has_permission
from fonds.auth.sessions import SessionCache, SessionUser, resolve_session
from fonds.config import Settings
from fonds.errors import BadRequest, Denied, ServiceBusy, SessionGone, TooLarge
from fonds.records.enumerations import Enumerations
from fonds.records.registry import Registry
from fonds.records.service import Actor, RecordService
from fonds.search.engine import SearchEngine
from fonds.storage.db import Database
from fonds.storage.quick import QuickReads

SESSION_HEADERS = ("x-service-session", "x-archivesspace-session")
PUBLIC = "public"
# Routes any logged-in user may call (their own account); checks on the target are inside.
LOGGED_IN = "logged_in"
# Threads doing the fast lane's writes: only one at a time writes (SQLite's one write lock; a
# group of creates is written by one), so a few suffice, and fewer threads contend less for two cores.
WRITE_THREADS = 8


@dataclass(frozen=True)
class AppServices:
    settings: Settings
    db: Database
    registry: Registry
    records: RecordService
    sessions: SessionCache
    hashing: HashingGate
    enumerations: Enumerations
    search: SearchEngine
    quick: QuickReads
    # The fast lane's writes run here: a plain executor's hop costs the event loop a fraction of
    # anyio's (its limiter, cancel scope and checkpoints measured ~10% of a create's CPU).
    write_threads: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="fonds-write"))


async def services(request: Request) -> AppServices:
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


async def current_user(request: Request) -> SessionUser | None:
    """The logged-in user (resolved by `session_checked` before the route), None when no token was sent."""
    return request.scope.get("state", {}).get(SESSION_USER)


CurrentUser = Annotated[SessionUser | None, Depends(current_user)]
SESSION_USER = "fonds_session_user"


def _resolve(services: AppServices, token: str | None) -> SessionUser | None:
    return resolve_session(services.db, services.settings, services.sessions, token) if token else None


def session_checked(app: ASGIApp) -> ASGIApp:
    """Wrap a route's ASGI app so the session is resolved before anything else, as ArchivesSpace
    does: an unknown or expired token is 412 even on public routes."""

    async def check(scope: Scope, receive: Receive, send: Send) -> None:
        token = token_in_headers(Headers(scope=scope))
        if token:
            try:
                user = await run_in_threadpool(_resolve, scope["app"].state.fonds, token)
            except SessionGone as gone:
                return await json_error(gone.status, gone.body())(scope, receive, send)
            scope.setdefault("state", {})[SESSION_USER] = user
        await app(scope, receive, send)

    return check


def hashing_gated(app: ASGIApp) -> ASGIApp:
    async def gated(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with scope["app"].state.fonds.hashing:
                await app(scope, receive, send)
        except ServiceBusy as busy:
            await json_error(busy.status, busy.body(), busy.headers())(scope, receive, send)

    return gated


async def session_gone_response(request: Request) -> Response | None:
    """For requests no route matched: 412 for a bad token comes before 404 and 405."""
    token = session_token(request)
    if not token:
        return None
    try:
        await run_in_threadpool(_resolve, request.app.state.fonds, token)
    except SessionGone as gone:
        return json_error(gone.status, gone.body())
    return None


async def serve_read(request: Request, permission: str, work: Callable[[], bytes]) -> Response:
    """The hot read routes: session, permission and `work` in one thread-pool hop and one
    read transaction (`Database.read` is re-entrant), the bytes `work` returns sent as they are."""
    services: AppServices = request.app.state.fonds
    token = session_token(request)
    repo_id = _repo_in_path(request)

    def run() -> bytes:
        with services.db.read():
            user = _resolve(services, token)
            if user is None or not has_permission(user.grants, permission, repo_id):
                raise Denied()
            return work()

    return Response(await run_in_threadpool(run), media_type="application/json")


def path_int(request: Request, name: str) -> int:
    raw = request.path_params[name]
    try:
        return int(raw)
    except ValueError:
        # Worded as FastAPI's parameter validation is (errors.py), which answers for other routes.
        raise BadRequest({name: [f"Wanted type Integer but got '{raw}'"]}) from None


def _repo_in_path(request: Request) -> int | None:
    return path_int(request, "repo_id") if "repo_id" in request.path_params else None


def actor_of(user: SessionUser) -> Actor:
    return Actor(user.user_id, user.username, user.grants)


def require(permission: str):
    """A dependency granting access only to holders of `permission` in the URL's repository."""

    async def check(request: Request, user: CurrentUser) -> Actor:
        if user is None:
            raise Denied()
        if not has_permission(user.grants, permission, _repo_in_path(request)):
            raise Denied()
        return actor_of(user)

    check.fonds_permission = permission
    return Depends(check)


def require_self_or(permission: str):
    """For /users/{id}: the user themself, or a holder of `permission`."""

    async def check(request: Request, user: CurrentUser) -> Actor:
        if user is None:
            raise Denied()
        if str(user.user_id) != request.path_params.get("id") and not has_permission(user.grants, permission, None):
            raise Denied()
        return actor_of(user)

    return Depends(check)


def require_login():
    async def check(user: CurrentUser) -> Actor:
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
