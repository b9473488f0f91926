"""PLS on hand-computed win-rate tables, and the win-rate / PLS tables from judgments."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from judgeaudit.audits.leakage import leakage_scores, pair_scores, pls, pls_from_head_to_head, win_rates


def test_pls_symmetric_hand_computed():
    # WR(i,i)=.6, WR(i,j)=.4 -> AVG(i,j)=.5, term=(.6-.5)/.5=.2; same for j -> PLS=.2
    assert pls(0.6, 0.4, 0.6, 0.4) == pytest.approx(0.2)


def test_pls_asymmetric_hand_computed():
    # AVG(i,j)=(.8+.4)/2=.6 -> (.8-.6)/.6=1/3 ; AVG(j,i)=(.5+.5)/2=.5 -> 0 ; PLS=1/6
    assert pls(0.8, 0.4, 0.5, 0.5) == pytest.approx(1 / 6)
    # a judge that favours the other side gives a negative score
    assert pls(0.4, 0.8, 0.5, 0.5) == pytest.approx(0.5 * (0.4 - 0.6) / 0.6)


def test_pls_head_to_head_matches_general_formula():
    a, b = 0.7, 0.45
    assert pls_from_head_to_head(a, b) == pytest.approx(pls(a, b, 1 - b, 1 - a))
    assert pls_from_head_to_head(0.5, 0.5) == 0.0


def test_pls_undefined_average_counts_as_no_leakage():
    # both judges give student i every win: no judge favours anyone more -> 0, not nan
    assert pls_from_head_to_head(1.0, 1.0) == 0.0
    assert pls_from_head_to_head(np.array([1.0, 0.0]), np.array([1.0, 0.0])).tolist() == [0.0, 0.0]


def _judgments(prefer: dict[str, str], prompts=range(12)) -> pd.DataFrame:
    """Judgments where judge J always picks the student of generator prefer[J]
    (or position A when prefer[J] == 'A')."""
    rows = []
    for judge, gen_i, pid in itertools.product(prefer, ["gi"], prompts):
        for order in ("AB", "BA"):
            first = "gi" if order == "AB" else "gj"
            if prefer[judge] == "A":
                verdict = "A"
            else:
                verdict = "A" if prefer[judge] == first else "B"
            rows.append(dict(judge=judge, method="sft", student_base="s", generator_a="gi",
                             generator_b="gj", prompt_id=f"e{pid}", order=order, verdict=verdict))
    return pd.DataFrame(rows)


ROSTER = [{"judge": "Ji", "tier": "same", "related_generator": "gi"},
          {"judge": "Jj", "tier": "same", "related_generator": "gj"}]


def test_pair_scores_cancel_position_bias():
    scores = pair_scores(_judgments({"Ji": "A", "Jj": "gi"}))
    assert scores[scores.judge == "Ji"]["score"].eq(0.5).all()  # always "A": no preference left
    assert scores[scores.judge == "Jj"]["score"].eq(1.0).all()


def test_pair_scores_require_both_orders():
    frame = _judgments({"Ji": "gi"})
    with pytest.raises(ValueError, match="lack one presentation order"):
        pair_scores(frame[frame.order == "AB"])


def test_full_leakage_gives_pls_one_and_no_leakage_zero():
    kw = dict(n_boot=200, confidence=0.95, seed=0)
    leaky = leakage_scores(pair_scores(_judgments({"Ji": "gi", "Jj": "gj"})), ROSTER, **kw)
    pair = leaky[leaky.scope == "pair"].iloc[0]
    assert pair.estimate == pytest.approx(1.0) and pair.n == 12
    fair = leakage_scores(pair_scores(_judgments({"Ji": "gi", "Jj": "gi"})), ROSTER, **kw)
    assert fair[fair.scope == "tier"].iloc[0].estimate == pytest.approx(0.0)


def test_win_rates_both_directions_with_ci():
    rng = np.random.default_rng(0)
    frame = _judgments({"Ji": "gi"}, prompts=range(40))
    flip = rng.random(len(frame) // 2) < 0.3  # 30% of prompts go to gj in both orders
    frame.loc[frame.prompt_id.isin([f"e{k}" for k in np.flatnonzero(flip)]), "verdict"] = \
        frame["verdict"].map({"A": "B", "B": "A"})
    wr = win_rates(pair_scores(frame), n_boot=500, confidence=0.95, seed=0)
    fwd = wr[wr.student_generator == "gi"].iloc[0]
    back = wr[wr.student_generator == "gj"].iloc[0]
    assert fwd.estimate + back.estimate == pytest.approx(1.0)
    assert fwd.ci_low < fwd.estimate < fwd.ci_high
    assert fwd.n == 40


def test_automatic_calibration_removes_a_judge_private_preference():
    from judgeaudit.stages.robustness import auto_calibrated

    rng = np.random.default_rng(0)
    rows = []
    for k in range(40):
        quality = rng.normal(0, 1)  # shared by both judges
        for judge, bias in (("Ji", 2.0), ("Jj", -2.0)):  # each favours its own generator's student
            margin = quality + bias + rng.normal(0, 0.3)
            for order, m in (("AB", margin), ("BA", -margin)):
                rows.append(dict(judge=judge, method="sft", student_base="s", generator_a="gi",
                                 generator_b="gj", prompt_id=f"e{k:02d}", order=order,
                                 verdict="A" if m > 0 else "B", p_a=1 / (1 + np.exp(-m))))
    frame = pd.DataFrame(rows)
    calib = {f"e{k:02d}" for k in range(0, 40, 2)}
    kw = dict(n_boot=200, confidence=0.95, seed=0)
    before = leakage_scores(pair_scores(frame[~frame.prompt_id.isin(calib)]), ROSTER, **kw)
    after = leakage_scores(pair_scores(auto_calibrated(frame, calib, 1e-6)), ROSTER, **kw)
    assert before[before.scope == "tier"].estimate.iloc[0] > 0.5
    assert abs(after[after.scope == "tier"].estimate.iloc[0]) < 0.2
    assert after[after.scope == "tier"].n.iloc[0] == 20  # the held-out half only


def test_leakage_by_task_type_finds_leakage_only_where_it_is_planted():
    """Judges favour their own generator's student on the subjective prompts only."""
    from judgeaudit.audits.leakage import leakage_by_task

    subjective = _judgments({"Ji": "gi", "Jj": "gj"}, prompts=range(0, 12))
    objective = _judgments({"Ji": "gi", "Jj": "gi"}, prompts=range(12, 24))
    categories = pd.Series({f"e{i}": ("describe" if i < 6 else "opinion") if i < 12 else "capital"
                            for i in range(24)})
    table = leakage_by_task(pair_scores(pd.concat([subjective, objective])), categories, ROSTER,
                            n_boot=200, confidence=0.95, seed=0)
    by_type = table[table.scope == "task_type"].set_index("group")
    assert by_type.loc["subjective", "estimate"] == pytest.approx(1.0) and by_type.loc["subjective", "n"] == 12
    assert by_type.loc["objective", "estimate"] == pytest.approx(0.0)
    assert set(table[table.scope == "category"].group) == {"describe", "opinion", "capital"}


def test_subjective_items_have_no_wrong_answer_and_config_checks_them():
    from judgeaudit.config import ConfigError, Corpus
    from judgeaudit.generation.corpus import SUBJECTIVE, degrade, make_items, task_type

    items = make_items(9, 0, "x", SUBJECTIVE)
    assert [it.category for it in items[:3]] == list(SUBJECTIVE) and all(it.fact for it in items)
    assert {task_type(c) for c in SUBJECTIVE} == {"subjective"} and task_type("capital") == "objective"
    with pytest.raises(ValueError, match="no wrong answer"):
        degrade(items[0], __import__("random").Random(0))
    corpus = Corpus(n_pretrain=8, n_train_prompts=4, n_eval_prompts=4, subjective=["describe"])
    assert corpus.prompt_categories[-1] == "describe"
    with pytest.raises((ValueError, ConfigError), match="unknown categories"):
        Corpus(n_pretrain=8, n_train_prompts=4, n_eval_prompts=4, subjective=["poetry"])
