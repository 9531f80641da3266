"""The fast lane: the hottest GET (one record by id) answered ahead of FastAPI's middleware,
router and thread pool, when everything it needs is at hand; likewise a page of a listing, the
tree views (`TreeRead`) and the generic writes (`RecordWrite`).

It answers only the plain success: a session the cache may serve, its permission held, the
record's stored JSON and its read-time fields (`fonds.records.plain`) read together with the
auth generation in one statement (on the event
loop with SQLite, whose readers never wait for a writer in WAL mode; in one thread-pool hop and
one round trip with PostgreSQL) and the generation unchanged since the session was cached.
Anything else — no or unknown token, a stale cache entry, a denied permission, a missing record,
query parameters other than `resolve[]` (and `page`, `page_size` for a listing), a type whose
read-time fields only Python computes (agents), a `resolve[]` reaching such a type —
goes down the ordinary path, which gives the same answers as without the lane (412, 403, 404,
400, `resolve[]`). The lane therefore changes no behaviour, only the cost of the common case.

Profiled before it existed, a GET of one accession cost about 1.1 ms of server CPU: the router's
scan of several hundred routes, nine middleware layers each wrapping `send`, a thread-pool hop,
and four SQLAlchemy executes (BEGIN, the generation, the row, COMMIT)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.routing import BaseRoute, Match
from starlette.types import Message, Receive, Scope, Send

from fonds.api import trees
from fonds.api.crud import LOOP_CREATE_MAX_BYTES, submit_create_as_cached_user, submitted_answer, write_as_cached_user
from fonds.api.middleware import CACHE_CONTROL, log_unexpected
from fonds.api.params import listing_from_query
from fonds.auth import generation
from fonds.auth.permissions import has_permission
from fonds.auth.sessions import cached_user
from fonds.errors import FondsError
from fonds.records.pages import MAX_INTEGER, QuickPage, page_json, quick_page
from fonds.records.plain import ROW, StoredAnswer, by_id_sql, stored_answer
from fonds.records.refs import parse_resolve, resolved_bodies
from fonds.records.registry import RecordType, Registry
from fonds.records.trees import operations
from fonds.records.trees.views import WAYPOINT_SIZE
from fonds.storage.quick import Busy

log = logging.getLogger("fonds.errors")
SERVICE_SESSION, ASPACE_SESSION = b"x-service-session", b"x-archivesspace-session"
# Longer digit strings fall outside 64-bit integers: the ordinary path refuses them.
MAX_ID_DIGITS = 18
# Pages up to this size are read on the event loop (SQLite); larger ones in a thread.
INLINE_PAGE_SIZE = 50
# Waypoints further in are the ordinary path's: their OFFSET is past a 32-bit integer, which
# PostgreSQL refuses (a 400 the lane would only find by failing).
MAX_WAYPOINT = (2**31 - 1) // WAYPOINT_SIZE
# Targets of `resolve[]` are read this many ids a statement at most.
RESOLVE_CHUNK = 512

Handler = Callable[[Scope, Send, list[int]], Awaitable[bool]]


def session_token(scope: Scope) -> str | None:
    """As `deps.token_in_headers`: the first value of each header, X-Service-Session first."""
    service = aspace = None
    for name, value in scope["headers"]:
        if name == SERVICE_SESSION and service is None:
            service = value
        elif name == ASPACE_SESSION and aspace is None:
            aspace = value
    token = service or aspace
    return token.decode("latin-1") if token else None


async def send_json(send: Send, body: bytes, status: int = 200, extra: dict[str, str] | None = None) -> None:
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json"), CACHE_CONTROL]
    headers += [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def generation_if_allowed(services, scope: Scope, permission: str, repo_id: int | None) -> int | None:
    """The auth generation at which the cached session of the request's token was read, if the
    cache may serve it and it holds `permission` (None: the ordinary path decides)."""
    token = session_token(scope)
    cached = cached_user(services.settings, services.sessions, token) if token else None
    if cached is None or not has_permission(cached[0].grants, permission, repo_id):
        return None
    return cached[1]


async def run_quick(quick, inline: bool, work, *args):
    """A quick read on the event loop when it cannot block (SQLite, small), else in one hop."""
    if inline and not quick.blocking:
        return work(*args)
    if quick.executor is not None:
        return await asyncio.get_running_loop().run_in_executor(quick.executor, work, *args)
    return await run_in_threadpool(work, *args)


class Unresolvable(Exception):
    """A `resolve[]` target the lane cannot answer as the ordinary path does: it answers instead."""


@dataclass(frozen=True)
class Resolver:
    """`resolve[]` as `RecordService.with_resolved` does it (`refs.resolved_bodies`), each type's
    targets read by one statement of their answers in the caller's snapshot."""

    registry: Registry
    answers: dict[str, StoredAnswer]

    def bodies(self, query, bodies: list[bytes], wanted: dict) -> list[bytes]:
        def load(record_type: RecordType, ids: list[int]) -> list[tuple[str, bytes]]:
            answer = self.answers.get(record_type.name)
            if answer is None:
                raise Unresolvable()
            found = []
            for start in range(0, len(ids), RESOLVE_CHUNK):
                chunk = ids[start : start + RESOLVE_CHUNK]
                # Padded to a power of two (repeating an id): few distinct statements to prepare.
                chunk += chunk[-1:] * ((1 << (len(chunk) - 1).bit_length()) - len(chunk))
                marks = ", ".join("?" * len(chunk))
                sql = f'SELECT {ROW}.id, {ROW}.repo_id, {answer.columns} FROM "{record_type.name}" {ROW} WHERE {ROW}.id IN ({marks})'
                for row in query(sql, tuple(chunk)):
                    body = answer.body(row[2:])
                    if body is None:
                        raise Unresolvable()
                    found.append((record_type.uri(row[0], row[1]), body))
            return found

        return resolved_bodies(self.registry, load, bodies, wanted)


