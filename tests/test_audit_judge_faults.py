"""``judgeaudit audit-judge`` (the real process) against an OpenAI-compatible endpoint on
loopback that fails transiently: a 429 with ``Retry-After: 1``, a reply held past the
client's timeout, a 503, each on the first request of a few prompts and then a good reply.
The run waits as told, retries, completes with exit 0 and every call recorded ok; never a
traceback. The server's own clock shows the waits."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT, tiny_params
from tests.fake_endpoint import FakeEndpoint

LLMBAR = ROOT / "tests" / "data" / "llmbar"
TIMEOUT_S = 1.0  # the judge's client timeout in the timeout drill (ModelSpec.timeout_s)
HOLD_S = 4.0  # how long a held request waits unanswered: well past TIMEOUT_S


class Request(NamedTuple):
    """One request as the server saw it: its body (as a key), when it arrived, the status
    it got (None: held, never answered) and when that answer was handed to the socket."""

    key: str
    arrived: float
    status: int | None
    answered: float


class FaultyEndpoint(FakeEndpoint):
    """A /v1/chat/completions endpoint giving generative verdicts ("[[A]]" or "[[B]]", by the
    prompt's hash); the first request of each of the first ``faulted`` distinct request
    bodies gets ``fault`` instead: "429" (with ``Retry-After: 1``), "503", or "hang" (no
    answer for ``HOLD_S`` seconds, then the connection closed). A body sent again is a
    retry and answered. ``requests``: every request, by the server's monotonic clock."""

    def __init__(self, fault: str, faulted: int) -> None:
        self.fault, self.faulted = fault, faulted
        self.requests: list[Request] = []
        self.lock, self.release = threading.Lock(), threading.Event()
        super().__init__()

    def reply(self, path: str, body: dict) -> tuple[int | None, object, dict]:
        key = json.dumps(body, sort_keys=True)
        arrived = time.monotonic()
        with self.lock:
            seen = {r.key for r in self.requests}
            fault = self.fault if key not in seen and len(self.faulted_keys()) < self.faulted else None
            if fault is not None:  # counted as faulted at once, so concurrent first requests see it
                self.requests.append(Request(key, arrived, None, arrived))
        if fault == "hang":
            self.release.wait(HOLD_S)
            return None, b"", {}  # never answered: the client has timed out long since
        if fault is not None:
            status = int(fault)
            headers = {"Retry-After": "1"} if status == 429 else {}
            with self.lock:
                self.requests[self._index(key, arrived)] = Request(key, arrived, status, time.monotonic())
            return status, {"error": {"message": f"transient {status}", "type": "server_error"}}, headers
        content = body["messages"][0]["content"]
        verdict = "AB"[hashlib.sha256(content.encode()).digest()[0] % 2]
        reply = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": f"The better one. [[{verdict}]]"}}]}
        with self.lock:
            self.requests.append(Request(key, arrived, 200, time.monotonic()))
        return 200, reply, {}

    def faulted_keys(self) -> list[str]:
        """The bodies whose first request got the fault, in the order they arrived."""
        return [r.key for r in self.requests if r.status != 200]

    def _index(self, key: str, arrived: float) -> int:
        return next(i for i, r in enumerate(self.requests) if r.key == key and r.arrived == arrived)

    def tries(self, key: str) -> list[Request]:
        return sorted((r for r in self.requests if r.key == key), key=lambda r: r.arrived)

    def close(self) -> None:
        self.release.set()
        super().close()


@pytest.fixture()
def endpoint(request):
    ep = FaultyEndpoint(*request.param)
    yield ep
    ep.close()


def audit(judge: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "unused-on-loopback"}
    cmd = [sys.executable, "-m", "flows.cli", "audit-judge", "--judge", judge, "--data", f"llmbar={LLMBAR}",
           "--limit", "3", "--mode", "generative", "--biases", "verbosity", "--n-boot", "50",
           "--concurrency", "4", "--out", str(out), *extra]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def check_recovered(done: subprocess.CompletedProcess, endpoint: FaultyEndpoint, out: Path) -> list[str]:
    """The run completed (exit 0, no traceback), every distinct request the server saw is one
    call recorded ok, the faulted ones among them, each answered on a retry; the faulted
    bodies are returned."""
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr[-3000:]
    assert "error" not in done.stderr.lower(), done.stderr[-3000:]
    faulted = endpoint.faulted_keys()
    assert len(faulted) == endpoint.faulted, "the drill injected fewer faults than planned"
    for key in faulted:
        statuses = [r.status for r in endpoint.tries(key)]
        assert statuses[-1] == 200 and len(statuses) == 2, statuses  # one fault, then the retry answered
    distinct = {r.key for r in endpoint.requests}
    calls = pd.read_parquet(out / "calls.parquet")
    assert len(calls) == len(distinct) and calls["key"].is_unique  # one call per distinct request
    assert (calls["status"] == "ok").all() and calls["reason"].isna().all()
    assert (calls["origin"] == "endpoint").all() and set(calls["model"]) == {"m"}
    prompts = {json.loads(k)["messages"][0]["content"] for k in distinct}
    assert set(calls["prompt"]) == prompts
    journal = [json.loads(line) for f in (out / "calls").glob("*.jsonl")
               for line in f.read_text().splitlines()]
    assert len(journal) == len(distinct) and {r["status"] for r in journal} == {"ok"}  # no failed line either
    # each call's requests, its retries included, as the server counted them
    tries = Counter(json.loads(r.key)["messages"][0]["content"] for r in endpoint.requests)
    assert dict(zip(calls["prompt"], calls["attempts"])) == tries
    summary = json.loads((out / "summary.json").read_text())
    assert summary["calls"]["sent"] == len(distinct) and summary["calls"]["failed"] == 0
    assert summary["calls"]["retried"] == len(faulted) == summary["calls"]["retries"]
    assert summary["unparseable"] == 0 and summary["verdicts"] == 6
    assert "calls (judge): " in done.stdout and f"(0 failed, {len(faulted)} retried" in done.stdout
    return faulted


@pytest.mark.parametrize("endpoint", [("429", 2)], indirect=True)
def test_a_429_with_retry_after_is_waited_on_then_retried_and_recorded(endpoint, tmp_path):
    out = tmp_path / "out"
    done = audit("openai:m", out, "--base-url", endpoint.url, "--params", "none.yaml")
    for key in check_recovered(done, endpoint, out):
        refused, retried = endpoint.tries(key)
        assert refused.status == 429
        # Retry-After: 1 honoured, measured on the server: the client's own first backoff
        # (0.5 s less up to 25% jitter) would have come back within 0.5 s
        assert retried.arrived - refused.answered >= 0.9, retried.arrived - refused.answered
    sent = len(endpoint.requests)
    again = audit("openai:m", out, "--base-url", endpoint.url, "--params", "none.yaml")
    assert again.returncode == 0 and len(endpoint.requests) == sent  # all recorded ok: a rerun sends nothing


@pytest.mark.parametrize("via", ["params", "flags"])
@pytest.mark.parametrize("endpoint", [("hang", 1)], indirect=True)
def test_a_reply_held_past_the_timeout_is_retried_and_recorded(endpoint, tmp_path, via):
    # the client timeout is a ModelSpec field (timeout_s): set for a judge named in
    # params.yaml, or on the command line for openai:MODEL
    out = tmp_path / "out"
    if via == "flags":
        done = audit("openai:m", out, "--base-url", endpoint.url, "--params", "none.yaml",
                     "--timeout", str(TIMEOUT_S), "--max-retries", "2")
    else:
        params = tiny_params()
        params["models"]["remote"] = {"spec": {"backend": "openai", "path": "m", "base_url": endpoint.url,
                                               "max_retries": 2, "timeout_s": TIMEOUT_S}}
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(params, sort_keys=False))
        done = audit("remote", out, "--params", str(path), "--root", str(tmp_path / "data"))
    for key in check_recovered(done, endpoint, out):
        held, retried = endpoint.tries(key)
        assert held.status is None
        # sent again once the client gave up waiting: after its timeout, long before the hold ended
        assert TIMEOUT_S - 0.1 <= retried.arrived - held.arrived < HOLD_S, retried.arrived - held.arrived


@pytest.mark.parametrize("endpoint", [("503", 2)], indirect=True)
def test_a_503_once_is_retried_and_recorded(endpoint, tmp_path):
    out = tmp_path / "out"
    done = audit("openai:m", out, "--base-url", endpoint.url, "--params", "none.yaml")
    for key in check_recovered(done, endpoint, out):
        assert [r.status for r in endpoint.tries(key)] == [503, 200]
