"""`register_record_routes(router, record_type)`: list, create, read, update and delete routes for one registered type."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request
from sqlalchemy.exc import DataError
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from fonds.api.deps import RawBody, Services, actor_of, path_int, raw_body, require, serve_read, session_token
from fonds.api.deps import _resolve as resolve_user
from fonds.api.params import ListingParams, ResolveParam, SuppressedParam, listing_from_query
from fonds.api.routing import (
    DELETE_RESULT,
    WRITE_RESULT,
    add_route,
    json_response,
    listing_response,
    record_body,
    record_response,
    with_repo_id,
)
from fonds.auth import generation
from fonds.auth.permissions import has_permission
from fonds.auth.sessions import cached_user
from fonds.errors import Denied, FondsError
from fonds.records.grouped_creates import PendingCreate, Precondition, PreconditionChanged, RefusedInWrite
from fonds.records.registry import RecordType
from fonds.records.service import Actor
from fonds.records.suppression import set_suppressed


def _repo_id(request: Request) -> int | None:
    return path_int(request, "repo_id") if "repo_id" in request.path_params else None


def as_cached_user(
    services, permission: str, token: str | None, repo_id: int | None, write: Callable[[Actor, Precondition], dict]
) -> dict | FondsError | None:
    """`write` done for the session the cache holds, on condition that the auth generation it
    was read at is still current in the writing transaction (so the session and the permission
    are as good as read there). A FondsError: the refusal made in that transaction, the answer.
    None: nothing written, the ordinary path decides (no cached session, a permission it lacks,
    a changed generation, and any refusal before the write, which must come after the
    session's own 412 and 403)."""
    cached = _cached_actor(services, permission, token, repo_id)
    if cached is None:
        return None
    try:
        return write(*cached)
    except RefusedInWrite as refused:
        return refused.refusal
    except LEFT_TO_THE_ORDINARY_PATH:
        return None


# What a write for a cached session leaves to the ordinary path, which answers it after the
# session's own checks: a refusal before the write, a changed auth generation, and a value the
# database cannot hold (an id past PostgreSQL's integer range: its 400).
LEFT_TO_THE_ORDINARY_PATH = (FondsError, PreconditionChanged, DataError, OverflowError)


def _cached_actor(services, permission: str, token: str | None, repo_id: int | None) -> tuple[Actor, Precondition] | None:
    """The actor of the session the cache holds, if it has `permission`, and the precondition a
    write for it must meet (the auth generation the session was read at)."""
    cached = cached_user(services.settings, services.sessions, token) if token else None
    if cached is None or not has_permission(cached[0].grants, permission, repo_id):
        return None
    user, seen = cached
    return actor_of(user), Precondition(generation.SUBQUERY, seen)


def write_as_cached_user(
    services, record_type: RecordType, action: str, token: str | None, body: bytes, repo_id: int | None, record_id: int | None = None
) -> dict | FondsError | None:
    """A create, update or delete (`action`; `record_id` for the last two) as `as_cached_user`."""
    records = services.records

    def write(actor: Actor, precondition: Precondition) -> dict:
        if action == "create":
            return records.create(record_type, body, repo_id=repo_id, actor=actor, precondition=precondition)
        if action == "update":
            return records.update(record_type, record_id, body, repo_id=repo_id, actor=actor, precondition=precondition)
        return records.delete(record_type, record_id, repo_id=repo_id, actor=actor, precondition=precondition)

    return as_cached_user(services, record_type.permissions.for_action(action), token, repo_id, write)


# A create whose body is at most this is validated on the event loop (`submit_create_as_cached_user`):
# a small record's validation takes less than the thread hop and lock waits it saves, and one of
# this size holds the loop no longer than a thread holding the interpreter lock may (its switch
# interval, 5 ms). Measured: an accession of 133 bytes 0.05 ms, one of 16 KB of text 0.05 ms,
# one of 150 dates in 9.5 KB 0.5 ms (the cost is in subrecords, not bytes).
LOOP_CREATE_MAX_BYTES = 16 * 1024


def submit_create_as_cached_user(
    services, record_type: RecordType, token: str | None, body: bytes, repo_id: int | None, on_done: Callable[[PendingCreate], None]
) -> PendingCreate | None:
    """A create as `write_as_cached_user` makes it, for the event loop: validated here and queued
    to be written (`GroupedCreates.submit`), `on_done` called once it is written or refused
    (`submitted_answer` then gives the answer). None: nothing queued; `write_as_cached_user`
    decides (no cached session, a permission it lacks, a body refused before the write, refused
    there again once the value lists are read afresh)."""
    cached = _cached_actor(services, record_type.permissions.for_action("create"), token, repo_id)
    if cached is None:
        return None
    try:
        clean, warnings, _ = services.records.prepare_body(record_type, body)
    except LEFT_TO_THE_ORDINARY_PATH:
        return None
    actor, precondition = cached
    pending = PendingCreate(record_type, body, clean, warnings, repo_id, actor, precondition=precondition, on_done=on_done)
    services.records.grouped_creates.submit(pending)
    return pending


def submitted_answer(pending: PendingCreate) -> dict | FondsError | None:
    """What `as_cached_user` answers for a create `submit_create_as_cached_user` queued, once done."""
    error = pending.error
    if error is None:
        return pending.result
    if isinstance(error, FondsError):
        return error  # refused in the writing transaction, where its precondition held
    if isinstance(error, LEFT_TO_THE_ORDINARY_PATH):
        return None
    raise error


def register_record_routes(router: APIRouter, record_type: RecordType) -> None:
    perms = record_type.permissions
    base = record_type.collection_path
    item = f"{base}/{{id}}"
    scoped = record_type.repo_scoped
    name = record_type.name

    def list_records(actor: Actor = require(perms.read), *, app: Services, params: ListingParams, repo_id: int | None = None):
        """Declares the parameters and OpenAPI description; `fast_list` serves the requests."""

    async def fast_list(request: Request) -> Response:
        return await serve_read(request, perms.read, lambda: listed(request))

    def listed(request: Request) -> bytes:
        # Parameters are checked after the permission, as FastAPI solved dependencies first.
        services = request.app.state.fonds
        params, records, repo_id = listing_from_query(services, request.query_params), services.records, _repo_id(request)
        if params.page is not None:
            return records.list_page(record_type, repo_id=repo_id, page=params.page, resolve=params.resolve)
        if params.id_set is not None:
            return records.list_all(record_type, repo_id=repo_id, resolve=params.resolve, ids=params.id_set)
        return records.list_ids(record_type, repo_id=repo_id)

    def list_plain(actor: Actor = require(perms.read), *, app: Services, resolve: ResolveParam = [], repo_id: int | None = None):
        return json_response(app.records.list_all(record_type, repo_id=repo_id, resolve=resolve))

    def create_record(actor: Actor = require(perms.create), *, app: Services, body: RawBody, repo_id: int | None = None):
        """Declares the parameters and OpenAPI description; `fast_create` serves the requests."""

    async def fast_create(request: Request) -> Response:
        # Plain Starlette: the body is read here, then session, permission, validation and the
        # write run in one thread-pool hop (FastAPI's dependencies took one hop each).
        services, token, repo_id = request.app.state.fonds, session_token(request), _repo_id(request)
        body = await raw_body(request, services)

        def create() -> dict:
            written = write_as_cached_user(services, record_type, "create", token, body, repo_id)
            if isinstance(written, FondsError):
                raise written
            if written is not None:
                return written
            user = resolve_user(services, token)
            if user is None or not has_permission(user.grants, perms.create, repo_id):
                raise Denied()
            return services.records.create(record_type, body, repo_id=repo_id, actor=actor_of(user))

        return json_response(await run_in_threadpool(create))

    def read_record(actor: Actor = require(perms.read), *, id: int, app: Services, resolve: ResolveParam = [], repo_id: int | None = None):
        """Declares the parameters and OpenAPI description; `fast_read` serves the requests."""

    async def fast_read(request: Request) -> Response:
        resolve = request.query_params.getlist("resolve[]")
        records = request.app.state.fonds.records

        def read() -> bytes:
            record_id = path_int(request, "id")
            return records.read(record_type, record_id, repo_id=_repo_id(request), resolve=resolve)

        return await serve_read(request, perms.read, read)

    def update_record(actor: Actor = require(perms.update), *, id: int, app: Services, body: RawBody, repo_id: int | None = None):
        return json_response(app.records.update(record_type, id, body, repo_id=repo_id, actor=actor))

    def delete_record(actor: Actor = require(perms.delete), *, id: int, app: Services, repo_id: int | None = None):
        return json_response(app.records.delete(record_type, id, repo_id=repo_id, actor=actor))

    def suppress_record(
        actor: Actor = require("suppress_archival_record"),
        *,
        id: int,
        app: Services,
        suppressed: SuppressedParam,
        repo_id: int | None = None,
    ):
        return json_response(set_suppressed(app.db, record_type, id, repo_id=repo_id, value=suppressed, username=actor.username))

    lister, list_answers = (
        (list_plain, record_response(name, many=True)) if record_type.list_is_plain_array else (list_records, listing_response(name))
    )
    fast = {"read": fast_read, "list": None if record_type.list_is_plain_array else fast_list, "create": fast_create}
    routes = {
        "list": (base, lister, "GET", perms.read, f"List {name} records", {"responses": list_answers}),
        "create": (base, create_record, "POST", perms.create, f"Create a {name}", {**record_body(name), "responses": WRITE_RESULT}),
        "read": (item, read_record, "GET", perms.read, f"Read a {name}", {"responses": record_response(name)}),
        "update": (
            item,
            update_record,
            "POST",
            perms.update,
            f"Update a {name} (whole record, current lock_version)",
            {**record_body(name), "responses": WRITE_RESULT},
        ),
        "delete": (item, delete_record, "DELETE", perms.delete, f"Delete a {name} permanently", {"responses": DELETE_RESULT}),
    }
    if record_type.suppressible:
        add_route(
            router,
            f"{item}/suppressed",
            with_repo_id(suppress_record, scoped),
            methods=["POST"],
            permission="suppress_archival_record",
            summary=f"Suppress or unsuppress a {name}",
            name=f"suppress_{name}",
            tags=[name],
        )
    for action in record_type.actions:
        path, endpoint, method, permission, summary, extra = routes[action]
        add_route(
            router,
            path,
            with_repo_id(endpoint, scoped),
            methods=[method],
            permission=permission,
            summary=summary,
            name=f"{action}_{name}",
            openapi_extra=extra,
            tags=[name],
            fast=fast.get(action),
        )
