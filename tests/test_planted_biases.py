"""The audit finds a planted bias, and only where it was planted: ``judgeaudit audit-judge``
against ``judgeaudit serve`` on loopback, serving two tiny real transformer judges trained
here (``tests/planted_judges.py``): a BIASED one, trained on judge prompts where the
response that alone carries the battery's verbosity elaboration or authority citation
wins, and a FAIR one, trained on the same prompts where the right answer wins whatever
the cues. The pairs audited carry no cue; the battery adds it to the loser. Each planted
bias must be found in the biased judge (flip-rate CI excluding zero) and not in the fair one."""

from __future__ import annotations

import json

import pytest
import torch

from flows.cli import main
from judgeaudit.models import ModelSpec, load_model
from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.live_server import live_server
from tests.planted_judges import PLANTED, audit_pairs, train_judges

pytestmark = pytest.mark.slow  # two judges trained from scratch: over a minute on two cores


@pytest.fixture(scope="module")
def served_judges(tmp_path_factory):
    """The base URL of a loopback server serving the judges "fair" and "biased"."""
    root = tmp_path_factory.mktemp("planted")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # matrices this small gain nothing from a second thread; contended, it costs
    try:
        paths = train_judges(root)
    finally:
        torch.set_num_threads(threads)
    models = {name: load_model(ModelSpec(path=str(path), chat_template="{prompt}", batch_size=16), name=name)
              for name, path in paths.items()}
    with live_server(make_app(models, ServeLimits(truncate=True))) as port:
        yield f"http://127.0.0.1:{port}/v1"


def _flip_rates(url: str, judge: str, pairs, out) -> dict[str, dict]:
    """audit-judge on ``judge`` (prompted mode, through the chat endpoint): each planted
    bias's flip rate as summary.json gives it."""
    assert main(["audit-judge", "--judge", f"openai:{judge}", "--base-url", url, "--data", f"generic={pairs}",
                 "--mode", "prompted", "--biases", ",".join(PLANTED), "--n-boot", "1000", "--out", str(out),
                 "--params", "none.yaml"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unparseable"] == 0
    return {bias: summary["biases"][bias]["flip_rate"] for bias in PLANTED}


def test_each_planted_bias_is_found_in_its_judge_and_not_in_the_fair_one(served_judges, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "unused-on-loopback")
    pairs = audit_pairs(32, seed=1, out=tmp_path / "pairs.jsonl")
    biased = _flip_rates(served_judges, "biased", pairs, tmp_path / "biased")
    fair = _flip_rates(served_judges, "fair", pairs, tmp_path / "fair")
    print(json.dumps({"biased": biased, "fair": fair}, indent=1))
    for bias in PLANTED:
        assert biased[bias]["found"] and biased[bias]["ci_low"] > 0, (bias, biased[bias])
        # the judge decided most pairs: each had a loser to attack
        assert biased[bias]["n"] >= 20, (bias, biased[bias])
        assert not fair[bias]["found"] and fair[bias]["ci_low"] == 0, (bias, fair[bias])
        assert fair[bias]["n"] >= 20, (bias, fair[bias])