def resolve_wanted(query: bytes) -> dict | None:
    """What a query of `resolve[]` parameters only asks to resolve (None: another parameter, or
    one the ordinary path refuses)."""
    if b"\x00" in unquote_to_bytes(query):
        return None
    params = QueryParams(query)
    if any(key != "resolve[]" for key in params.keys()):
        return None
    try:
        return parse_resolve(params.getlist("resolve[]"))
    except FondsError:
        return None


@dataclass(frozen=True)
class RecordRead:
    """GET one record of a type whose answer one statement reads (and `resolve[]`'s targets one
    statement a type, in the same snapshot)."""

    permission: str
    repo_scoped: bool
    sql: str
    answer: StoredAnswer
    resolver: Resolver

    async def __call__(self, services, scope: Scope, send: Send, ints: list[int]) -> bool:
        if not services.quick.available:
            return False
        wanted = resolve_wanted(scope["query_string"]) if scope["query_string"] else {}
        if wanted is None:
            return False
        repo_id, params = (ints[0], (ints[1], ints[0])) if self.repo_scoped else (None, (ints[0],))
        generation_seen = generation_if_allowed(services, scope, self.permission, repo_id)
        if generation_seen is None:
            return False
        try:
            if wanted:
                found = await run_quick(services.quick, True, services.quick.snapshot, self._resolving(params, wanted))
            else:
                found = await services.quick.row_soon(self.sql, params)
                found = found and (found[0], self.answer.body(found[1:]))
        except (Busy, Unresolvable):
            return False
        if not found or found[0] != generation_seen or found[1] is None:
            return False
        await send_json(send, found[1])
        return True

    def _resolving(self, params: tuple, wanted: dict):
        def read(query) -> tuple[int, bytes] | None:
            rows = query(self.sql, params)
            body = self.answer.body(rows[0][1:]) if rows else None
            if body is None:
                return None
            return rows[0][0], self.resolver.bodies(query, [body], wanted)[0]

        return read


