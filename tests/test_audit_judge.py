"""``judgeaudit audit-judge`` end to end: the user's judge behind a real OpenAI-compatible
server on loopback (``judgeaudit serve``'s app over a real tiny transformer), judged on real
benchmark pairs through the bias battery; every call recorded, so a rerun sends nothing."""

from __future__ import annotations

import pandas as pd
import pytest

from flows.cli import main
from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.conftest import ROOT
from tests.live_server import live_server

LLMBAR = ROOT / "tests" / "data" / "llmbar"
TABLES = ("verdicts", "battery_pairs", "battery", "baselines")


class Counting:
    """The server's own count of the requests it was sent (an ASGI wrapper)."""

    def __init__(self, app) -> None:
        self.app, self.posts, self.state = app, 0, app.state

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.posts += 1
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def served(tiny_lm):
    counted = Counting(make_app({"tiny": tiny_lm}, ServeLimits(truncate=True)))
    with live_server(counted) as port:
        yield f"http://127.0.0.1:{port}/v1", counted


def _audit(url: str, out, *extra: str) -> int:
    return main(["audit-judge", "--judge", "openai:tiny", "--base-url", url, "--data", f"llmbar={LLMBAR}",
                 "--limit", "6", "--mode", "likelihood", "--prompt-format", "Q: {prompt}\nA:", "--biases", "verbosity,authority,bandwagon",
                 "--n-boot", "200", "--out", str(out), "--params", "none.yaml", *extra])


def test_audit_judge_against_a_server_then_rerun_sends_nothing(served, tmp_path, monkeypatch, capsys):
    import json

    url, counted = served
    monkeypatch.setenv("OPENAI_API_KEY", "unused-on-loopback")
    assert _audit(url, tmp_path / "a") == 0
    sent = counted.posts
    assert sent > 0
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["pairs"] == 6 and summary["verdicts"] == 12
    assert set(summary["biases"]) == {"position", "verbosity", "authority", "bandwagon", "control"}  # control added
    for metrics in summary["biases"].values():  # every figure with its n and CI
        flip = metrics["flip_rate"]
        assert flip["n"] >= 1 and flip["ci_low"] <= flip["estimate"] <= flip["ci_high"]
    assert set(summary["baselines"]) == {"longer", "shorter", "first"}
    assert "# Judge audit" in (tmp_path / "a" / "report.md").read_text()
    out = capsys.readouterr().out
    assert "verbosity" in out and "flip rate" in out and "vs control" in out
    battery = pd.read_parquet(tmp_path / "a" / "battery.parquet")
    compared = battery[battery["bias"].isin(["verbosity", "authority", "bandwagon"])]
    assert compared["beyond_control"].notna().all() and (compared["control_n"] >= 1).all()
    for bias in ("verbosity", "authority", "bandwagon"):  # in summary.json too, with n and a CI
        versus = summary["biases"][bias]["flip_rate"]["vs_control"]
        assert versus["ci_low"] <= versus["estimate"] <= versus["ci_high"]

    assert _audit(url, tmp_path / "b") == 0  # a fresh folder records its own calls, sent again
    assert counted.posts > sent
    again = counted.posts
    # the same folder again: every call is recorded there, none is sent
    assert _audit(url, tmp_path / "a") == 0
    assert counted.posts == again, "a rerun over recorded calls sent requests"
    for name in TABLES:
        first = pd.read_parquet(tmp_path / "b" / f"{name}.parquet")
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a" / f"{name}.parquet"), first)


def test_bad_judge_and_data_are_one_line_errors(tmp_path, capsys):
    assert main(["audit-judge", "--judge", "gpt-4o", "--data", f"llmbar={LLMBAR}", "--out", str(tmp_path),
                 "--params", "none.yaml"]) == 2
    assert "forms: openai:MODEL" in capsys.readouterr().err
    assert main(["audit-judge", "--judge", "hf:/nowhere", "--data", f"nosuch={LLMBAR}", "--out", str(tmp_path),
                 "--params", "none.yaml"]) == 2
    assert "SOURCE=PATH" in capsys.readouterr().err


def test_a_local_judge_pointwise_and_against_its_earlier_audit(tiny_lm, tmp_path, capsys):
    import json

    args = ["audit-judge", "--judge", f"hf:{tiny_lm.spec.path}", "--data", f"llmbar={LLMBAR}", "--mode", "likelihood",
            "--biases", "verbosity", "--n-boot", "200", "--params", "none.yaml", "--ranges", "1-5,0-100"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b"), "--drift-against", str(tmp_path / "a")]) == 0
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert {r["score_range"] for r in summary["pointwise"]["spearman"]} == {"1-5", "0-100"}
    assert summary["drift"] and not any(r["drifted"] for r in summary["drift"])  # the same judge
    assert "no figure drifted" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "c"), "--drift-against", str(tmp_path / "nowhere")]) == 2
