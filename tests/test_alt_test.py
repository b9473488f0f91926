"""The alternative annotator test (audits/alt_test.py): the same winning rates and advantage
probabilities as the paper's procedure written out literally, a judge that sides with the
annotators' consensus passing where a noisy one fails, and the edges (missing labels, too few
items, no variance, no human labels)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgeaudit.audits.alt_test import COLUMNS, AltTestSettings, alt_test
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.sources.judgment_table import COLUMNS as TABLE_COLUMNS

FAST = BootstrapSettings(n_boot=400, confidence=0.95, seed=0)
LABELS = np.array(["1", "2", "tie"], dtype=object)


def _table(humans: np.ndarray, judges: dict[str, np.ndarray], source: str = "synthetic") -> pd.DataFrame:
    """Judgment-table rows: ``humans`` items x annotators (None: not labelled), a verdict per item per judge."""
    rows = [{"source": source, "subset": "all", "item_id": f"{i:04d}", "prompt": "q", "response_1": "a",
             "response_2": "b", "model_1": None, "model_2": None, "judge": judge, "strategy": "default",
             "order": "1", "verdict": verdicts[i], "p_1": None, "label": None, "human_labels": list(humans[i]),
             "raw_output": None} for judge, verdicts in judges.items() for i in range(len(humans))]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _panel(n: int, annotators: int, seed: int, missing: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(annotators' labels, the true labels): each annotator is right 80% of the time."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(LABELS, n)
    humans = np.where(rng.random((n, annotators)) < 0.8, truth[:, None], rng.choice(LABELS, (n, annotators)))
    humans = humans.astype(object)
    humans[rng.random((n, annotators)) < missing] = None
    return humans, truth


def _literal(humans: np.ndarray, llm: np.ndarray, epsilon: float, q: float, min_items: int) -> tuple[float, float]:
    """The paper's procedure as its authors' notebook writes it: loops, Benjamini-Yekutieli by hand."""
    from scipy.stats import ttest_1samp

    p_values, advantages = [], []
    for h in range(humans.shape[1]):
        llm_ind, human_ind = [], []
        for i in range(len(humans)):
            others = [humans[i, k] for k in range(humans.shape[1]) if k != h and humans[i, k] is not None]
            if humans[i, h] is None or not others:
                continue
            human_score = np.mean([humans[i, h] == o for o in others])
            llm_score = np.mean([llm[i] == o for o in others])
            llm_ind.append(int(llm_score >= human_score))
            human_ind.append(int(human_score >= llm_score))
        if len(llm_ind) < min_items:
            continue
        p_values.append(ttest_1samp(np.subtract(human_ind, llm_ind), epsilon, alternative="less").pvalue)
        advantages.append(np.mean(llm_ind))
    m = len(p_values)
    order = np.argsort(p_values)
    thresholds = np.arange(1, m + 1) / m * q / np.sum(1 / np.arange(1, m + 1))
    below = np.nonzero(np.asarray(p_values)[order] <= thresholds)[0]
    rejected = below.max() + 1 if len(below) else 0
    return rejected / m, float(np.mean(advantages))


@pytest.mark.parametrize("missing", [0.0, 0.25])
def test_alt_test_equals_the_papers_procedure_and_passes_only_the_judge_that_sides_with_the_consensus(missing):
    humans, truth = _panel(160, 4, seed=1, missing=missing)
    rng = np.random.default_rng(2)
    judges = {"consensus": np.where(rng.random(len(truth)) < 0.97, truth, rng.choice(LABELS, len(truth))),
              "noisy": np.where(rng.random(len(truth)) < 0.55, truth, rng.choice(LABELS, len(truth))),
              # near the line: raw p-values about q, where the Benjamini-Yekutieli step decides
              "peer": np.where(rng.random(len(truth)) < 0.78, truth, rng.choice(LABELS, len(truth)))}
    settings = AltTestSettings(epsilon=0.1, q=0.05, min_items=30)
    result = alt_test(_table(humans, judges), settings, FAST)
    assert list(result.columns) == COLUMNS and len(result) == 12
    per_judge = result.groupby("judge").first()
    for judge, verdicts in judges.items():
        winning, advantage = _literal(humans, verdicts, 0.1, 0.05, 30)
        assert per_judge.loc[judge, "winning_rate"] == pytest.approx(winning)
        assert per_judge.loc[judge, "advantage_prob"] == pytest.approx(advantage)
    assert per_judge.loc["consensus", "passed"] and not per_judge.loc["noisy", "passed"]
    assert per_judge.loc["consensus", "advantage_prob"] > per_judge.loc["noisy", "ci_high"]
    assert (result.ci_low <= result.advantage_prob).all() and (result.advantage_prob <= result.ci_high).all()
    assert (result.p_by >= result.p_value).all()
    assert result.wins.groupby(result.judge).mean().to_dict() == per_judge.winning_rate.to_dict()
    peer = result[result.judge == "peer"]
    if missing:  # an annotator counts only the items it and another one labelled
        assert (result.n < 160).all()
    else:  # every raw p-value below q, none after the correction: the judge wins against nobody
        assert (peer.p_value < 0.05).all() and not peer.wins.any()


def test_epsilon_to_pass_is_where_the_verdict_turns():
    humans, truth = _panel(200, 3, seed=3)
    rng = np.random.default_rng(4)
    judge = {"j": np.where(rng.random(len(truth)) < 0.7, truth, rng.choice(LABELS, len(truth)))}
    table = _table(humans, judge)
    first = alt_test(table, AltTestSettings(epsilon=0.0), FAST)
    needed = first.epsilon_to_pass.iloc[0]
    assert not first.passed.iloc[0] and 0 < needed < 1
    assert alt_test(table, AltTestSettings(epsilon=needed), FAST).passed.all()
    assert not alt_test(table, AltTestSettings(epsilon=round(needed - 0.01, 2)), FAST).passed.any()


def test_annotators_with_too_few_items_are_left_out_and_constant_margins_decide_by_sign():
    humans = np.array([["1", "1", "1"]] * 40, dtype=object)
    humans[5:, 2] = None  # the third annotator labelled five items only
    table = _table(humans, {"agrees": np.array(["1"] * 40, dtype=object),
                            "disagrees": np.array(["2"] * 40, dtype=object)})
    result = alt_test(table, AltTestSettings(epsilon=0.1, min_items=30), FAST).set_index(["judge", "annotator"])
    assert sorted(result.index.get_level_values("annotator").unique()) == ["annotator1", "annotator2"]
    # always aligned as well as the annotator: margin 0 < epsilon with no variance, a win without a t statistic
    assert result.loc["agrees"].wins.all() and result.loc["agrees"].passed.all()
    assert (result.loc["agrees"].margin == 0).all() and (result.loc["agrees"].p_value == 0).all()
    assert not result.loc["disagrees"].wins.any() and (result.loc["disagrees"].margin == 1).all()
    assert result.loc["disagrees"].epsilon_to_pass.isna().all()  # no epsilon below 1 lets it pass


def test_no_human_labels_no_rows_and_pandalm_unparseable_counts_as_a_tie():
    humans, truth = _panel(40, 3, seed=5)
    table = _table(humans, {"j": truth})
    assert alt_test(table.assign(human_labels=None), AltTestSettings(), FAST).empty
    assert list(alt_test(table.iloc[:0], AltTestSettings(), FAST).columns) == COLUMNS
    ties = np.array(["tie"] * 40, dtype=object)
    garbled = _table(humans, {"j": np.array(["unparseable"] * 40, dtype=object)}, source="pandalm")
    as_ties = alt_test(_table(humans, {"j": ties}, source="pandalm"), AltTestSettings(), FAST)
    assert alt_test(garbled, AltTestSettings(), FAST).drop(columns="judge").equals(as_ties.drop(columns="judge"))