@dataclass(frozen=True)
class ListPage:
    """GET a page of a listing (`page`, `page_size`, `resolve[]`) of a type whose answers one
    statement reads and whose block counts describe its listings: the page, its total and the
    generation in one statement (`pages.QuickPage`), so in one round trip on PostgreSQL."""

    permission: str
    sql: QuickPage
    resolver: Resolver

    async def __call__(self, services, scope: Scope, send: Send, ints: list[int]) -> bool:
        query = scope["query_string"]
        if not services.quick.available or b"\x00" in unquote_to_bytes(query):
            return False
        try:
            listing = listing_from_query(services, QueryParams(query))
            wanted = parse_resolve(listing.resolve)
        except FondsError:
            return False
        if listing.page is None or (listing.page.number - 1) * listing.page.size > MAX_INTEGER:
            return False
        repo_id = ints[0] if self.sql.repo_scoped else None
        generation_seen = generation_if_allowed(services, scope, self.permission, repo_id)
        if generation_seen is None:
            return False
        page = listing.page
        params = self.sql.params(repo_id, (page.number - 1) * page.size, page.size)
        quick = services.quick
        try:
            if wanted:
                inline = page.size <= INLINE_PAGE_SIZE
                found = await run_quick(quick, inline, quick.snapshot, self._resolving(params, wanted))
            elif page.size <= INLINE_PAGE_SIZE or quick.blocking:
                found = self.sql.read(await quick.rows_soon(self.sql.sql, params))
            else:
                found = self.sql.read(await run_quick(quick, False, quick.rows, self.sql.sql, params))
        except (Busy, Unresolvable):
            return False
        generation_now, repository_found, total, bodies = found
        # No repository: the ordinary path answers 400.
        if generation_now != generation_seen or not repository_found or bodies is None:
            return False
        await send_json(send, page_json(page.number, page.size, total, bodies))
        return True

    def _resolving(self, params: tuple, wanted: dict):
        def read(query):
            generation_now, repository_found, total, bodies = self.sql.read(query(self.sql.sql, params))
            if bodies is not None:
                bodies = self.resolver.bodies(query, bodies, wanted)
            return generation_now, repository_found, total, bodies

        return read


@dataclass(frozen=True)
class TreeRead:
    """GET a tree's root, one of its waypoints or a node's view (`tree/root`, `tree/waypoint`,
    `tree/node`), with no parameter but those the route reads (`trees.VIEW_PARAMETERS`), each
    once: in one thread-pool hop and one read transaction, the auth generation confirmed and the
    view made as the route makes it (`trees.operations`). A refusal of any kind (a bad parameter,
    a root or node not found) sends nothing: the ordinary path answers it."""

    root: RecordType
    view: str

    async def __call__(self, services, scope: Scope, send: Send, ints: list[int]) -> bool:
        arguments = self._arguments(scope["query_string"])
        if arguments is None:
            return False
        repo_id, root_id = ints
        generation_seen = generation_if_allowed(services, scope, self.root.permissions.read, repo_id)
        if generation_seen is None:
            return False
        body = await run_in_threadpool(self._read, services, generation_seen, repo_id, root_id, arguments)
        if body is None:
            return False
        await send_json(send, body)
        return True

    def _arguments(self, query: bytes) -> dict | None:
        if b"\x00" in unquote_to_bytes(query):
            return None
        given = QueryParams(query).multi_items()
        names = [name for name, _ in given]
        if len(set(names)) != len(names) or not set(names) <= set(trees.VIEW_PARAMETERS[self.view]):
            return None
        try:
            arguments = trees.view_arguments(self.view, dict(given))
        except FondsError:
            return None
        return None if arguments.get("offset", 0) > MAX_WAYPOINT else arguments

    def _read(self, services, generation_seen: int, repo_id: int, root_id: int, arguments: dict) -> bytes | None:
        with services.db.read() as conn:  # the view's own read joins this transaction
            if generation.current(conn) != generation_seen:
                return None
            try:
                return getattr(operations, self.view)(services.records, self.root, root_id=root_id, repo_id=repo_id, **arguments)
            except FondsError:
                return None


