"""Drills for how `judgeaudit serve`'s engine schedules requests, on loopback (a real
uvicorn server over a real small transformer): a client that leaves while queued frees
its queue slot, a sampled request decodes in the running batch beside greedy ones (and a
seed still gives the same text), and a temperature too small to divide by is greedy."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import torch

from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.live_server import live_server

PROMPT = "Q: Name a colour.\nA:"
LONG = {"temperature": 0.8, "seed": 0}  # long_lm samples 400 tokens from PROMPT so, no end of sequence


@pytest.fixture(scope="module")
def long_lm(tiny_lm, tmp_path_factory):
    """A random four-layer Llama on tiny_lm's tokenizer, its weights scaled 2x: sampling
    from it varies with the seed, and it runs hundreds of tokens before an end of sequence
    (tiny_lm answers in a few), each step costing several times what tiny_lm's does, so a
    long request really is long beside the HTTP round trip of a short one."""
    from judgeaudit.models import ModelSpec, load_model
    from judgeaudit.models.scratch import build_llama

    model = build_llama(tiny_lm.tokenizer, layers=4, hidden=256, heads=4, intermediate=1024, max_positions=512,
                        seed=1)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2)
    path = tmp_path_factory.mktemp("long_lm")
    model.save_pretrained(path)
    tiny_lm.tokenizer.save_pretrained(path)
    return load_model(ModelSpec(path=str(path), chat_template="Q: {prompt}\nA:", max_length=512), name="long")


@contextlib.contextmanager
def serving(lm, limits: ServeLimits, engine: str) -> Iterator[tuple[str, object]]:
    """(the completions URL, the engine) of a server on loopback, ended afterwards."""
    app = make_app({"long": lm}, limits, engine=engine, engine_threads=1 if engine == "process" else None)
    with live_server(app) as port:
        yield f"http://127.0.0.1:{port}/v1/completions", app.state.batcher


def _post(url: str, **body) -> httpx.Response:
    return httpx.post(url, json={"model": "long", "prompt": PROMPT, **body}, timeout=120)


def _burst(url: str, n: int) -> int:
    """How many of ``n`` requests sent at once get a 200 (the others: 503, the queue full)."""
    with ThreadPoolExecutor(n) as pool:
        codes = list(pool.map(lambda _: _post(url, max_tokens=32).status_code, range(n)))
    assert set(codes) <= {200, 503}, codes
    return codes.count(200)


def _abandon(url: str, n: int, **body) -> None:
    """Send ``n`` requests and hang up on each once it is queued."""
    port = int(url.split(":")[2].split("/")[0])
    payload = json.dumps({"model": "long", "prompt": PROMPT, **body}).encode()
    request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               + f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
    sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    for s in sockets:
        s.sendall(request)
    time.sleep(0.5)  # read and queued behind the long request
    for s in sockets:
        s.close()


def _settle(engine, within_s: float = 10.0) -> int:
    """The requests still queued or running once the server has had ``within_s`` to finish them."""
    deadline = time.monotonic() + within_s
    while engine.in_flight() and time.monotonic() < deadline:
        time.sleep(0.05)
    return engine.in_flight()


def queue_drill(lm, engine: str, *, rounds: int, ahead: int, queued: int, burst: int, limits: ServeLimits,
                long_tokens: int) -> tuple[int, int]:
    """Issue 68's drill: a burst on a fresh server; then ``rounds`` times ``ahead`` long
    sampled requests with ``queued`` more queued behind them whose clients hang up; then
    the burst again. Returns the burst's 200s (fresh, after)."""
    with serving(lm, limits, engine) as (url, batcher):
        fresh = _burst(url, burst)
        for _ in range(rounds):
            with ThreadPoolExecutor(ahead) as pool:
                longs = [pool.submit(_post, url, **LONG, max_tokens=long_tokens) for _ in range(ahead)]
                time.sleep(0.3)  # the long requests are queued or decoding
                _abandon(url, queued, max_tokens=32)
                assert all(f.result().json()["choices"][0]["finish_reason"] == "length" for f in longs)
            time.sleep(1.0)  # the hung-up requests are noticed (the app polls every 0.1 s)
        after = _burst(url, burst)
        assert after >= min(fresh, limits.max_queue), (fresh, after)  # a burst fills the whole queue again
        assert _settle(batcher) == 0
    return fresh, after


