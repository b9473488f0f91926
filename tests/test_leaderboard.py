"""Leaderboard win rates from recorded annotations (AlpacaEval's format): the reader on a
sample, raw rates as AlpacaEval computes them, a planted length effect removed by the
length-controlled GLM, gamed entries flagged, and, on the real files, every raw figure of
AlpacaEval 2.0's published leaderboard reproduced and NullModel the only entry flagged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.sources import read_source
from tests.conftest import ROOT

SAMPLE = ROOT / "tests" / "data" / "alpacaeval"
REAL = ROOT.parent / "shared" / "data" / "alpacaeval" / "weighted_alpaca_eval_gpt4_turbo"


def test_alpacaeval_reader_on_a_sample():
    table, report = read_source("alpacaeval", SAMPLE)
    assert len(table) == 5 * 30 - 1 and report.summary()["rows_rejected"] == 1  # one missing preference
    assert set(table.model_2) == {"base-model", "model-a", "model-a_verbose", "model-b", "NullModel"}
    assert any("NullModel" in n and "example" in n for n in report.notes)  # named after its file
    assert set(table.model_1) == {"base-model"} and set(table.judge) == {"toy_judge"}
    assert (table.loc[table.p_1 < 0.5, "verdict"] == "2").all() and set(table.subset) == {"koala", "helpful_base"}


def test_raw_win_rates_as_alpacaeval_computes_them():
    from judgeaudit.audits.win_rates import preferences, raw_win_rates

    table, _ = read_source("alpacaeval", SAMPLE)
    raw = raw_win_rates(preferences(table)).set_index("model")
    q = 1 - table[table.model_2 == "model-a"].p_1
    assert raw.loc["model-a", "win_rate"] == pytest.approx(q.mean() * 100)
    assert raw.loc["model-a", "win_rate_se"] == pytest.approx(q.std(ddof=1) / np.sqrt(len(q)) * 100)
    assert raw.loc["base-model", "win_rate"] == 50 and raw.loc["base-model", "n_draws"] == 30
    assert raw.loc["model-b", "n"] == 29


def test_length_control_removes_a_planted_length_effect():
    """A model the judge prefers more the longer its answer, with mostly longer answers:
    its raw rate is inflated; the LC rate recovers the rate at equal length."""
    from scipy.special import expit

    from judgeaudit.audits.win_rates import LCSettings, controlled_one_model

    rng = np.random.default_rng(0)
    n = 600
    difficulty = pd.Series(rng.normal(0, 1, n), index=[f"instruction {i}" for i in range(n)])
    len_base = rng.integers(200, 800, n)
    len_model = len_base + rng.normal(500, 400, n).astype(int)  # mostly longer
    dlen = (len_base - len_model) / np.std(len_base - len_model, ddof=1)
    truth = expit(-0.8 + 0.7 * difficulty.to_numpy())  # at equal length
    q = expit(-0.8 + 0.7 * difficulty.to_numpy() - 2.0 * np.tanh(dlen))
    frame = pd.DataFrame({"prompt": difficulty.index, "q": q, "len_1": len_base, "len_2": len_model})
    fit = controlled_one_model(frame, difficulty, LCSettings(), controls=("length",))
    assert q.mean() * 100 - truth.mean() * 100 > 10  # the planted inflation
    assert fit["rate"] == pytest.approx(truth.mean() * 100, abs=1.5)
    assert fit["weights"]["length"] < -1.5


def _alpacaeval_fit(x: np.ndarray, q: np.ndarray, w: np.ndarray):
    """AlpacaEval's ``fit_LogisticRegressionCV`` (continuous targets, sample weights),
    written out with scikit-learn: every row twice (label 1 weighted q, label 0 weighted
    1 - q), GroupKFold over the original rows, its continuous log-loss as the CV score."""
    import sklearn
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import GroupKFold

    def loss(y_true, y_pred, true_prob, true_sample_weight):
        y = np.where(y_true == 1, true_prob, 1 - true_prob)
        p = np.clip(y_pred, 1e-15, 1 - 1e-15)
        return -np.mean((y * np.log(p) + (1 - y) * np.log(1 - p)) * true_sample_weight)

    n = len(q)
    true_prob, true_weight = np.r_[q, 1 - q], np.r_[w, w]
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_scorer(loss, response_method="predict_proba", greater_is_better=False
                             ).set_score_request(true_sample_weight=True, true_prob=True)
        model = LogisticRegressionCV(cv=GroupKFold(n_splits=5), scoring=scorer, random_state=123, penalty="l1",
                                     solver="liblinear", fit_intercept=False).set_fit_request(sample_weight=True)
        model.fit(np.r_[x, x], np.r_[np.ones(n), np.zeros(n)], sample_weight=true_prob * true_weight,
                  groups=np.r_[np.arange(n), np.arange(n)], true_sample_weight=true_weight, true_prob=true_prob)
    return model


def test_length_controlled_glm_is_alpacaevals_logistic_regression_cv():
    """Same grid, folds, scores and liblinear seeds as AlpacaEval's LogisticRegressionCV:
    the same C and coefficients, gamed rows (weight lambda / 2) included."""
    import warnings

    from scipy.special import expit

    from judgeaudit.audits import win_rates as wr

    rng = np.random.default_rng(1)
    n = 400
    difficulty = pd.Series(rng.normal(0, 1, n), index=[f"i{k}" for k in range(n)])
    len_1 = rng.integers(200, 800, n)
    len_2 = len_1 + rng.normal(300, 400, n).astype(int)
    q = expit(-0.5 + 0.8 * difficulty.to_numpy() - 0.02 * (len_1 - len_2) / 40 + rng.normal(0, 1, n))
    frame = pd.DataFrame({"prompt": difficulty.index, "q": q, "len_1": len_1, "len_2": len_2})
    gamed = pd.DataFrame({"prompt": difficulty.index, "q": rng.uniform(0, 1, n), "len_1": len_1,
                          "len_2": len_1 + rng.normal(0, 300, n).astype(int)})
    fit = wr.controlled_one_model(frame, difficulty, wr.LCSettings(), controls=("length",), gamed=gamed)

    def design(part: pd.DataFrame, not_gamed: float) -> np.ndarray:
        d = (part.len_1 - part.len_2).to_numpy(float)
        return np.column_stack([np.tanh(d / d.std(ddof=1)), difficulty.to_numpy(), np.full(n, not_gamed)])

    x = np.r_[design(gamed, 0.0), design(frame, 1.0)]
    w = np.r_[np.full(n, 0.1), np.ones(n)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # penalty= is deprecated in favour of l1_ratio
        theirs = _alpacaeval_fit(x, np.r_[gamed.q, frame.q], w)
    assert fit["C"] == theirs.C_[0]
    np.testing.assert_allclose(list(fit["weights"].values()), theirs.coef_[0], rtol=0, atol=1e-12)


def test_gamed_entry_flagged_on_the_sample(tmp_path):
    from flows.cli import main

    out = tmp_path / "lb"
    assert main(["leaderboard", "--source", "alpacaeval", "--path", str(SAMPLE), "--out", str(out),
                 "--n-boot", "200"]) == 0
    board = pd.read_parquet(out / "win_rates.parquet")
    assert list(board.columns[:13]) == ["model", "baseline", "judge", "n", "win_rate", "win_rate_se", "lc_win_rate",
                                        "lc_se", "sc_win_rate", "bt_score", "bt_ci_low", "bt_ci_high", "flagged"]
    assert board.loc[board.flagged, "model"].tolist() == ["NullModel"]
    b = board.set_index("model")
    assert b.loc["base-model", "bt_score"] == pytest.approx(1000)
    assert (b.bt_ci_low <= b.bt_score + 1e-9).all() and (b.bt_score <= b.bt_ci_high + 1e-9).all()
    games = pd.read_parquet(out / "gameability.parquet")
    assert set(games.base) == {"model-a"} and (games.n_variants == 2).all()
    assert (out / "leaderboard.html").read_text().count("<img") == 4  # and the position plot


def test_two_worker_processes_give_the_same_board():
    """The gamed-output evidence and the liblinear fits shared among worker processes: the
    same figures to the last bit as in one process."""
    from judgeaudit.stages.leaderboard import LeaderboardSettings, build_leaderboard

    import io

    from tqdm import tqdm

    table, _ = read_source("alpacaeval", SAMPLE)
    bars = [tqdm(file=io.StringIO()) for _ in range(2)]
    one, two = (build_leaderboard(table, LeaderboardSettings(BootstrapSettings(100, 0.95, 0), workers=w), bar)
                for w, bar in zip((1, 2), bars))
    # the stage's bar: the evidence (8 models a step), each model's two GLMs, bootstrap, gameability
    fitted = table.model_2.nunique() - 1  # not the baseline against itself
    assert [(bar.n, bar.total) for bar in bars] == [(1 + 2 * fitted + 2,) * 2] * 2
    pd.testing.assert_frame_equal(one.board, two.board, check_exact=True)
    pd.testing.assert_frame_equal(one.flags, two.flags, check_exact=True)
    assert one.flags.flagged.sum() == 1 and one.board.lc_win_rate.nunique() > 3  # something to get wrong


@pytest.mark.slow
@pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} absent (shared data)")
def test_alpacaeval_2_published_raw_figures_and_nullmodel():
    from judgeaudit.stages.leaderboard import LeaderboardSettings, build_leaderboard

    table, report = read_source("alpacaeval", REAL)
    assert report.summary()["files"] == 58 and len(table) == 46_680  # six files hold 802-804 annotations
    result = build_leaderboard(table, LeaderboardSettings(BootstrapSettings(300, 0.95, 0)))
    pub = result.summary["published"]
    for figure in ("win_rate", "win_rate_se", "n_wins", "n_wins_base", "n_draws", "n", "discrete_win_rate"):
        assert pub[figure] == {**pub[figure], "models": 57, "exact": 57}, figure
    assert result.summary["flagged"] == ["NullModel"]
    flags = result.flags.set_index("model")
    assert flags.loc["NullModel", "cross_instruction_similarity"] > 0.9
    assert flags.drop(index="NullModel").cross_instruction_similarity.max() < 0.3
    # the LC needs AlpacaEval's instruction difficulty and gamed-baseline annotations, neither
    # public: with the difficulty estimated and gpt-3.5-turbo-1106's own length variants
    # standing in for the gamed baselines, 50 of 57 land within one point (6 without them)
    assert result.summary["lc_gamed_stand_in"].startswith("gpt-3.5-turbo-1106_verbose")
    assert pub["lc_win_rate"]["models"] == 57 and pub["lc_win_rate"]["within_1_point"] >= 48
    assert 0.5 < result.summary["separability_bt"] <= 1
    # the bound the judges' self-preference takes for boards without per-item data holds here
    from judgeaudit.audits.self_preference import bound_check

    check = bound_check(result.board, 805)
    assert check["models"] == 58 and check["max_raw_se_over_bound"] <= 1 and check["max_lc_se_over_bound"] <= 1


def test_gamed_stand_in_differences_the_variants_against_their_own_base():
    """The stand-in for AlpacaEval's gamed baselines: the strongest base model with both
    length variants, each variant against it through the common baseline."""
    from scipy.special import expit, logit

    from judgeaudit.audits.win_rates import gamed_stand_in

    rows = []
    for model, q, length in (("weak", 0.1, 50), ("weak_verbose", 0.2, 90), ("weak_concise", 0.05, 20),
                             ("good", 0.4, 100), ("good_verbose", 0.6, 200), ("good_concise", 0.3, 40),
                             ("other", 0.5, 80)):
        rows += [{"model_2": model, "prompt": f"p{i}", "q": q, "len_2": length + i} for i in range(3)]
    gamed, base = gamed_stand_in(pd.DataFrame(rows))
    assert base == "good" and len(gamed) == 6
    verbose = gamed.iloc[0]
    assert verbose.q == pytest.approx(expit(logit(0.6) - logit(0.4))) and (verbose.len_1, verbose.len_2) == (100, 200)
    assert gamed_stand_in(pd.DataFrame(rows).query("model_2 != 'good_concise' and model_2 != 'weak_concise'")) \
        == (None, None)


def _completion(p_m: float) -> dict:
    """A log-prob annotator's raw completion: P("m") = ``p_m`` (the first output shown)."""
    top = [{"token": "m", "logprob": float(np.log(p_m))}, {"token": "M", "logprob": float(np.log1p(-p_m))},
           {"token": "The", "logprob": -15.0}]
    return {"logprobs": {"content": [{"token": "m" if p_m > 0.5 else "M", "top_logprobs": top}]}}


