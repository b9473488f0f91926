"""Drills for `judgeaudit serve` against large bodies (a real uvicorn server on loopback
over a real tiny transformer): a body over the limit is refused at once, in OpenAI's
error shape, before it is read; a long prompt under the limit is tokenised off the event
loop; neither keeps other clients waiting."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest

from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.live_server import live_server, raw_request, read_answer

ONE_TOKEN = {"model": "tiny", "prompt": "Q: What is 2 plus 3?\nA:", "max_tokens": 1}


class _Latencies:
    """1-token requests sent one after another on a thread of their own, each timed, while
    the block runs."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/v1/completions"
        self.seconds: list[float] = []
        self.codes: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                start = time.monotonic()
                self.codes.append(client.post(self.url, json=ONE_TOKEN).status_code)
                self.seconds.append(time.monotonic() - start)
                time.sleep(0.05)

    def __enter__(self) -> _Latencies:
        self.thread.start()
        time.sleep(0.3)  # a few answered before the large body comes
        return self

    def __exit__(self, *exc) -> None:
        time.sleep(0.3)
        self.stop.set()
        self.thread.join(timeout=60)


@pytest.fixture(scope="module")
def port(tiny_lm):
    with live_server(make_app({"tiny": tiny_lm}, ServeLimits())) as p:
        httpx.post(f"http://127.0.0.1:{p}/v1/completions", json=ONE_TOKEN, timeout=60)  # warm
        yield p


def test_a_50_mb_prompt_is_refused_at_once_and_others_keep_their_pace(port):
    body = json.dumps({**ONE_TOKEN, "prompt": "word " * 10_000_000}).encode()  # 50 MB
    assert len(body) > 50_000_000
    head = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode())
    with _Latencies(port) as others, socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(5)
        start = time.monotonic()

        def send() -> None:
            try:
                s.sendall(head + body)
            except OSError:  # the server answered and closed before taking it all: as it should
                pass
        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        status, answer = read_answer(s)
        took = time.monotonic() - start
    assert status == 413 and took < 1.0, (status, took)
    error = json.loads(answer)["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == 413
    assert "body" in error["message"] and "--max-body-mb" in error["message"]
    assert set(others.codes) == {200} and max(others.seconds) < 0.5, others.seconds


def test_a_body_without_a_length_is_cut_off_at_the_limit(tiny_lm):
    """A chunked body carries no Content-Length: it is counted as it comes and refused
    once past the limit."""
    with live_server(make_app({"tiny": tiny_lm}, ServeLimits(max_body_bytes=100_000))) as port:
        chunks = (json.dumps({**ONE_TOKEN, "prompt": "word " * 100_000}).encode()[i:i + 10_000]
                  for i in range(0, 600_000, 10_000))
        r = httpx.post(f"http://127.0.0.1:{port}/v1/completions", content=chunks,
                       headers={"Content-Type": "application/json"}, timeout=30)
        assert r.status_code == 413 and r.json()["error"]["message"].startswith("body:")
        r = httpx.post(f"http://127.0.0.1:{port}/v1/completions", json=ONE_TOKEN, timeout=30)
        assert r.status_code == 200


def test_a_long_prompt_under_the_limit_is_tokenised_off_the_event_loop(port):
    """1.5 MB of words: about 1.5 s to tokenise, longer than the model's context (400);
    meanwhile other clients are answered at their usual pace."""
    head = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
    body = json.dumps({**ONE_TOKEN, "prompt": "word " * 300_000}).encode()
    with _Latencies(port) as others:
        status, answer = raw_request(port, head, body, timeout=60)
    assert set(others.codes) == {200} and max(others.seconds) < 0.5, others.seconds
    assert status == 400 and json.loads(answer)["error"]["param"] == "prompt"
