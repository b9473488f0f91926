"""`judgeaudit serve` scores echoed prompts (``echo`` with ``logprobs``: the likelihood
judges' requests) in one forward pass with the others waiting beside them
(``judgeaudit.serving.scoring_batch``), on loopback over a real tiny transformer: the
log-probs equal each prompt's alone whatever it is batched with, a client that hangs up
while queued leaves the queue, and a full queue answers 503."""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.live_server import live_server

TOL = 1e-5
# lengths from a few tokens to most of tiny_lm's 128-token context: a short row pads to the longest
PROMPTS = ([f"Q: What is {k} plus {k + 1}?\nA: The answer is {2 * k + 1}." for k in range(10)]
           + ["Q: Name a colour.\nA:", "Snow",
              "Q: " + " and ".join(f"fact {k} is true" for k in range(12)) + "?\nA: Certainly, all of them."]
           + [f"Q: What colour is item {k}?\nA: It is blue, as are items {k + 1} to {k + 9}." for k in range(11)])


def _echo(url: str, prompt, **kw) -> httpx.Response:
    return httpx.post(url, json={"model": "tiny", "prompt": prompt, "max_tokens": 0, "echo": True,
                                 "logprobs": 0}, timeout=120, **kw)


def _scores(choice: dict) -> tuple[list[str], np.ndarray]:
    lp = choice["logprobs"]
    assert lp["token_logprobs"][0] is None  # the first token has nothing before it
    return lp["tokens"], np.array(lp["token_logprobs"][1:], dtype=float)


def _settle(scorer, within_s: float = 10.0) -> int:
    deadline = time.monotonic() + within_s
    while scorer.in_flight() and time.monotonic() < deadline:
        time.sleep(0.05)
    return scorer.in_flight()


def _until(condition, within_s: float = 10.0) -> None:
    """Wait until ``condition()``; fail where it is not so within ``within_s``."""
    deadline = time.monotonic() + within_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert condition()


def test_a_batch_of_echoes_equals_each_alone(tiny_lm):
    """The backend's batched scoring (right padding, no mask) gives each row what it gets
    alone, short rows beside a long one included, and in any order."""
    alone = [tiny_lm.echo_logprobs(p) for p in PROMPTS]
    assert len({len(t) for t, _, _ in alone}) > 5  # the batch really pads
    for texts, want in ((PROMPTS, alone), (PROMPTS[::-1], alone[::-1])):
        for (tok, lp, off), (tok1, lp1, off1) in zip(tiny_lm.echo_logprobs_batch(texts), want):
            assert tok == tok1 and off == off1 and lp[0] is None
            np.testing.assert_allclose(lp[1:], lp1[1:], atol=TOL, rtol=0)


@pytest.mark.parametrize("engine", ["process", "thread"])
def test_concurrent_echoes_are_scored_together_and_equal_one_at_a_time(tiny_lm, engine):
    """16 clients at once against one at a time: the same tokens, log-probs within 1e-5
    (and the local backend's), with passes of several rows; a request's list of prompts
    shares one pass."""
    app = make_app({"tiny": tiny_lm}, ServeLimits(), engine=engine,
                   engine_threads=1 if engine == "process" else None)
    scorer = app.state.scorer
    with live_server(app) as port:
        url = f"http://127.0.0.1:{port}/v1/completions"
        one = [_scores(_echo(url, p).json()["choices"][0]) for p in PROMPTS]
        assert set(scorer.stats()["passes"]) == {1}  # one at a time, each alone
        with ThreadPoolExecutor(16) as pool:
            many = list(pool.map(lambda p: _scores(_echo(url, p).json()["choices"][0]), PROMPTS * 2))
        passes = scorer.stats()["passes"][len(PROMPTS):]
        listed = [_scores(c) for c in _echo(url, PROMPTS[:8]).json()["choices"]]
        assert scorer.stats()["passes"][-1] == 8  # the list's prompts, one pass
    assert max(passes) > 1 and sum(passes) == 2 * len(PROMPTS), passes
    local = [_scores({"logprobs": {"tokens": t, "token_logprobs": lp}}) for t, lp, _ in
             (tiny_lm.echo_logprobs(p) for p in PROMPTS)]
    for (tok, lp), (tok1, lp1) in zip(many + listed, (one * 2) + one[:8]):
        assert tok == tok1
        np.testing.assert_allclose(lp, lp1, atol=TOL, rtol=0)
    for (tok, lp), (tok1, lp1) in zip(one, local):
        assert tok == tok1
        np.testing.assert_allclose(lp, lp1, atol=TOL, rtol=0)


def _hang_up_on(port: int, n: int) -> list[socket.socket]:
    """``n`` echo requests sent on raw sockets (closed by the caller, unanswered)."""
    payload = json.dumps({"model": "tiny", "prompt": PROMPTS[0], "max_tokens": 0, "echo": True,
                          "logprobs": 0}).encode()
    head = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(payload)}\r\n\r\n".encode())
    sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    for s in sockets:
        s.sendall(head + payload)
    return sockets


def test_clients_that_hang_up_while_queued_leave_and_a_full_queue_answers_503(tiny_lm):
    """The model busy (its lock held, as a decoding step holds it), 6 clients queue and
    hang up: they leave the queue (the one whose pass had begun is scored and dropped), no
    slot is kept, and a burst then fills the whole queue of 8 again: 8 answered, the rest 503."""
    app = make_app({"tiny": tiny_lm}, ServeLimits(max_queue=8), engine="thread")
    scorer, lock = app.state.scorer, app.state.batcher.model_lock
    with live_server(app) as port:
        url = f"http://127.0.0.1:{port}/v1/completions"
        for _ in range(2):
            with lock:
                sockets = _hang_up_on(port, 1)
                _until(lambda: scorer.scoring == 1)  # its pass has begun and waits for the model
                sockets += _hang_up_on(port, 5)
                _until(lambda: len(scorer.waiting) == 5)
                assert scorer.in_flight() == 6
                for s in sockets:
                    s.close()
                _until(lambda: scorer.in_flight() == 1)  # the app polls its clients every 0.1 s
            assert _settle(scorer) == 0
        assert scorer.stats()["abandoned"] == 10
        with ThreadPoolExecutor(12) as pool:
            with lock:
                sent = [pool.submit(_echo, url, p) for p in PROMPTS[:12]]
                deadline = time.monotonic() + 20
                while sum(f.done() for f in sent) < 4 and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert sum(f.done() for f in sent) == 4 and scorer.in_flight() == 8
        codes = [f.result().status_code for f in sent]
        assert sorted(codes) == [200] * 8 + [503] * 4, codes
        refused = next(f.result() for f in sent if f.result().status_code == 503)
        assert "max-queue" in refused.json()["error"]["message"]
        assert _settle(scorer) == 0
