"""The live_judge stage and the drift check: the user's judge from params.yaml's
``live_judge`` section, audited through the runner as ``dvc repro`` runs it; then re-judged
on its pinned pairs, where an unchanged judge shows no drift and a judge changed behind the
same name is flagged."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
import yaml

from judgeaudit.config import load_params
from judgeaudit.runner.execute import execute
from judgeaudit.stages.live_judge import judge_drift
from tests.conftest import ROOT

QUESTIONS = ["What is 2 plus 3?", "What is the capital of Peru?", "What colour is snow?", "Name a prime number.",
             "What is the opposite of hot?", "How many legs has a spider?"]


def _pairs_file(path):
    """24 labelled pairs in the generic format (one recorded verdict each: the pairs are what counts)."""
    rows = []
    for i in range(24):
        q = QUESTIONS[i % len(QUESTIONS)]
        good, bad = f"The answer to '{q}' is given here, number {i}.", f"I do not know ({i})."
        label = "1" if i % 2 else "2"
        r1, r2 = (good, bad) if label == "1" else (bad, good)
        rows.append({"item_id": f"p{i}", "judge": "recorded", "verdict": label, "order": "1", "prompt": q,
                     "response_1": r1, "response_2": r2, "label": label})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _params(tmp_path, judge_dir, pairs, **extra) -> str:
    text = (ROOT / "params.yaml").read_text()
    section = {"live_judge": {"judge": f"hf:{judge_dir}", "mode": "likelihood", "n_boot": 200,
                              "data": [{"source": "generic", "path": str(pairs)}], "biases": ["verbosity"],
                              "ranges": ["1-5"], **extra}}
    path = tmp_path / "params.yaml"
    assert "\nlive_judge: null\n" in text  # the shipped file names no judge: this test does
    path.write_text(text.replace("\nlive_judge: null\n", "\n" + yaml.safe_dump(section)))
    return str(path)


def _copy_model(src, dst, noise: float = 0.0, seed: int = 0):
    """The checkpoint at ``src`` saved to ``dst``, its weights perturbed by ``noise`` (a
    different judge behind the same path)."""
    import torch
    from transformers import AutoModelForCausalLM

    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    if noise:
        model = AutoModelForCausalLM.from_pretrained(src)
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn(p.shape, generator=g) * noise)
        model.save_pretrained(dst)


@pytest.fixture
def setup(tiny_lm, tmp_path):
    judge = tmp_path / "judge"
    _copy_model(tiny_lm.spec.path, judge)
    return judge, _params(tmp_path, judge, _pairs_file(tmp_path / "pairs.csv"))


def test_the_live_judge_stage_audits_the_sections_judge(setup, tmp_path):
    _, params_path = setup
    root = tmp_path / "data"
    summary = execute("live_judge", params_path, root)
    assert set(summary) == {"found", "accuracy"} and summary["accuracy"]["n"] == 24
    written = json.loads((root / "live_judge" / "summary.json").read_text())
    assert written["pairs"] == 24 and set(written["biases"]) == {"position", "verbosity", "control"}
    assert (root / "live_judge" / "report.md").is_file() and (root / "live_judge" / "battery.png").is_file()
    assert {r["score_range"] for r in written["pointwise"]["spearman"]} == {"1-5"}
    assert (root / "live_judge" / "scores.png").is_file()


def test_the_stage_measures_self_enhancement_against_the_sections_reference(setup, tmp_path):
    judge, _ = setup
    params_path = _params(tmp_path, judge, tmp_path / "pairs.csv", self_enhancement=f"hf:{judge}", answer_tokens=4,
                          ranges=None)
    root = tmp_path / "data"
    execute("live_judge", params_path, root)
    written = json.loads((root / "live_judge" / "summary.json").read_text())
    se = written["self_enhancement"]
    assert se["reference"].startswith("transformers:") and se["self_preference"]["n"] == 24
    assert se["self_preference"]["estimate"] == 0 and not se["self_preference"]["found"]  # itself as reference
    table = pd.read_parquet(root / "live_judge" / "self_enhancement.parquet")
    assert set(table["metric"]) == {"own_win_rate", "reference_win_rate", "self_preference"}


def test_drift_flags_a_judge_changed_behind_its_name_and_not_an_unchanged_one(setup, tmp_path, tiny_lm):
    judge, params_path = setup
    params, root = load_params(params_path), tmp_path / "data"
    _, first = judge_drift(params, root, stamp="20260101T000000Z")
    assert first is None  # nothing to compare with yet
    _, same = judge_drift(params, root, stamp="20260102T000000Z")
    assert len(same) and not same["drifted"].any(), same
    assert same.set_index("figure").loc["verdict_change", "difference"] == 0
    _copy_model(tiny_lm.spec.path, judge, noise=0.5, seed=1)  # another judge, same name
    out, changed = judge_drift(params, root, stamp="20260103T000000Z")
    row = changed.set_index("figure").loc["verdict_change"]
    assert row["drifted"] and row["ci_low"] > 0 and row["n"] == 24, changed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["drift_against"] == "20260102T000000Z" and any(r["drifted"] for r in summary["drift"])
    headline = (out / "report.md").read_text().split("## Biases")[0]  # drift on the report's first screen
    assert "figures drifted against 20260102T000000Z: **" in headline and "verdict_change" in headline


def test_the_pointwise_audit_scores_every_range_with_and_without_an_assistant(tiny_lm, tmp_path):
    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.judging.live_items import pairs_to_judge
    from judgeaudit.judging.live_pointwise import check_ranges, parse_ranges, pointwise_audit, score_histograms

    items, _ = pairs_to_judge([("generic", str(_pairs_file(tmp_path / "pairs.csv")))])
    ranges = parse_ranges("1-5,1-10,0-100")
    assert ranges == [(1, 5), (1, 10), (0, 100)]
    boot = BootstrapSettings(200, 0.95, 0)
    corr, scores, chosen = pointwise_audit(tiny_lm, items, ranges, boot)
    assert set(corr["score_range"]) == {"1-5", "1-10", "0-100"} and not chosen
    assert len(scores) == 3 * 2 * 24  # both responses of every pair, per range
    for name, part in scores.groupby("score_range"):
        low, high = (int(x) for x in name.split("-"))
        assert part["greedy"].between(low, high).all() and part["expected"].between(low, high).all()
    defined = corr.dropna(subset=["estimate"])  # a constant greedy score has no correlation
    assert len(defined) and (defined["ci_low"] <= defined["estimate"] + 1e-9).all() and (corr["n"] == 48).all()
    corr_cd, _, chosen = pointwise_audit(tiny_lm, items, ranges[:1], boot, assistant=tiny_lm)
    assert {"greedy", "cd_greedy", "cd_expected"} <= set(corr_cd["method"]) and chosen[0]["score_range"] == "1-5"
    score_histograms(scores, tmp_path / "scores.png")
    assert (tmp_path / "scores.png").stat().st_size > 0
    with pytest.raises(ValueError, match="LOW-HIGH"):
        parse_ranges("5-1")
    chat = type("Remote", (), {"spec": type("S", (), {"backend": "openai", "chat_template": "auto"})()})()
    with pytest.raises(ValueError, match="chat endpoint.*one token"):
        check_ranges(chat, [(0, 100)])
    check_ranges(chat, [(1, 5)])


def test_an_endpoint_scores_several_token_ranges_by_echo_as_the_local_model_does(tiny_lm, tmp_path,
                                                                                  monkeypatch):
    """1-10 through the completions endpoint of `serve` (echo: one request per score and
    response) against the same model scoring in this process: the same distribution."""
    import numpy as np

    from judgeaudit.judging.live_items import pairs_to_judge
    from judgeaudit.judging.live_pointwise import _reference, range_logprobs, score_requests
    from judgeaudit.models import ModelSpec, load_model
    from judgeaudit.models.call_plan import PlannedCalls
    from judgeaudit.serving.app import make_app
    from judgeaudit.serving.schema import ServeLimits
    from tests.live_server import live_server
    from tests.test_audit_judge import Counting

    monkeypatch.setenv("OPENAI_API_KEY", "unused-on-loopback")
    items, _ = pairs_to_judge([("generic", str(_pairs_file(tmp_path / "pairs.csv")))], limit=3)
    rows, _ = _reference(items)
    local = range_logprobs(tiny_lm, rows, 1, 10)
    counted = Counting(make_app({"tiny": tiny_lm}, ServeLimits(truncate=True)))
    with live_server(counted) as port:
        spec = ModelSpec(backend="openai", path="tiny", base_url=f"http://127.0.0.1:{port}/v1",
                         chat_template="{prompt}", concurrency=8)
        remote = range_logprobs(load_model(spec, name="tiny"), rows, 1, 10)
    assert counted.posts == len(rows) * 10  # one echo per score and response
    assert np.allclose(np.exp(remote), np.exp(local), atol=2e-3), np.abs(np.exp(remote) - np.exp(local)).max()
    assert np.allclose(np.exp(remote).sum(axis=1), 1.0)
    planner = PlannedCalls(spec, len)
    score_requests(planner, items, [(1, 5), (1, 10)])
    assert len(planner.calls) == len(rows) * (1 + 10)  # a dry run counts them: one-token 1-5, echoed 1-10


def test_the_stages_recorded_calls_outlive_its_outputs_as_dvc_keeps_them(tiny_lm, tmp_path, monkeypatch):
    """DVC deletes a stage's outs before it reruns it, except a persisted one: the calls
    journal (live_judge_calls, ``persist: true`` in dvc.yaml). With all else under the data
    root gone, as on a rerun after `dvc pull` in a fresh clone, the stage sends nothing
    recorded and writes the same tables."""
    from judgeaudit.runner.dvcyaml import stage_entry
    from judgeaudit.serving.app import make_app
    from judgeaudit.serving.schema import ServeLimits
    from judgeaudit.stages.live_judge import STAGE
    from tests.test_audit_judge import Counting
    from tests.live_server import live_server

    assert {"data/live_judge_calls": {"persist": True}} in stage_entry(STAGE)["outs"]
    monkeypatch.setenv("OPENAI_API_KEY", "unused-on-loopback")
    counted = Counting(make_app({"tiny": tiny_lm}, ServeLimits(truncate=True)))
    pairs = _pairs_file(tmp_path / "pairs.csv")
    root = tmp_path / "data"
    with live_server(counted) as port:
        params_path = _params(tmp_path, "unused", pairs, ranges=None, prompt_format="Q: {prompt}\nA:",
                              base_url=f"http://127.0.0.1:{port}/v1")
        text = open(params_path).read().replace("judge: hf:unused", "judge: openai:tiny")
        open(params_path, "w").write(text)
        execute("live_judge", params_path, root)
        sent = counted.posts
        first = {t: pd.read_parquet(root / "live_judge" / f"{t}.parquet") for t in ("verdicts", "battery")}
        assert sent > 0 and (root / "live_judge_calls" / "calls").is_dir()
        for path in root.iterdir():  # a fresh clone's `dvc pull` brings the outs; DVC removes the unkept
            if path.name != "live_judge_calls":
                shutil.rmtree(path)
        execute("live_judge", params_path, root)
        assert counted.posts == sent, "the rerun sent calls the persisted journal holds"
    for name, table in first.items():
        pd.testing.assert_frame_equal(pd.read_parquet(root / "live_judge" / f"{name}.parquet"), table)
    calls = pd.read_parquet(root / "live_judge" / "calls.parquet")
    assert len(calls) == sent and (calls["status"] == "ok").all()


def test_a_stage_left_out_of_params_still_writes_its_persisted_out(tmp_path):
    root = tmp_path / "data"
    execute("live_judge", str(ROOT / "params.yaml"), root)
    assert (root / "live_judge_calls").is_dir() and (root / "live_judge" / "summary.json").is_file()
