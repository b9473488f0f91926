"""``judgeaudit audit-judge``'s recorded calls, against ``judgeaudit serve``'s app over a real
tiny transformer on loopback, with the server's own record of the requests it answered:
every call a row of calls.parquet; ``--replay`` with the server stopped; the endpoint's
model version recorded per call and a change reported; ``--dry-run``'s count against the
real run's; ``--budget`` stopping cleanly and resuming; a run killed mid-battery resuming
without a request answered twice."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest
import uvicorn

from flows.cli import main
from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.conftest import ROOT, free_port

LLMBAR = ROOT / "tests" / "data" / "llmbar"
TABLES = ("verdicts", "battery_pairs", "battery", "baselines")
BIASES = "verbosity,authority"


class Recorder:
    """An ASGI wrapper keeping the body of every POST the app answered (``answered``);
    with ``gate`` set, a POST arriving once ``gate`` were answered is held unanswered
    (counted in ``held``) until ``released``; ``fingerprint``: a ``system_fingerprint``
    put into every JSON reply."""

    def __init__(self, app) -> None:
        self.app, self.answered, self.gate, self.held, self.released = app, [], None, 0, False
        self.fingerprint: str | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            msg = await receive()
            body, more = body + msg.get("body", b""), msg.get("more_body", False)
        if self.gate is not None and len(self.answered) >= self.gate:
            self.held += 1
            while not self.released:
                await asyncio.sleep(0.02)
            return  # never answered: its client is gone by now
        given = False

        async def replay():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        start, chunks = {}, []

        async def rewrite(msg) -> None:
            if msg["type"] == "http.response.start":
                start.update(msg)
                return
            chunks.append(msg.get("body", b""))
            if msg.get("more_body"):
                return
            data = b"".join(chunks)
            if self.fingerprint and start["status"] == 200:
                data = json.dumps({**json.loads(data), "system_fingerprint": self.fingerprint}).encode()
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(data)).encode())]})
            await send({"type": "http.response.body", "body": data})

        await self.app(scope, replay, rewrite)
        self.answered.append(body)


class Server:
    """``judgeaudit serve``'s app over the tiny model (served under each of ``names``), on a
    fixed loopback port, that can be stopped and started again."""

    def __init__(self, tiny_lm, names: tuple[str, ...] = ("tiny",), max_logprobs: int | None = None) -> None:
        self.recorder = Recorder(make_app({name: tiny_lm for name in names},
                                          ServeLimits(truncate=True, batch_wait_ms=1.0, max_logprobs=max_logprobs)))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.server = self.thread = None

    def start(self) -> None:
        self.server = uvicorn.Server(uvicorn.Config(self.recorder, host="127.0.0.1", port=self.port,
                                                    log_level="error"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started and time.time() < deadline:
            time.sleep(0.05)
        assert self.server.started, "server did not start"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def reset(self) -> list[bytes]:
        rec = self.recorder
        rec.answered, rec.gate, rec.held, rec.released, rec.fingerprint = [], None, 0, False, None
        return rec.answered


def args(url: str, out, *extra: str, biases: str = BIASES) -> list[str]:
    return ["audit-judge", "--judge", "openai:tiny", "--base-url", url, "--data", f"llmbar={LLMBAR}",
            "--limit", "6", "--mode", "likelihood", "--prompt-format", "Q: {prompt}\nA:", "--biases", biases,
            "--n-boot", "200", "--concurrency", "1", "--out", str(out), "--params", "none.yaml", *extra]


@pytest.fixture(scope="module")
def server(tiny_lm):
    os.environ.setdefault("OPENAI_API_KEY", "unused-on-loopback")
    srv = Server(tiny_lm)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def reference(server, tmp_path_factory):
    """An uninterrupted run: its folder and the request bodies the server answered."""
    out = tmp_path_factory.mktemp("reference")
    answered = server.reset()
    assert main(args(server.url, out)) == 0
    return out, list(answered)


def same_tables(a, b) -> None:
    for name in TABLES:
        pd.testing.assert_frame_equal(pd.read_parquet(a / f"{name}.parquet"), pd.read_parquet(b / f"{name}.parquet"))


def test_every_call_is_a_row_of_calls_parquet(server, reference):
    out, answered = reference
    calls = pd.read_parquet(out / "calls.parquet")
    assert len(calls) == len(answered) and calls["key"].is_unique  # one row per request answered
    assert (calls["status"] == "ok").all() and (calls["origin"] == "endpoint").all()
    assert set(calls["kind"]) == {"echo"} and set(calls["model"]) == {"tiny"}
    assert set(calls["identity"]) == {f"openai:{server.url}:tiny"}
    assert calls["time"].notna().all() and calls["system_fingerprint"].isna().all()
    assert set(calls["role"]) == {"judge"}  # which model made the call: judge, reference or assistant
    sent = sorted(json.loads(b)["prompt"] for b in answered)
    assert sorted(calls["prompt"]) == sent  # the request as sent, prompt and settings
    assert set(calls["max_tokens"]) == {0} and set(calls["echo"]) == {"true"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["calls"]["sent"] == len(answered) and summary["endpoint_drift"] is False


def test_replay_with_the_server_stopped_gives_identical_tables(server, reference, tmp_path, capsys):
    out, _ = reference
    answered = server.reset()
    server.stop()
    try:
        before = (out / "calls.parquet").read_bytes()
        assert main(args(server.url, tmp_path / "replayed", "--replay")) == 1  # nothing recorded there
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--replay: no recorded call for the prompt" in err
        assert re.search(r"\(key [0-9a-f]{64}\)", err) and "Traceback" not in err

        import shutil
        shutil.copytree(out, tmp_path / "copy")
        assert main(args(server.url, tmp_path / "copy", "--replay")) == 0
        same_tables(out, tmp_path / "copy")
        summary = json.loads((tmp_path / "copy" / "summary.json").read_text())
        assert summary["calls"]["sent"] == 0 and summary["calls"]["answered_from_records"] > 0
        assert (out / "calls.parquet").read_bytes() == before
    finally:
        server.start()
    assert answered == []


def test_a_change_of_model_version_is_reported(server, reference, tmp_path, capsys):
    server.reset()
    server.recorder.fingerprint = "fp_a"
    assert main(args(server.url, tmp_path, biases="verbosity")) == 0
    first = json.loads((tmp_path / "summary.json").read_text())
    assert first["endpoint_drift"] is False
    assert "CHANGED" not in (tmp_path / "report.md").read_text()
    assert [v["system_fingerprint"] for v in first["endpoint_versions"]] == ["fp_a"]
    capsys.readouterr()
    server.recorder.fingerprint = "fp_b"  # the endpoint changed under the same name
    assert main(args(server.url, tmp_path)) == 0  # authority's calls are new: answered by fp_b
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["endpoint_drift"] is True
    versions = summary["endpoint_versions"]
    assert [v["system_fingerprint"] for v in versions] == ["fp_a", "fp_b"]
    assert [v["this_run"] for v in versions] == [False, True]
    out = capsys.readouterr().out
    assert "more than one model version" in out and "fp_a" in out and "fp_b" in out
    headline = (tmp_path / "report.md").read_text().split("## Biases")[0]  # on the report's first screen
    assert "**CHANGED**" in headline and headline.index("fp_a") < headline.index("fp_b")
    calls = pd.read_parquet(tmp_path / "calls.parquet")
    assert set(calls["system_fingerprint"]) == {"fp_a", "fp_b"}


def test_dry_run_counts_the_real_runs_prompt_tokens_within_5_percent(server, reference, tiny_lm, tmp_path,
                                                                     capsys):
    from transformers import AutoTokenizer

    out, answered = reference
    summary = json.loads((out / "summary.json").read_text())
    pairs = pd.read_parquet(out / "battery_pairs.parquet")
    assert set(pairs["bias"]) == {"verbosity", "authority", "control"}  # the control added to the biases asked
    assert len(pairs) == summary["pairs"] * 3, "the tiny judge should decide every pair"
    tok = AutoTokenizer.from_pretrained(tiny_lm.spec.path)
    real = sum(len(tok(json.loads(b)["prompt"], add_special_tokens=False)["input_ids"]) for b in answered)

    fresh = server.reset()
    capsys.readouterr()
    assert main(args(server.url, tmp_path, "--dry-run", "--tokenizer", tiny_lm.spec.path,
                     "--price-per-mtok", "2.5,10")) == 0
    assert fresh == []  # nothing sent
    printed = capsys.readouterr().out
    requests, tokens = map(int, re.search(r"dry run: (\d+) requests .* (\d+) prompt tokens", printed).groups())
    assert requests == len(answered)
    assert abs(tokens - real) <= 0.05 * real, (tokens, real)
    assert "cost $" in printed and "upper bound" in printed
    assert not (tmp_path / "verdicts.parquet").exists()
    # over a folder holding the whole run: nothing left to send
    assert main(args(server.url, out, "--dry-run")) == 0
    assert f"{requests} of them recorded" in capsys.readouterr().out and fresh == []


def test_budget_stops_cleanly_and_a_rerun_resumes(server, reference, tmp_path, capsys):
    ref_out, ref_answered = reference
    answered = server.reset()
    capsys.readouterr()
    assert main(args(server.url, tmp_path, "--budget", "300")) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "token budget of 300 reached" in err[0] and "--budget" in err[0]
    stopped = len(answered)
    assert 0 < stopped < len(ref_answered)
    calls = pd.read_parquet(tmp_path / "calls.parquet")  # what was done is kept
    assert len(calls) == stopped
    # within the cap: each answered call's prompt estimated at 4 characters a token
    assert sum(max(1, round(len(p) / 4)) for p in calls["prompt"]) <= 300
    assert main(args(server.url, tmp_path, "--budget", "1000000")) == 0
    assert len(answered) == len(ref_answered) and len(set(answered)) == len(answered)  # none asked twice
    same_tables(ref_out, tmp_path)


def test_a_killed_run_resumes_without_repeating_a_request(server, reference, tmp_path):
    ref_out, ref_answered = reference
    answered = server.reset()
    # mid-battery: the clean verdicts are half the calls (the two orders score the same texts)
    server.recorder.gate = gate = len(ref_answered) * 3 // 4
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "unused-on-loopback"}
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", *args(server.url, tmp_path)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 180
        while server.recorder.held == 0 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert server.recorder.held == 1, proc.stderr.read().decode()[-2000:] if proc.poll() is not None else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.recorder.released = True
    killed = len(answered)
    assert killed == gate and not (tmp_path / "verdicts.parquet").exists()
    server.recorder.gate = None
    assert main(args(server.url, tmp_path)) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["calls"]["sent"] == len(ref_answered) - killed
    assert len(answered) == len(ref_answered) and len(set(answered)) == len(answered)  # none asked twice
    same_tables(ref_out, tmp_path)