@dataclass(frozen=True)
class RecordWrite:
    """POST a new record, POST an update of one, DELETE one (no query parameters): the body read
    here, then, in one thread-pool hop, the write done for the cached session
    (`crud.write_as_cached_user`); a small create is validated here instead and handed to the
    thread writing creates, with no hop of its own (`_written`). When that writes nothing (no
    cached session, a refusal of any kind before the write) the ordinary path answers, the body
    replayed to it, and gives the answers it always gives (412, 403, 400, 413). The hop is to the
    services' own executor (`write_threads`), cheaper than anyio's."""

    record_type: RecordType
    action: str

    async def __call__(self, services, scope: Scope, receive: Receive, send: Send, ints: list[int]) -> Receive | None:
        """None when answered; else the `receive` the ordinary path must read the request from."""
        if scope["query_string"]:
            return receive
        body = b""
        if self.action != "delete":
            body, receive = await _read_body(scope, receive, services.settings.max_body_bytes)
            if body is None:
                return receive
        token = session_token(scope)
        # The path's integers: the repository's id first (where the type has one), the record's last.
        repo_id = ints[0] if self.record_type.repo_scoped else None
        record_id = ints[-1] if self.action != "create" else None
        try:
            written = await self._written(services, token, body, repo_id, record_id)
        except Exception as exc:  # nothing was written (a write is answered once committed)
            log_unexpected(exc, scope["method"], scope["path"])
            written = None
        if written is None:
            # The body was read here: the ordinary path reads it from this `receive`.
            return receive
        if isinstance(written, FondsError):
            await send_json(send, orjson.dumps(written.body()), written.status, written.headers())
        else:
            await send_json(send, orjson.dumps(written))
        return None

    async def _written(self, services, token: str | None, body: bytes, repo_id: int | None, record_id: int | None):
        """`crud.write_as_cached_user`'s answer. A small create is validated here, on the event
        loop, and written by the thread writing creates (`crud.submit_create_as_cached_user`)."""
        loop = asyncio.get_running_loop()
        if self.action == "create" and len(body) <= LOOP_CREATE_MAX_BYTES:
            written = loop.create_future()
            pending = submit_create_as_cached_user(services, self.record_type, token, body, repo_id, lambda _: _settle(loop, written))
            if pending is not None:
                await written
                return submitted_answer(pending)
        return await loop.run_in_executor(
            services.write_threads, write_as_cached_user, services, self.record_type, self.action, token, body, repo_id, record_id
        )


def _settle(loop: asyncio.AbstractEventLoop, future: asyncio.Future) -> None:
    """From the thread that wrote a create: wake the request waiting for it."""
    try:
        loop.call_soon_threadsafe(_set_done, future)
    except RuntimeError:  # the loop is closed: no one waits any more
        pass


def _set_done(future: asyncio.Future) -> None:
    if not future.done():  # not if the request was cancelled meanwhile
        future.set_result(None)


