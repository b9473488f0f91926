"""Drills for `judgeaudit serve` on loopback (a real uvicorn server over a real tiny
transformer, bounded in requests and time): every bad field is a 400 naming it, as
OpenAI's API answers; a failure keeps the connection; a client that gives up stops its
generation; the queue is bounded; waiting requests are batched, in the server's process
or in an engine process of its own."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.live_server import live_server


class _Broken:
    """A served model whose every call fails: the server's 500 path."""

    spec = type("Spec", (), {"max_length": 64})()

    def prompt_tokens(self, prompt: str) -> int:
        raise RuntimeError("weights went missing")

    def format_prompt(self, prompt: str) -> str:
        return prompt


@contextlib.contextmanager
def _serve(models: dict, limits: ServeLimits, engine: str = "thread") -> Iterator[tuple[int, object]]:
    """(port, app) of ``models`` served on loopback for the block."""
    app = make_app(models, limits, engine=engine, engine_threads=1 if engine == "process" else None)
    with live_server(app) as port:
        yield port, app


@pytest.fixture(scope="module")
def served(tiny_lm):
    with _serve({"tiny": tiny_lm, "broken": _Broken()}, ServeLimits(max_tokens=300, max_batch=16, max_queue=64)) as got:
        yield got


def _post(conn: http.client.HTTPConnection, path: str, body: dict) -> tuple[int, dict]:
    conn.request("POST", f"/v1/{path}", body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "What is 2 plus 3?"}], "max_tokens": 4}
COMPLETION = {"model": "tiny", "prompt": "Q: What is 2 plus 3?\nA:", "max_tokens": 4}


@pytest.mark.parametrize("path,change,field", [
    ("chat/completions", {"max_tokens": -5}, "max_tokens"),
    ("chat/completions", {"max_tokens": 0}, "max_tokens"),
    ("chat/completions", {"top_logprobs": -3}, "top_logprobs"),
    ("chat/completions", {"n": 3}, "n"),
    ("chat/completions", {"max_tokens": 5000}, "max_tokens"),
    ("chat/completions", {"messages": []}, "messages"),
    ("completions", {"logprobs": -1}, "logprobs"),
    ("completions", {"prompt": ""}, "prompt"),
    ("completions", {"prompt": "word " * 200_000}, "prompt"),  # about 1 MB: longer than the context
    ("completions", {"temperature": -1}, "temperature"),
])
def test_bad_fields_are_400_naming_the_field_and_keep_the_connection(served, path, change, field):
    port, _ = served
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    status, body = _post(conn, path, {**(CHAT if path.startswith("chat") else COMPLETION), **change})
    assert status == 400 and body["error"]["message"].startswith(f"{field}:"), body
    sock = conn.sock
    status, body = _post(conn, "completions", COMPLETION)
    assert status == 200 and body["choices"][0]["text"] and conn.sock is sock  # same connection


def test_a_500_is_json_and_keeps_the_connection(served):
    port, _ = served
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    status, body = _post(conn, "completions", {**COMPLETION, "model": "broken"})
    assert status == 500 and "weights went missing" in body["error"]["message"]
    sock = conn.sock
    assert _post(conn, "completions", COMPLETION)[0] == 200 and conn.sock is sock


@pytest.mark.parametrize("engine", ["thread", "process"])
def test_a_client_that_gives_up_is_not_generated_for(tiny_lm, engine):
    """Requests run one at a time behind long ones; a client that sends its request and
    hangs up is dropped from the queue (or cut short), never generated to the end, with
    the engine in the server's process or in its own."""
    with _serve({"tiny": tiny_lm}, ServeLimits(max_batch=1, max_tokens=200), engine) as (port, app):
        url = f"http://127.0.0.1:{port}/v1/completions"
        ahead = {"model": "tiny", "prompt": "Q: Name a colour.\nA:", "max_tokens": 200}
        with ThreadPoolExecutor(4) as pool:
            busy = [pool.submit(httpx.post, url, json=ahead, timeout=120) for _ in range(4)]
            time.sleep(0.2)
            body = json.dumps({**ahead, "prompt": "Q: What colour is snow?\nA:"}).encode()
            with socket.create_connection(("127.0.0.1", port)) as s:  # send, then hang up
                s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                time.sleep(0.05)
            assert all(f.result().status_code == 200 for f in busy)
        deadline = time.time() + 30
        while app.state.batcher.stats()["abandoned"] == 0 and time.time() < deadline:
            time.sleep(0.05)
        assert app.state.batcher.stats()["abandoned"] == 1


