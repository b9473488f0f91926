"""A fault-injecting OpenAI-compatible endpoint on loopback (a real HTTP server in a
thread), for the endpoint client's drills: a subclass says what each request gets."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeEndpoint:
    """Every POST's JSON body goes to ``reply(path, body)``, which returns (status, payload,
    headers): a payload of bytes is sent as it is, anything else as JSON; a status of None
    sends no answer at all. ``url`` is the base URL a client takes (``.../v1``)."""

    def __init__(self) -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload, headers = endpoint.reply(self.path, body)
                if status is None:
                    return
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()  # NaN as JSON's
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply(self, path: str, body: dict) -> tuple[int | None, object, dict]:
        raise NotImplementedError

    def close(self) -> None:
        self.server.shutdown()