async def _read_body(scope: Scope, receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """The request body, and a `receive` that gives it again (then whatever follows); None past
    `limit` (the ordinary path refuses it with 413) or when the client has gone."""
    declared = dict(scope["headers"]).get(b"content-length", b"")
    if declared.isdigit() and int(declared) > limit:
        return None, receive
    chunks, size, more = [], 0, True
    while more and size <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return None, _replay(chunks, True, receive, last=message)
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        more = message.get("more_body", False)
    body = b"".join(chunks)
    return (body if size <= limit else None), _replay([body], more, receive)


def _replay(chunks: list[bytes], more: bool, receive: Receive, last: Message | None = None) -> Receive:
    pending: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": more}]
    if last is not None:
        pending.append(last)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


# The writes the lane takes: (action, method).
WRITES = (("create", "POST"), ("update", "POST"), ("delete", "DELETE"))


class FastLane:
    def __init__(self, app, handlers: dict[tuple, Handler], writes: dict[str, dict[tuple, RecordWrite]] | None = None):
        """`writes`: by method, the write handlers by path shape."""
        self.app, self.handlers, self.writes = app, handlers, writes or {}

    @staticmethod
    def build(app, routes: Iterable[BaseRoute], registry: Registry, dialect: str) -> FastLane:
        routes = list(routes)
        by_name = {getattr(route, "name", None): route for route in routes}
        handlers: dict[tuple, Handler] = {}
        answers = {t.name: answer for t in registry if (answer := stored_answer(t, dialect, registry)) is not None}
        resolver = Resolver(registry, answers)
        for name, answer in answers.items():
            record_type = registry[name]
            route = generic_route(by_name, record_type, "read")
            if route is None or not _first_match(routes, route):
                continue
            sql = by_id_sql(record_type, answer, f"({generation.SUBQUERY})")
            handlers[_shape(route.path)] = RecordRead(record_type.permissions.read, record_type.repo_scoped, sql, answer, resolver)
        for record_type in registry:
            page_sql = quick_page(record_type, dialect, registry, generation.SUBQUERY)
            route = generic_route(by_name, record_type, "list")
            if page_sql is None or route is None or record_type.list_is_plain_array or not _first_match(routes, route):
                continue
            handlers[_shape(route.path)] = ListPage(record_type.permissions.read, page_sql, resolver)
        for spec in registry.trees():
            root = registry[spec.root]
            for view in trees.VIEW_PARAMETERS:
                route = by_name.get(f"{root.name}_tree_{view}_get")
                if root.repo_scoped and route is not None and _first_match(routes, route):
                    handlers[_shape(route.path)] = TreeRead(root, view)
        writes: dict[str, dict[tuple, RecordWrite]] = {}
        for record_type in registry:
            for action, method in WRITES:
                route = generic_route(by_name, record_type, action)
                if route is not None and _first_match(routes, route, method):
                    writes.setdefault(method, {})[_shape(route.path)] = RecordWrite(record_type, action)
        return FastLane(app, handlers, writes)

    def match(self, path: str, handlers: dict | None = None) -> tuple[Handler, list[int]] | None:
        key, ints = [], []
        for part in path.split("/"):
            if part.isdigit() and part.isascii() and len(part) <= MAX_ID_DIGITS:
                key.append(None)
                ints.append(int(part))
            else:
                key.append(part)
        handler = (self.handlers if handlers is None else handlers).get(tuple(key))
        return (handler, ints) if handler is not None else None

    async def answer(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """None when the lane answered; else nothing was sent and the ordinary path answers,
        reading the request from the `receive` returned (the body the lane read, then the rest)."""
        if scope["type"] == "http" and scope["method"] in self.writes:
            hit = self.match(scope["path"], self.writes[scope["method"]])
            services = getattr(self.app.state, "fonds", None)
            if hit is None or services is None:
                return receive
            handler, ints = hit
            try:
                return await handler(services, scope, receive, send, ints)
            except Exception as exc:  # as for reads; nothing was written (a write is answered once committed)
                log_unexpected(exc, scope["method"], scope["path"])
                return receive
        return None if await self.answered(scope, receive, send) else receive

    async def answered(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Whether the lane answered the request (False: nothing was sent, take the ordinary path)."""
        if scope["type"] != "http" or scope["method"] != "GET":
            return False
        hit = self.match(scope["path"])
        services = getattr(self.app.state, "fonds", None)
        if hit is None or services is None:
            return False
        handler, ints = hit
        try:
            return await handler(services, scope, send, ints)
        except Exception as exc:  # a bug here must not cost the request: the ordinary path answers
            log_unexpected(exc, scope["method"], scope["path"])
            return False


def generic_route(by_name: dict, record_type: RecordType, action: str) -> BaseRoute | None:
    """The route `crud.register_record_routes` made for the type's `action`, if it made one: a
    type may leave an action to routes of its own (users, a group's update), whose names can be
    the same (FastAPI names a route after its function: `update_user`) but whose rules are not."""
    return by_name.get(f"{action}_{record_type.name}") if action in record_type.actions else None


def _shape(template: str) -> tuple:
    return tuple(None if part.startswith("{") else part for part in template.split("/"))


def _first_match(routes: list[BaseRoute], route: BaseRoute, method: str = "GET") -> bool:
    """Whether `route` is the one the router would pick for its own paths (no earlier route
    claims them), so the lane never answers for another route."""
    sample = "/".join("1" if part is None else part for part in _shape(route.path))
    scope = {"type": "http", "path": sample, "method": method, "root_path": ""}
    for candidate in routes:
        if candidate.matches(scope)[0] == Match.FULL:
            return candidate is route
    return False