def test_waiting_requests_are_batched_and_give_the_same_text(served, tiny_lm):
    port, app = served
    prompts = [f"Q: What is {a} plus {b}?\nA:" for a in range(4) for b in range(4)]
    url = f"http://127.0.0.1:{port}/v1/completions"
    app.state.batcher.batches.clear()
    with ThreadPoolExecutor(16) as pool:
        texts = list(pool.map(lambda p: httpx.post(url, json={"model": "tiny", "prompt": p, "max_tokens": 8},
                                                   timeout=60).json()["choices"][0]["text"], prompts))
    assert max(app.state.batcher.batches) > 1  # some requests ran together
    assert texts == [tiny_lm.generate_with_logprobs(p, max_new_tokens=8)[0] for p in prompts]


def test_the_engine_process_batches_and_gives_the_same_text(tiny_lm):
    with _serve({"tiny": tiny_lm}, ServeLimits(max_batch=16), "process") as (port, app):
        assert app.state.batcher.process.pid != os.getpid()
        head = "Compare two answers to the question and say which is better.\nQuestion: "
        prompts = [f"{head}What is {a} plus {b}?\nA:" for a in range(4) for b in range(4)]
        url = f"http://127.0.0.1:{port}/v1/completions"
        with ThreadPoolExecutor(16) as pool:
            texts = list(pool.map(lambda p: httpx.post(url, json={"model": "tiny", "prompt": p, "max_tokens": 8},
                                                       timeout=60).json()["choices"][0]["text"], prompts))
        assert texts == [tiny_lm.generate_with_logprobs(p, max_new_tokens=8)[0] for p in prompts]
        stats = app.state.batcher.stats()
        assert max(stats["batches"]) > 1 and stats["reused_tokens"] > 0  # batched, the template's opening cached
        r = httpx.post(url, json={"model": "tiny", "prompt": "Q: Hi\nA:", "max_tokens": 2, "temperature": 5})
        assert r.status_code == 400 and "temperature" in r.json()["error"]["message"]  # checked before the engine
        app.state.batcher.process.kill()  # the engine dies: one clear line, not a traceback
        app.state.batcher.process.join()
        r = httpx.post(url, json={"model": "tiny", "prompt": "Q: Hi\nA:", "max_tokens": 2})
        assert r.status_code == 503 and "engine has exited" in r.json()["error"]["message"]
    assert not app.state.batcher.process.is_alive()


def test_engine_threads_are_refused_for_the_thread_engine(tiny_lm):
    """They used to be ignored silently: the thread engine decodes on this process's threads."""
    with pytest.raises(ValueError, match="process engine only"):
        make_app({"tiny": tiny_lm}, engine="thread", engine_threads=1)


def test_the_queue_is_bounded(tiny_lm):
    with _serve({"tiny": tiny_lm}, ServeLimits(max_batch=1, max_queue=2)) as (port, _):
        url = f"http://127.0.0.1:{port}/v1/completions"
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda _: httpx.post(url, json={**COMPLETION, "max_tokens": 60},
                                                       timeout=60).status_code, range(8)))
        assert 503 in codes and 200 in codes and set(codes) <= {200, 503}


def test_requests_arriving_apart_share_one_prefill_and_a_lone_one_does_not_wait(tiny_lm):
    """The batching window: under a load of four, four requests arriving 40 ms apart are
    prefilled together; a request alone (the last second's load was one) is not held."""
    from judgeaudit.serving.batching import Batcher, Job

    window = 2000.0
    batcher = Batcher({"tiny": tiny_lm}, ServeLimits(max_batch=16, batch_wait_ms=window))

    def job(k: int) -> Job:
        return Job("tiny", f"Q: What is {k} plus 1?\nA:", 4, 0.0, 0, 0)

    for f in [batcher.submit(job(k)) for k in range(4)]:  # a load of four
        f.result(timeout=60)
    batcher.prefills.clear()
    staggered = []
    for k in range(4):
        staggered.append(batcher.submit(job(k)))
        time.sleep(0.04)
    texts = [f.result(timeout=60)[0] for f in staggered]
    assert batcher.prefills == [4]
    assert texts == [tiny_lm.generate_with_logprobs(f"Q: What is {k} plus 1?\nA:", max_new_tokens=4)[0]
                     for k in range(4)]
    time.sleep(1.1)  # the load of four is more than a second old
    start = time.monotonic()
    batcher.submit(job(9)).result(timeout=60)
    assert time.monotonic() - start < window / 1000 / 2 and batcher.prefills[-1] == 1
