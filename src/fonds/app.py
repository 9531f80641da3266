"""`create_app(settings)`: the FastAPI application with its database and services."""

from __future__ import annotations

import asyncio
import functools
import logging
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import APIRouter, FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fonds import __version__, allocator, collector
from fonds.api import batch, enumerations, groups, locations, lookups, openapi, search, sessions, system, trees, users
from fonds.api.access_log import AccessLog
from fonds.api.crud import register_record_routes
from fonds.api.deps import AppServices, session_gone_response
from fonds.api.errors import install_error_handlers
from fonds.api.fastlane import FastLane
from fonds.api.middleware import CACHE_CONTROL, CatchAll, RefuseNul
from fonds.auth.passwords import HashingGate
from fonds.auth.sessions import SessionCache
from fonds.bootstrap import bootstrap
from fonds.config import Settings, load_settings
from fonds.import_writer import REGISTRY_SOURCE, import_writer
from fonds.model import REGISTRY, database_metadata
from fonds.records.enumerations import Enumerations
from fonds.records.service import RecordService
from fonds.search.engine import SearchEngine
from fonds.storage import counts, migrate, siblings
from fonds.storage.db import REQUEST_THREADS, Database, backend_name, sqlite_file
from fonds.storage.quick import QuickReads

log = logging.getLogger("fonds")


class CacheControl:
    """ArchivesSpace marks every response private and not to be reused without revalidation."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_header(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), CACHE_CONTROL]
            await send(message)

        await self.app(scope, receive, send_with_header)


def open_services(settings: Settings) -> AppServices:
    """The database migrated and bootstrapped, the record service and the (not yet started) search engine."""
    allocator.configure(settings.malloc_arenas)  # for the CLI's commands; the server's app did it before
    collector.configure()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.effective_database_url, database_metadata())
    migrate.upgrade(db)
    counts.install(db, [record_type.name for record_type in REGISTRY])
    siblings.install(db, {t.name: t.tree.root_column for t in REGISTRY if t.is_tree_node})
    # A database in memory is this process's alone: no other process can write to it.
    writer = functools.partial(import_writer, settings) if db.kind == "postgresql" or sqlite_file(db.url) is not None else None
    records = RecordService(db, REGISTRY, settings, registry_source=REGISTRY_SOURCE, import_writer=writer)
    bootstrap(records)
    lists = Enumerations(db, records.list_usage)
    search = SearchEngine(settings, db, REGISTRY, records.render)
    return AppServices(
        settings=settings,
        db=db,
        registry=REGISTRY,
        records=records,
        enumerations=lists,
        search=search,
        sessions=SessionCache(),
        hashing=HashingGate(),
        quick=QuickReads(db.url),
    )


IDLE_CHECK_SECONDS = 10.0


async def _release_memory(services: AppServices, every: float) -> None:
    """What malloc freed in its arenas (the indexer's batches, a page of 250 records, a password
    hash, the compiled schemas of types not written lately) stays in RSS until trimmed; trimmed on
    a thread, so the event loop never waits. And the process validating large imports is stopped
    once idle (`every` 0: that only, every IDLE_CHECK_SECONDS)."""

    def release() -> None:
        services.records.import_validation.stop_if_idle()
        if every:
            # Dropping compiled schemas frees native memory (milliseconds): off the loop as well.
            services.records.validator.drop_unused()
            allocator.release_free_memory()

    while True:
        await asyncio.sleep(every or IDLE_CHECK_SECONDS)
        await anyio.to_thread.run_sync(release)


@functools.cache
def api_routes() -> tuple[BaseRoute, ...]:
    """Every route of the API. A route holds nothing of one app (its handler finds the services
    on the request: `request.app.state.fonds`), so a process builds them once however many apps
    it creates; building them (FastAPI inspects every endpoint's signature) is most of the time
    `create_app` takes, and the test suite creates an app for each test."""
    router = APIRouter()
    for module in (system, enumerations, sessions, users, groups, locations, batch, search):
        module.register(router)
    for record_type in REGISTRY:
        register_record_routes(router, record_type)
    trees.register(router, REGISTRY)
    lookups.register(router, REGISTRY)
    return tuple(router.routes)


def _without_body(send: Send) -> Send:
    async def head_only(message: Message) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            message = {**message, "body": b""}
        await send(message)

    return head_only


class FondsApp(FastAPI):
    """FastAPI with the fast lane (`fonds.api.fastlane`) in front of its middleware and router."""

    fast_lane: FastLane | None = None
    access_log: AccessLog | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.access_log is not None and scope["type"] == "http":
            send = self.access_log.wrap(scope, send)
        if scope["type"] == "http" and scope["method"] == "HEAD":
            # HEAD is GET without the body (RFC 9110, 9.3.2): the same status and headers,
            # Content-Length included.
            scope, send = {**scope, "method": "GET"}, _without_body(send)
        if self.fast_lane is not None:
            receive = await self.fast_lane.answer(scope, receive, send)
            if receive is None:
                return
        await super().__call__(scope, receive, send)


def create_app(settings: Settings) -> FondsApp:
    # Before any thread allocates: glibc gives a thread's first allocation an arena of its own
    # until the cap is set, and `open_services` runs on a worker thread (so the server had 2
    # arenas whatever the setting).
    allocator.configure(settings.malloc_arenas)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        # Start-up owns migration, bootstrap and the search indexer (with its writer lock);
        # shut-down stops the indexer before the database goes.
        services = await run_in_threadpool(open_services, settings)
        # Start-up's garbage (migrations, the admin's password hash, schemas) goes back at once.
        allocator.release_free_memory()
        # No more request threads than pooled connections (and fewer threads fighting over two cores).
        anyio.to_thread.current_default_thread_limiter().total_tokens = REQUEST_THREADS
        app.state.fonds = services
        services.search.start()
        releasing = asyncio.create_task(_release_memory(services, settings.memory_release_seconds))
        try:
            yield
        finally:
            releasing.cancel()
            await run_in_threadpool(services.search.stop)
            services.records.import_validation.close()
            services.quick.close()
            services.write_threads.shutdown(wait=True)
            services.db.dispose()

    app = FondsApp(title="Fonds", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None)
    install_error_handlers(app, before_http_error=session_gone_response)
    # Routes go straight onto the app's router, so every one is a plain APIRoute that the
    # permission walk (tests/api/test_route_permissions.py) can inspect.
    app.router.routes.extend(api_routes())
    app.fast_lane = FastLane.build(app, app.router.routes, REGISTRY, backend_name(settings.effective_database_url))
    spec: dict = {}
    app.openapi = lambda: spec or spec.update(openapi.build(app, app.state.fonds.records.schemas.schemas, REGISTRY)) or spec
    # Added innermost first: CacheControl(CatchAll(RefuseNul(routes))); sessions are checked per route.
    app.add_middleware(RefuseNul)
    app.add_middleware(CatchAll)
    app.add_middleware(CacheControl)
    return app


def app_from_environment() -> FastAPI:
    """Factory for `uvicorn --factory` (used by `fonds serve`): with the access log, if on (it
    replaces uvicorn's own, which `fonds serve` turns off)."""
    settings = load_settings()
    app = create_app(settings)
    if settings.access_log:
        app.access_log = AccessLog()
    return app