def test_the_shown_order_is_read_off_the_judges_log_probs():
    """AlpacaEval records 2 - P(m) as shown, then 3 - that where it had switched the outputs."""
    from judgeaudit.sources.alpacaeval import shown_switched, switched_by_logprobs

    assert switched_by_logprobs(_completion(0.9), 2 - 0.9) is False
    assert switched_by_logprobs(_completion(0.9), 1 + 0.9) is True
    assert switched_by_logprobs(_completion(0.5), 1.5) is None  # both readings fit
    assert switched_by_logprobs(None, 1.2) is None and switched_by_logprobs({"text": "M"}, 1.2) is None
    assert switched_by_logprobs(_completion(0.9), 1.5) is None  # neither: not this annotator's arithmetic
    draws = [shown_switched(f"instruction {i}") for i in range(400)]
    assert 150 < sum(draws) < 250 and draws == [shown_switched(f"instruction {i}") for i in range(400)]
    assert draws != [shown_switched(f"instruction {i}", seed=1) for i in range(400)]


def _one_order_table(position: float, seed: int = 0, instructions: int = 400) -> pd.DataFrame:
    """Four models against a baseline, each instruction shown in one random order (the same for
    every model); the judge adds ``position`` to the win probability of the output shown first."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, 2, instructions).astype(bool)  # the model shown first
    hard = rng.normal(0, 1, instructions)
    rows = []
    for m, strength in enumerate((-1.5, -0.5, 0.0, 1.0)):
        p = 1 / (1 + np.exp(-(strength - hard)))
        q = np.clip(p + np.where(first, position, -position), 0, 1)
        rows += [{"judge": "j", "model_1": "base", "model_2": f"m{m}", "prompt": f"i{i}", "order": "2" if f else "1",
                  "p_1": 1 - (rng.random() < qi)} for i, (f, qi) in enumerate(zip(first, q))]
    rows += [{"judge": "j", "model_1": "base", "model_2": "base", "prompt": f"i{i}", "order": "1", "p_1": 0.5}
             for i in range(instructions)]
    return pd.DataFrame(rows)


def test_position_bias_of_one_random_order_per_instruction():
    """A planted pull towards the second output is found, per model and pooled; with none
    planted, the CI covers 0 and the randomization test finds nothing."""
    from judgeaudit.audits.position_one_order import POOLED, position_one_order

    boot = BootstrapSettings(500, 0.95, 0)
    planted, summary = position_one_order(_one_order_table(-0.1), boot)
    pooled = planted.set_index("model").loc[POOLED]
    assert pooled.ci_high < 0 and pooled.ci_low < -20 < pooled.ci_high and pooled.p_randomization < 0.01
    assert summary["j"]["first_wins"]["ci_high"] < 0.5 and summary["j"]["models_better_second"] >= 3
    assert "base" not in set(planted.model)  # the baseline against itself tells nothing
    none, summary = position_one_order(_one_order_table(0.0), boot)
    pooled = none.set_index("model").loc[POOLED]
    assert pooled.ci_low < 0 < pooled.ci_high and pooled.p_randomization > 0.05
    assert summary["j"]["first_wins"]["ci_low"] < 0.5 < summary["j"]["first_wins"]["ci_high"]


def test_position_bias_is_not_measured_where_the_log_probs_contradict_the_order():
    from judgeaudit.stages.leaderboard import judge_position

    boot = BootstrapSettings(100, 0.95, 0)
    frame, summary = judge_position(_one_order_table(-0.1), boot, {"order_agrees": 50, "order_contradicted": 50})
    assert frame.empty and "contradict" in summary["skipped"]
    frame, summary = judge_position(_one_order_table(-0.1), boot, {"order_agrees": 100})
    assert len(frame) == 5 and summary["order_check"] == {"order_agrees": 100}


@pytest.mark.slow
@pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} absent (shared data)")
def test_alpacaeval_2s_judge_prefers_the_output_shown_second():
    """AlpacaEval 2.0's GPT-4 Turbo annotations: its seeded order agrees with the judge's own
    log-probs wherever they are kept, and the judge favours the output it is shown second."""
    from judgeaudit.stages.leaderboard import judge_position

    table, report = read_source("alpacaeval", REAL)
    assert report.checks == {"order_agrees": 41_718, "order_unchecked": 4_962}
    assert table.groupby("prompt").order.nunique().max() == 1  # one draw per instruction, every model
    frame, summary = judge_position(table, BootstrapSettings(300, 0.95, 0), report.checks)
    judge = summary["judges"]["weighted_alpaca_eval_gpt4_turbo"]
    assert judge["first_wins"]["n"] == 805 and judge["first_wins"]["ci_high"] < 0.49
    assert judge["difference"]["ci_high"] < -5 and judge["models_better_second"] >= 50
    assert judge["models_better_first"] == 0
