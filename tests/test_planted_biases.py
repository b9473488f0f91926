"""The audit finds each planted bias, and only where it was planted: ``judgeaudit audit-judge``
against ``judgeaudit serve`` on loopback, serving three tiny real transformer judges trained
here (``tests/planted_judges.py``): a FAIR one, trained on judge prompts carrying the
battery's cues where the right answer wins whatever the cues, and two BIASED ones trained on
the same prompts where a cue each carries makes its response win. Between them the biased
judges carry every item of the battery. The pairs audited carry no cue; the battery adds it
to the loser. Each item must be found (CI excluding zero) in the judge carrying it, both as the
share of verdicts it flips and as the share it turns toward the wrong response (the pairs are
labelled: the loser is the wrong one), and in neither the fair judge nor the other biased one;
the neutral-edit control in none. Self-enhancement, which needs a judge that writes, has its
own carrier (``vain``): found there against the fair judge, and not in the fair judge."""

from __future__ import annotations

import json

import pytest
import torch

from flows.cli import main
from judgeaudit.attacks.battery import battery_names
from judgeaudit.models import ModelSpec, load_model
from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.live_server import live_server
from tests.planted_judges import CARRIED, JUDGES, SELF_MARK, VAIN, audit_pairs, train_judges

pytestmark = pytest.mark.slow  # three judges trained: minutes on two cores

CONTROL = "control"  # the battery's neutral edit: no judge was trained on it
SEED = 0


@pytest.fixture(scope="module")
def served_judges(tmp_path_factory):
    """The base URL of a loopback server serving the judges of ``JUDGES``."""
    root = tmp_path_factory.mktemp("planted")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # matrices this small gain nothing from a second thread; contended, it costs
    try:
        paths = train_judges(root, seed=SEED)
    finally:
        torch.set_num_threads(threads)
    models = {name: load_model(ModelSpec(path=str(path), chat_template="{prompt}", batch_size=16), name=name)
              for name, path in paths.items()}
    with live_server(make_app(models, ServeLimits(truncate=True))) as port:
        yield f"http://127.0.0.1:{port}/v1"


def _rates(url: str, judge: str, pairs, out, metric: str = "flip_rate") -> dict[str, dict[str, dict]]:
    """audit-judge on ``judge`` (prompted mode, through the chat endpoint), the whole
    battery: each metric's figures per item as summary.json gives them."""
    assert main(["audit-judge", "--judge", f"openai:{judge}", "--base-url", url, "--data", f"generic={pairs}",
                 "--mode", "prompted", "--biases", "all", "--n-boot", "1000", "--out", str(out),
                 "--params", "none.yaml"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unparseable"] == 0
    return {metric: {bias: figures[metric] for bias, figures in summary["biases"].items()}
            for metric in ("flip_rate", "wrong_rate")}


def _table(rates: dict[str, dict[str, dict]]) -> str:
    """Each item's flip rate per judge, "estimate [ci_low, ci_high] n", found ones starred."""
    names = list(next(iter(rates.values())))
    lines = [f"{'item':24}" + "".join(f"{judge:>26}" for judge in rates)]
    for name in names:
        cells = []
        for judge in rates:
            f = rates[judge].get(name)
            cells.append("-" if f is None else f"{f['estimate']:.2f} [{f['ci_low']:.2f}, {f['ci_high']:.2f}] "
                                              f"{f['n']:>2}{'*' if f['found'] else ' '}")
        lines.append(f"{name:24}" + "".join(f"{c:>26}" for c in cells))
    return "\n".join(lines)


def test_the_biased_judges_carry_every_item_of_the_battery():
    carried = [item for items in CARRIED.values() for item in items]
    assert sorted(carried) == sorted(set(battery_names()) - {CONTROL}), "each item carried by exactly one judge"


def test_each_planted_bias_is_found_in_its_judge_and_nowhere_else(served_judges, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "unused-on-loopback")
    pairs = audit_pairs(40, seed=1, out=tmp_path / "pairs.jsonl")
    both = {judge: _rates(served_judges, judge, pairs, tmp_path / judge) for judge in JUDGES}
    wrong = {judge: both[judge]["wrong_rate"] for judge in JUDGES}
    rates = {judge: both[judge]["flip_rate"] for judge in JUDGES}
    print(f"\nflip rate per battery item (seed {SEED}; * found: CI low > 0)\n" + _table(rates))
    print("\nshare turned toward the wrong response\n" + _table(wrong))
    for carrier, items in CARRIED.items():  # the flips of a planted cue go to the loser it was put on
        for item in items:
            assert wrong[carrier][item]["found"], (carrier, item, wrong[carrier][item])
            for other in JUDGES:
                if other != carrier:
                    assert not wrong[other][item]["found"], (other, item, wrong[other][item])
    for judge in JUDGES:
        control = rates[judge][CONTROL]
        assert not control["found"] and control["ci_low"] == 0, (judge, control)
    for carrier, items in CARRIED.items():
        for item in items:
            mine = rates[carrier][item]
            assert mine["found"] and mine["ci_low"] > 0, (carrier, item, mine)
            # the judge decided most pairs: each had a loser to attack
            assert mine["n"] >= 20, (carrier, item, mine)
            if mine.get("beyond_control") is not None:  # position has no control to be beyond
                assert mine["beyond_control"], (carrier, item, mine)
            for other in JUDGES:
                if other != carrier:
                    theirs = rates[other][item]
                    assert not theirs["found"] and theirs["ci_low"] == 0, (other, item, theirs)
                    assert theirs["n"] >= 20, (other, item, theirs)


def _self_preference(url: str, judge: str, reference: str, pairs, out) -> dict:
    """audit-judge on ``judge`` with ``--self-enhancement reference``: summary.json's figures."""
    assert main(["audit-judge", "--judge", f"openai:{judge}", "--base-url", url, "--data", f"generic={pairs}",
                 "--mode", "prompted", "--biases", "position", "--self-enhancement", f"openai:{reference}",
                 "--answer-tokens", "24", "--n-boot", "1000", "--out", str(out), "--params", "none.yaml"]) == 0
    return json.loads((out / "summary.json").read_text())["self_enhancement"]


def test_self_enhancement_is_found_in_the_judge_that_prefers_its_own_answers_only(served_judges, tmp_path,
                                                                                  monkeypatch):
    """The vain judge writes its answers in its own style and prefers that style: judged
    against the pairs' right answers, it prefers its own far more than the fair judge does.
    The fair judge, whose own answers are no answers, prefers them no more than a biased judge."""
    import pandas as pd

    monkeypatch.setenv("OPENAI_API_KEY", "unused-on-loopback")
    pairs = audit_pairs(40, seed=2, out=tmp_path / "pairs.jsonl")
    vain = _self_preference(served_judges, VAIN, "fair", pairs, tmp_path / "vain")
    own = pd.read_parquet(tmp_path / "vain" / "self_enhancement_verdicts.parquet")
    written = own.drop_duplicates("item_id")["response_1"]
    print(f"\nvain: {vain}\n  its answers, e.g. {list(written[:3])}")
    assert written.str.startswith(SELF_MARK.strip()).mean() >= 0.9  # it wrote in its style
    assert vain["self_preference"]["found"] and vain["self_preference"]["ci_low"] > 0, vain
    assert vain["self_preference"]["n"] == 40
    fair = _self_preference(served_judges, "fair", "biased_a", pairs, tmp_path / "fair")
    print(f"fair: {fair}")
    assert not fair["self_preference"]["found"], fair
