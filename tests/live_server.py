"""A `judgeaudit serve` app on a real uvicorn server in a thread on loopback, for the serve
tests that drill its inputs (bodies, fields, conversations, access)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from tests.conftest import free_port


@contextmanager
def live_server(app) -> Iterator[int]:
    """``app`` served on 127.0.0.1 for the block; yields the port."""
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not srv.started and time.time() < deadline:
        time.sleep(0.05)
    assert srv.started, "server did not start"
    try:
        yield port
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
        app.state.batcher.close()


def raw_request(port: int, head: bytes, body: bytes = b"", timeout: float = 10.0) -> tuple[int, bytes]:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` as
    they are; the status and body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        return read_answer(s)


def read_answer(s: socket.socket) -> tuple[int, bytes]:
    """The status and body of the answer coming on ``s``."""
    data = b""
    while b"\r\n\r\n" not in data or len(data) < _length(data):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1]), data.split(b"\r\n\r\n", 1)[1]


def _length(data: bytes) -> int:
    """The bytes a whole answer takes, from its head (its Content-Length)."""
    head, _ = data.split(b"\r\n\r\n", 1)
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(head) + 4 + int(value)
    return len(data)
