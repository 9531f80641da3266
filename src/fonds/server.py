"""The serving process: what `fonds serve` turns into once the database is prepared.

It replaces the command's process (same PID, for a supervisor or `ps`) so that the server holds
uvicorn and the app but not the command line's libraries: Typer and Rich, imported by every
`fonds` command, were 3.6 MB of a server's RSS at start. Workers (`--workers N`) start from
this module too."""

from __future__ import annotations

import argparse
import asyncio
import sys

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from fonds.log_config import uvicorn_log_config

_STATUS_LINE = b"HTTP/1."


class HeadWithBody:
    """A connection's transport that sends a response's status line and headers together with
    the body that follows them: uvicorn writes the two as they come, each a `send` system call
    and a TCP segment of its own, and on loopback the first call alone took ~16 % of the time a
    page of 10 records took to answer (py-spy). A header block is held until the next write,
    or until the event loop's next turn (a response whose body comes later, or none); every
    other write goes out at once, after what was held. Anything else is the transport's own."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self._transport, self._loop, self._held = transport, loop, None

    def write(self, data) -> None:
        held = self._held
        if held is None and data[:7] == _STATUS_LINE:
            self._held = bytes(data)
            self._loop.call_soon(self._flush)
            return
        if held is not None:
            self._held = None
            data = held + data
        self._transport.write(data)

    def _flush(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._transport.write(held)

    def writelines(self, chunks) -> None:
        self.write(b"".join(chunks))

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def __getattr__(self, name: str):
        return getattr(self._transport, name)


class Protocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol (httptools), answering through `HeadWithBody`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(HeadWithBody(transport, self.loop))  # type: ignore[arg-type]


def run(host: str, port: int, workers: int) -> None:
    uvicorn.run(
        "fonds.app:app_from_environment",
        factory=True,
        http=Protocol,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        log_config=uvicorn_log_config(),
        # The app writes its own (fonds.api.access_log), the same lines at a fraction of the cost.
        access_log=False,
    )


def command(host: str, port: int, workers: int) -> list[str]:
    """The argument vector of a serving process: this module run by this interpreter."""
    return [sys.executable, "-m", __name__, "--host", host, "--port", str(port), "--workers", str(workers)]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m fonds.server", description="Serve an already prepared database (`fonds serve` prepares it first)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--workers", type=int, default=1)
    options = parser.parse_args()
    run(options.host, options.port, options.workers)


if __name__ == "__main__":
    main()
