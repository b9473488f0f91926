"""``audit-judge --self-enhancement REF`` and ``--assistant``: every role's endpoint calls
recorded in calls.parquet (a ``role`` column) and each role's journal of its own, so that a
rerun over the same folder sends zero requests (the server's own record) and ``--replay``
with the server stopped gives identical tables.

- Self-enhancement against ``judgeaudit serve``'s app over a real tiny transformer on
  loopback, served as "tiny" (the judge) and "ref" (the reference judge).
- The assistant of contrastive decoding behind a small loopback endpoint
  (``tests.fake_endpoint``) that gives each score prompt top log-probs over the digits, a
  fixed function of the prompt: the tiny transformer puts no digit among its top tokens.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from flows.cli import main
from tests.fake_endpoint import FakeEndpoint
from tests.test_audit_judge_calls import LLMBAR, Server

BASE = ["--data", f"llmbar={LLMBAR}", "--limit", "6", "--mode", "likelihood", "--prompt-format", "Q: {prompt}\nA:",
        "--biases", "verbosity", "--n-boot", "200", "--concurrency", "1", "--params", "none.yaml"]


def same(a, b, names) -> None:
    for name in names:
        pd.testing.assert_frame_equal(pd.read_parquet(a / f"{name}.parquet"), pd.read_parquet(b / f"{name}.parquet"))


@pytest.fixture(scope="module")
def server(tiny_lm):
    os.environ.setdefault("OPENAI_API_KEY", "unused-on-loopback")
    srv = Server(tiny_lm, names=("tiny", "ref"))
    srv.start()
    yield srv
    srv.stop()


def test_self_enhancement_is_measured_and_the_references_calls_recorded_and_replayed(server, tiny_lm, tmp_path,
                                                                                    capsys):
    tables = ("verdicts", "battery", "self_enhancement", "self_enhancement_verdicts")
    argv = ["audit-judge", "--judge", f"hf:{tiny_lm.spec.path}", "--self-enhancement", "openai:ref",
            "--base-url", server.url, "--answer-tokens", "8", *BASE]
    out = tmp_path / "a"
    answered = server.reset()
    assert main([*argv, "--out", str(out)]) == 0
    assert "self_enhancement" in capsys.readouterr().out
    sent = len(answered)
    calls = pd.read_parquet(out / "calls.parquet")
    assert len(calls) == sent > 0 and set(calls["role"]) == {"reference"}  # the local judge makes no call
    assert set(calls["identity"]) == {f"openai:{server.url}:ref"} and (calls["status"] == "ok").all()
    assert any((out / "calls_reference").glob("*.jsonl"))
    summary = json.loads((out / "summary.json").read_text())
    se = summary["self_enhancement"]
    assert se["reference"] == f"openai:{server.url}:ref"
    for metric in ("own_win_rate", "reference_win_rate", "self_preference"):
        f = se[metric]
        assert f["n"] == 6 and f["ci_low"] <= f["estimate"] <= f["ci_high"], (metric, f)
    # the same weights judge as "ref" through the endpoint: the reference agrees with the judge
    assert abs(se["self_preference"]["estimate"]) < 1e-9 and se["self_preference"]["found"] is False
    own = pd.read_parquet(out / "self_enhancement_verdicts.parquet")
    assert set(own["role"]) == {"judge", "reference"} and len(own) == 2 * 2 * 6  # both judges, both orders
    assert "## Self-enhancement" in (out / "report.md").read_text()

    shutil.copytree(out, tmp_path / "first")
    assert main([*argv, "--out", str(out)]) == 0  # a rerun: the reference's calls are all recorded
    assert len(answered) == sent, "a rerun sent requests"
    same(tmp_path / "first", out, tables)
    server.stop()
    try:
        assert main([*argv, "--out", str(out), "--replay"]) == 0
        same(tmp_path / "first", out, tables)
        shutil.rmtree(out / "calls_reference")  # without the reference's records, --replay must fail
        assert main([*argv, "--out", str(out), "--replay"]) == 1
        assert "--replay: no recorded call" in capsys.readouterr().err
    finally:
        server.start()
    assert len(answered) == sent


def test_an_endpoint_judge_writes_its_own_answers_through_its_journal(server, tmp_path):
    argv = ["audit-judge", "--judge", "openai:tiny", "--self-enhancement", "openai:ref", "--base-url", server.url,
            "--answer-tokens", "8", *BASE, "--out", str(tmp_path)]
    server.reset()
    assert main(argv) == 0
    calls = pd.read_parquet(tmp_path / "calls.parquet")
    assert set(calls["role"]) == {"judge", "reference"}
    written = calls[(calls["role"] == "judge") & (calls["kind"] == "completion")]
    assert len(written) == 6 and set(written["max_tokens"]) == {8}  # one answer per prompt, at the cap given
    assert (calls[calls["role"] == "reference"]["kind"] == "echo").all()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["calls_by_role"]) == {"judge", "reference"}
    # answers cut at --answer-tokens are answers: recorded ok with their note, so a rerun
    # sends nothing and --replay needs no record it lacks
    cut = written["reason"] == "cut at max_tokens (finish_reason length)"
    assert cut.any() and (written["status"] == "ok").all() and written["reason"][~cut].isna().all()
    answered = server.reset()
    assert main(argv) == 0 and not answered, "a rerun asked again for recorded answers"
    assert main([*argv, "--replay"]) == 0
    # drift against that audit, fresh calls: the unchanged judge's self-preference has not moved
    again = [*argv[:-1], str(tmp_path / "again"), "--drift-against", str(tmp_path)]
    assert main(again) == 0 and answered, "a fresh folder's audit sent nothing"
    table = pd.read_parquet(tmp_path / "again" / "drift.parquet")
    own = table[table["figure"] == "self_enhancement"]
    assert own.loc[own["subset"] == "all", "n"].tolist() == [6] and len(own) > 1  # whole, and per subset
    assert (own["difference"] == 0).all() and not own["drifted"].any()


class DigitScores(FakeEndpoint):
    """Completions with top log-probs over "1".."5", a fixed function of the prompt; counts
    the requests it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    def reply(self, path: str, body: dict):
        self.requests += 1
        seed = int(hashlib.sha256(body["prompt"].encode()).hexdigest()[:8], 16)
        raw = np.random.default_rng(seed).normal(size=5)
        logp = raw - np.logaddexp.reduce(raw)
        top = {str(d + 1): float(v) for d, v in enumerate(logp)}
        best = max(top, key=top.get)
        return 200, {"id": "cmpl-x", "object": "text_completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "text": best, "finish_reason": "length",
                                  "logprobs": {"tokens": [best], "token_logprobs": [top[best]],
                                               "top_logprobs": [top], "text_offset": [0]}}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}, {}


