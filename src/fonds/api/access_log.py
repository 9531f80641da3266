"""One line per request, as uvicorn's access log writes it, at a fraction of its cost.

uvicorn's access log goes through `logging` for every response: a record made, a filter (ours,
hiding secrets in query strings), a formatter copying the record, and a write and flush of the
stream: 17 µs of CPU a line measured, a tenth of a cached GET. Here the line is formatted
directly, secrets hidden the same way (`fonds.log_config.redact`), and the lines written in one
go once per turn of the event loop (however many responses began in it) and flushed at once,
so none waits for a timer and none is held back past the turn that made it.

The format is uvicorn's, without colours:
`INFO:     127.0.0.1:52114 - "GET /repositories/2/accessions/1 HTTP/1.1" 200 OK`."""

from __future__ import annotations

import asyncio
import http
import select
import sys
from typing import TextIO
from urllib.parse import quote

from starlette.types import Message, Scope, Send

from fonds.log_config import redact

PREFIX = "INFO:     "
# Bytes a pipe takes in one write without interleaving another writer's (POSIX: at least 512).
PIPE_BUF = getattr(select, "PIPE_BUF", 512)
_PHRASES = {status.value: f"{status.value} {status.phrase}" for status in http.HTTPStatus}


def request_line(scope: Scope) -> str:
    """`METHOD path?query HTTP/version` as uvicorn logs it, secrets in the query hidden."""
    path = quote(scope["path"])
    query = scope.get("query_string", b"")
    if query:
        path = redact(f"{path}?{query.decode('ascii', 'replace')}")
    return f"{scope['method']} {path} HTTP/{scope.get('http_version', '1.1')}"


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else ""


class AccessLog:
    def __init__(self, stream: TextIO | None = None):
        self.stream = stream
        self._pending: list[str] = []

    def wrap(self, scope: Scope, send: Send) -> Send:
        """`send` writing the request's line when its response begins (as uvicorn does)."""

        async def logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.add(scope, message["status"])
            await send(message)

        return logged

    def add(self, scope: Scope, status: int) -> None:
        phrase = _PHRASES.get(status, f"{status} ")
        self._pending.append(f'{PREFIX}{client_address(scope)} - "{request_line(scope)}" {phrase}\n')
        if len(self._pending) == 1:
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        lines, self._pending = self._pending, []
        stream = self.stream or sys.stdout
        for chunk in _chunks(lines):
            stream.write(chunk)
            stream.flush()


def _chunks(lines: list[str]) -> list[str]:
    """The lines joined into writes of at most `PIPE_BUF` bytes where they fit: a write that
    size to a pipe is never split, so the workers of `fonds serve --workers N`, sharing one
    output, never interleave within a line."""
    chunks, current, size = [], [], 0
    for line in lines:
        length = len(line.encode())
        if current and size + length > PIPE_BUF:
            chunks.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += length
    if current:
        chunks.append("".join(current))
    return chunks