@pytest.mark.parametrize("engine", ["thread", "process"])
def test_clients_that_leave_while_queued_free_their_queue_slots(long_lm, engine):
    """One request decodes at a time (--max-batch 1), so the others queue behind two long
    ones (two: the queue drains later than the hang-ups are noticed, even on a fast host);
    before the fix, the engine process kept a slot for each hung-up one: 2 of 8 left after
    one round."""
    queue_drill(long_lm, engine, rounds=2, ahead=2, queued=6, burst=24, long_tokens=250,
                limits=ServeLimits(max_batch=1, max_queue=8, max_tokens=400))


@pytest.mark.slow
def test_the_queue_drill_at_the_issues_numbers(long_lm):
    """Issue 68 item 1 at its own numbers and the server's defaults: 5 rounds of 21
    hung-up requests behind a 250-token sampled one, then 100 at once."""
    fresh, after = queue_drill(long_lm, "process", rounds=5, ahead=1, queued=21, burst=100, long_tokens=250,
                               limits=ServeLimits())
    print(f"200s of 100 at once: {fresh} on the fresh server, {after} after the rounds")


def test_a_sampled_request_decodes_beside_greedy_ones_and_its_seed_holds(long_lm):
    """With a long sampled request in flight, short greedy ones answer before it ends (they
    used to wait for it to end: it ran alone), and its text for a seed is the same alone,
    under load, and from the model's own ``generate``.

    The order of the answers is checked, not their times: on a loaded host the short ones
    slowed with the long one and a bound on their share of its time failed while they were
    still answered mid-decode."""
    with serving(long_lm, ServeLimits(max_tokens=400), "process") as (url, batcher):
        alone = _post(url, **LONG, max_tokens=400).json()["choices"][0]["text"]

        def ended(**body) -> tuple[httpx.Response, float]:
            r = _post(url, **body)
            return r, time.monotonic()

        with ThreadPoolExecutor(5) as pool:
            long = pool.submit(ended, **LONG, max_tokens=400)
            time.sleep(0.3)  # it is decoding
            prompts = [f"Q: What is {k} plus 1?\nA:" for k in range(4)]
            shorts = list(pool.map(lambda p: ended(prompt=p, max_tokens=4), prompts))
            response, long_end = long.result()
            body = response.json()
        for r, _ in shorts:
            assert r.status_code == 200 and r.json()["choices"][0]["text"]
        assert max(end for _, end in shorts) < long_end, "a short request waited for the long one to end"
        assert body["choices"][0]["finish_reason"] == "length"
        assert body["choices"][0]["text"] == alone
        assert max(batcher.stats()["batches"]) > 1  # the greedy requests joined the sampled one
    own, _ = long_lm.generate_with_logprobs(PROMPT, max_new_tokens=400, temperature=LONG["temperature"],
                                            seed=LONG["seed"])
    assert alone == own


@pytest.mark.parametrize("path", ["completions", "chat/completions"])
def test_a_temperature_too_small_to_divide_by_is_greedy(long_lm, path):
    """``temperature: 1e-300`` made the probabilities inf/nan: a 500. Below 1e-5 (vLLM's
    bound) a request is greedy."""
    with serving(long_lm, ServeLimits(), "thread") as (url, _):
        url = url.replace("completions", path)
        body = ({"prompt": PROMPT} if path == "completions"
                else {"messages": [{"role": "user", "content": "Name a colour."}]})
        texts = []
        for temperature in (1e-300, 5e-324, 1e-6, 0.0):
            r = httpx.post(url, json={"model": "long", **body, "max_tokens": 8, "temperature": temperature,
                                      "seed": 5}, timeout=60)
            assert r.status_code == 200, r.text
            choice = r.json()["choices"][0]
            texts.append(choice["text"] if path == "completions" else choice["message"]["content"])
        assert len(set(texts)) == 1 and texts[0]