def test_the_assistants_calls_are_recorded_a_rerun_sends_none_and_replay_needs_no_server(tiny_lm, tmp_path):
    os.environ.setdefault("OPENAI_API_KEY", "unused-on-loopback")
    endpoint = DigitScores()
    tables = ("verdicts", "battery", "scores", "score_correlations")
    argv = lambda out, *extra: ["audit-judge", "--judge", f"hf:{tiny_lm.spec.path}", "--ranges", "1-5",  # noqa: E731
                                "--assistant", "openai:asst", "--base-url", endpoint.url, *BASE, "--out", str(out),
                                *extra]
    try:
        assert main(argv(tmp_path / "a")) == 0
        sent = endpoint.requests
        calls = pd.read_parquet(tmp_path / "a" / "calls.parquet")
        assert sent > 0 and len(calls) == sent and set(calls["role"]) == {"assistant"}
        assert (calls["status"] == "ok").all() and set(calls["identity"]) == {f"openai:{endpoint.url}:asst"}
        summary = json.loads((tmp_path / "a" / "summary.json").read_text())
        assert summary["pointwise"]["contrastive_decoding"][0]["score_range"] == "1-5"
        shutil.copytree(tmp_path / "a", tmp_path / "first")
        assert main(argv(tmp_path / "a")) == 0
        assert endpoint.requests == sent, "a rerun sent the assistant requests"
        same(tmp_path / "first", tmp_path / "a", tables)
    finally:
        endpoint.close()
    assert main(argv(tmp_path / "a", "--replay")) == 0  # the endpoint is gone
    same(tmp_path / "first", tmp_path / "a", tables)
    assert endpoint.requests == sent


def test_dry_run_counts_every_roles_calls_and_prices_them_from_params(server, tmp_path, capsys):
    """--dry-run with self-enhancement and the pointwise audit (1-10, scored by echo) against
    the real run's requests, the server's own count; the cost from params.yaml's price table
    equal to the same prices given on the command line."""
    import re

    import yaml

    from tests.conftest import ROOT

    argv = ["audit-judge", "--judge", "openai:tiny", "--self-enhancement", "openai:ref", "--answer-tokens", "8",
            "--ranges", "1-10", "--base-url", server.url, *BASE]
    server.reset()
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "dry"), "--dry-run", "--price-per-mtok", "2.5,10"]) == 0
    printed = capsys.readouterr().out
    planned = int(re.search(r"dry run: (\d+) requests", printed).group(1))
    assert "for the pointwise scores" in printed and "for self-enhancement, the reference" in printed
    cost = re.search(r"cost \$([0-9.]+)", printed).group(1)
    answered = server.reset()
    assert main([*argv, "--out", str(tmp_path / "real")]) == 0
    summary = json.loads((tmp_path / "real" / "summary.json").read_text())
    attacked = pd.read_parquet(tmp_path / "real" / "battery_pairs.parquet")
    assert len(attacked) == summary["pairs"] * 2  # verbosity and the control on every pair: the plan is exact
    assert planned == len(answered), (planned, len(answered))

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["live_judge"] = {"judge": "openai:tiny", "data": [{"source": "llmbar", "path": str(LLMBAR)}],
                            "prices": {"tiny": [2.5, 10], "ref": [2.5, 10]}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    at = [a if a != "none.yaml" else str(tmp_path / "params.yaml") for a in argv]
    capsys.readouterr()
    assert main([*at, "--out", str(tmp_path / "dry"), "--dry-run"]) == 0
    assert f"cost ${cost}" in capsys.readouterr().out
