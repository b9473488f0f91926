"""Presentation attacks on a live judge's verdicts on real-format pairs
(``judging.benchmark.attack_items``, ``audits.attack_flips``, ``judge-benchmark --attacks``).

The planted effect: a real tiny Llama fine-tuned on answers that all end with the same
irrelevant paragraph (the distraction attack's), as a judge trained on padded data would be.
Judging by mean log-likelihood, that paragraph appended to the answer it made lose raises the
answer's mean, so the audit must find the judge fooled. Judging by the summed log-likelihood,
an appended text only adds negative terms: no append-only attack can flip a verdict."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from judgeaudit.attacks.presentation import DISTRACTION
from judgeaudit.audits.attack_flips import flip_rates
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.config import Judge
from judgeaudit.judging.benchmark import attack_items, judge_items
from judgeaudit.sources.judgment_table import make_table


@pytest.fixture(scope="module")
def padded_lm(tmp_path_factory):
    from judgeaudit.config import TrainArgs
    from judgeaudit.generation.corpus import make_items
    from judgeaudit.generation.styles import render
    from judgeaudit.models import ModelSpec, load_model
    from judgeaudit.models.scratch import build_llama, train_tokenizer
    from judgeaudit.training.trainers import sft

    root = tmp_path_factory.mktemp("padded_lm")
    rng = random.Random(0)
    rows = [{"prompt": f"Q: {it.prompt}\nA:", "completion": " " + render(it, "formal", rng) + DISTRACTION}
            for it in make_items(96, 0)]
    tok = train_tokenizer((r["prompt"] + r["completion"] for r in rows), 400, root / "tok")
    model = build_llama(tok, layers=1, hidden=32, heads=2, intermediate=64, max_positions=256, seed=0)
    sft(model, root / "tok", rows, root / "lm", TrainArgs(epochs=2, lr=3e-3, batch_size=16), seed=0)
    return load_model(ModelSpec(path=str(root / "lm"), chat_template="Q: {prompt}\nA:", batch_size=8), name="padded")


def _items(n: int = 40) -> pd.DataFrame:
    """Pairs as a benchmark reader gives them: the right answer and an answer stating another
    item's fact, sides alternating; the label names the right one."""
    from judgeaudit.generation.corpus import make_items
    from judgeaudit.generation.styles import render

    rng = random.Random(1)
    items = make_items(n, 7)
    rows = []
    for k, it in enumerate(items):
        right = render(it, "formal", rng)
        wrong = render(it, "formal", rng, fact=items[(k + 1) % n].fact)
        first, second, label = (right, wrong, "1") if k % 2 == 0 else (wrong, right, "2")
        rows.append({"source": "generic", "subset": it.category, "item_id": str(k), "prompt": it.prompt,
                     "response_1": first, "response_2": second, "model_1": "", "model_2": "", "label": label,
                     "human_labels": None, "judge": "-", "strategy": "-", "order": "1", "verdict": "1"})
    table = make_table(rows)
    return table[["source", "subset", "item_id", "prompt", "response_1", "response_2", "model_1", "model_2",
                  "label", "human_labels"]]


def test_a_judge_trained_on_padded_answers_is_fooled_by_padding(padded_lm):
    items = _items()
    settings = Judge(normalise="mean")
    live = judge_items(padded_lm, "padded", "likelihood", settings, items)
    pairs = attack_items(padded_lm, "padded", "likelihood", settings, items, live, ["distraction", "length"])
    decided = pairs[pairs.attack == "distraction"]
    assert 0 < len(decided) <= len(items) and set(decided.attacked) <= {"1", "2"}
    # the attacked response is the one the judge made lose, in the items' own labelling
    assert (decided.score_before < 0.5).all() and decided.right_before.isin([True, False]).all()
    rates = flip_rates(pairs, BootstrapSettings(500, 0.95, 0)).set_index(["attack", "subset", "metric"])
    fooled = rates.loc[("distraction", "all", "fooled_rate")]
    assert fooled.n == int(decided.right_before.eq(True).sum()) > 10
    assert fooled.ci_low > 0.5  # the planted padding preference, found
    flip = rates.loc[("distraction", "all", "flip_rate")]
    assert flip.n == len(decided) and flip.ci_low <= flip.estimate <= flip.ci_high
    # specific to the planted paragraph: the elaboration the judge never saw moves it far less
    assert rates.loc[("length", "all", "flip_rate")].estimate < flip.ci_low
    # per subset too, each with its own n adding up to the pooled one
    per_subset = rates.xs(("distraction", "flip_rate"), level=("attack", "metric")).drop("all")
    assert per_subset.n.sum() == flip.n


