"""ASGI middleware that guards every request: NUL characters refused before they reach a
database, and the one place where an unexpected error or a vanished client is logged."""

from __future__ import annotations

import logging
import traceback
from urllib.parse import unquote_to_bytes

from sqlalchemy.exc import DBAPIError, StatementError
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fonds.api.errors import json_error

log = logging.getLogger("fonds.errors")
MAX_LOGGED_MESSAGE = 300
# ArchivesSpace marks every response private and not to be reused without revalidation.
CACHE_CONTROL = (b"cache-control", b"private, must-revalidate, max-age=0")


class RefuseNul:
    """A NUL in the path or a query parameter is a 400 on every database (PostgreSQL cannot
    store or compare one; SQLite would quietly accept it)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and ("\x00" in scope["path"] or b"\x00" in unquote_to_bytes(scope.get("query_string", b""))):
            error = {"error": "The request's path or parameters contain a NUL character, which is not allowed"}
            return await json_error(400, error)(scope, receive, send)
        await self.app(scope, receive, send)


def _database_error_summary(exc: StatementError) -> str:
    """The driver's message without the statement: SQL may be megabytes long and carry data."""
    original = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    first_line = (str(original).strip().splitlines() or [""])[0]
    return f"{type(original).__name__}: {first_line[:MAX_LOGGED_MESSAGE]}"


def log_unexpected(exc: Exception, method: str, path: str) -> None:
    if isinstance(exc, StatementError):
        frames = "".join(traceback.format_tb(exc.__traceback__))
        log.error("unhandled database error on %s %s: %s\nTraceback (SQL omitted):\n%s", method, path, _database_error_summary(exc), frames)
    else:
        log.error("unhandled error on %s %s", method, path, exc_info=exc)


class CatchAll:
    """Turns any exception no handler took into one log entry and a 500 JSON body (never code,
    SQL or secrets in it), instead of Starlette's re-raise that the server logs a second time.
    A client that disconnects before sending its whole request is not an error: one info line."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except ClientDisconnect:
            log.info("client disconnected before sending the whole request: %s %s", scope["method"], scope["path"])
        except Exception as exc:
            log_unexpected(exc, scope["method"], scope["path"])
            if not started:
                await json_error(500, {"error": "Internal server error"})(scope, receive, send)
