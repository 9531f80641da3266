"""The serving process over raw HTTP/1.1: a response's head is held for its body and sent with
it (fonds.server.HeadWithBody), so what has no body, or gets it later, must still arrive."""

from __future__ import annotations

import socket

import pytest

from fonds import __version__
from tests.test_cli import free_port, start_serve, stop, wait_until_up


@pytest.fixture
def server_port(tmp_path, settings):
    port = free_port()
    process = start_serve(tmp_path, settings, port)
    try:
        wait_until_up(process, f"http://127.0.0.1:{port}", tmp_path / "serve.log")
        yield port
    finally:
        stop(process)


def read_response(raw: socket.socket, pending: bytearray, *, head_only: bool = False) -> tuple[str, bytes]:
    """One response's status line and body (by Content-Length) from the connection."""
    status, lines = read_head(raw, pending)
    length = 0 if head_only else next((int(line.split(":", 1)[1]) for line in lines if line.startswith("content-length:")), 0)
    while len(pending) < length:
        chunk = raw.recv(65536)
        assert chunk, "connection closed before the whole body"
        pending += chunk
    body = bytes(pending[:length])
    del pending[:length]
    return status, body


def read_head(raw: socket.socket, pending: bytearray) -> tuple[str, list[str]]:
    """A response's status line and its header lines, lower-cased, with nothing read past them."""
    while b"\r\n\r\n" not in pending:
        chunk = raw.recv(65536)
        assert chunk, f"connection closed before a whole head: {bytes(pending)!r}"
        pending += chunk
    head, _, rest = bytes(pending).partition(b"\r\n\r\n")
    pending[:] = rest
    status, *lines = head.decode().split("\r\n")
    return status, [line.lower() for line in lines]


def test_heads_without_bodies_pipelined_requests_and_100_continue_are_answered(server_port):
    with socket.create_connection(("127.0.0.1", server_port), timeout=10) as raw:
        pending = bytearray()
        # HEAD: GET's status and Content-Length with no body after them, then another request on
        # the same connection.
        raw.sendall(b"HEAD /version HTTP/1.1\r\nHost: x\r\n\r\n")
        status, head = read_head(raw, pending)
        assert status == "HTTP/1.1 200 OK" and f"content-length: {len(f'Fonds (v{__version__})')}" in head
        # Two requests sent at once: two whole responses, in order.
        raw.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\nGET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(raw, pending) == ("HTTP/1.1 200 OK", f"Fonds (v{__version__})".encode())
        assert read_response(raw, pending)[0] == "HTTP/1.1 404 Not Found"
        # Expect: 100-continue: the interim response comes before the client sends its body.
        form = b"password=wrong-password"
        raw.sendall(
            b"POST /users/admin/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Expect: 100-continue\r\nContent-Length: " + str(len(form)).encode() + b"\r\n\r\n"
        )
        assert read_response(raw, pending, head_only=True)[0] == "HTTP/1.1 100 Continue"
        raw.sendall(form)
        status, body = read_response(raw, pending)
        assert status == "HTTP/1.1 403 Forbidden" and b"error" in body
        # Connection: close: the whole response, then the end of the connection.
        raw.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_response(raw, pending)[0] == "HTTP/1.1 200 OK"
        assert raw.recv(65536) == b"" and not pending