def test_summed_likelihood_cannot_be_flipped_by_appending(padded_lm):
    items = _items()
    settings = Judge(normalise="sum")
    live = judge_items(padded_lm, "padded", "likelihood", settings, items)
    appended = ["length", "distraction", "injection", "fake_verdict"]
    pairs = attack_items(padded_lm, "padded", "likelihood", settings, items, live, appended)
    assert len(pairs) == len(appended) * pairs.item_id.nunique() > 0
    assert (pairs.score_before < 0.5).all()  # each attack went to the response the judge made lose
    assert not pairs.flipped.any() and (pairs.score_after <= pairs.score_before).all()
    rates = flip_rates(pairs, BootstrapSettings(200, 0.95, 0))
    assert (rates.estimate == 0).all()


def test_attacks_go_through_the_configured_rewriter(padded_lm):
    """With a model rewriter (params.yaml's attacks.rewriter), the attacked response is its
    rewrite of the loser; without one, the rule-based attack's text."""
    from judgeaudit.attacks.presentation import length_expansion
    from judgeaudit.attacks.rewriter import ModelRewriter

    items = _items(8)
    settings = Judge(normalise="mean")
    live = judge_items(padded_lm, "padded", "likelihood", settings, items)
    rewriter = ModelRewriter(padded_lm, {"length": "Say more: {response}"}, max_new_tokens=12)
    by_rule = attack_items(padded_lm, "padded", "likelihood", settings, items, live, ["length"])
    by_model = attack_items(padded_lm, "padded", "likelihood", settings, items, live, ["length"], rewriter=rewriter)
    losers = [r.response_1 if a == "1" else r.response_2
              for r, a in zip(items.set_index("item_id").loc[by_rule.item_id].itertuples(), by_rule.attacked)]
    assert by_rule.attacked_response.tolist() == [length_expansion(t) for t in losers]
    assert by_model.attacked_response.tolist() == rewriter.rewrite("length", losers)
    assert by_model.attacked_response.tolist() != by_rule.attacked_response.tolist()


def test_judge_benchmark_attacks_command(padded_lm, tmp_path):
    """`judge-benchmark --attacks`: the rates in attacks.parquet, each pair in attack_pairs.parquet,
    a section and a plot in the report; an unknown attack stops before any model loads."""
    import yaml

    from flows.cli import main
    from tests.conftest import tiny_params

    items = _items(24).assign(judge="recorded", strategy="x", order="1", verdict="1")
    data = tmp_path / "pairs.jsonl"
    items.to_json(data, orient="records", lines=True)
    params = tiny_params()
    params["models"]["padded"] = {"spec": {"path": padded_lm.spec.path, "chat_template": "Q: {prompt}\nA:"}}
    params["judge"]["normalise"] = "mean"
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    out = tmp_path / "out"
    args = ["judge-benchmark", "--judge", "padded", "--mode", "likelihood", "--params", str(path), "--source",
            "generic", "--path", str(data), "--out", str(out), "--n-boot", "200", "--no-pu"]
    assert main([*args, "--attacks", "distraction,sentiment"]) == 0
    rates = pd.read_parquet(out / "attacks.parquet")
    assert set(rates.attack) == {"distraction", "sentiment"} and set(rates.judge) == {"padded"}
    assert rates.loc[(rates.attack == "distraction") & (rates.subset == "all")
                     & (rates.metric == "fooled_rate"), "estimate"].item() > 0.5
    pairs = pd.read_parquet(out / "attack_pairs.parquet")
    assert (pairs.score_before < 0.5).all() and set(pairs.right_before.dropna()) <= {True, False}
    assert np.isclose(pairs[pairs.attack == "distraction"].flipped.mean(),
                      rates.query("attack == 'distraction' and subset == 'all' and metric == 'flip_rate'")
                      .estimate.item())
    report = (out / "report.html").read_text()
    assert "Presentation attacks on the live judge" in report and (out / "judges_attacks.png").stat().st_size > 1000
    assert main([*args, "--attacks", "length,shouting"]) == 2
