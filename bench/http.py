"""A minimal HTTP/1.1 keep-alive client on asyncio streams.

httpx spends more CPU per request than the server's cheapest routes; on a 2-core machine the
client would then be what is measured. This client does only what the bench needs: one
request at a time per connection, Content-Length or chunked bodies."""

from __future__ import annotations

import asyncio


class Connection:
    def __init__(self, host: str, port: int, headers: dict[str, str] | None = None):
        self.host, self.port = host, port
        self.headers = dict(headers or {})
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except (ConnectionError, OSError):
                pass
            self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"", content_type: str = "application/json") -> tuple[int, bytes]:
        """Send one request and return (status, body); reconnects once if the server closed the connection."""
        for attempt in (0, 1):
            if self.writer is None:
                await self._connect()
            try:
                return await self._exchange(method, path, body, content_type)
            except (ConnectionError, asyncio.IncompleteReadError, OSError):
                await self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _exchange(self, method: str, path: str, body: bytes, content_type: str) -> tuple[int, bytes]:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        if body or method in ("POST", "PUT"):
            lines += [f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            payload = await self._chunked()
        else:
            payload = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, payload

    async def _chunked(self) -> bytes:
        parts = []
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await self.reader.readuntil(b"\r\n")
                return b"".join(parts)
            parts.append(await self.reader.readexactly(size))
            await self.reader.readexactly(2)
