"""Self-preference of real judges from published boards of the same models: a planted
self-preference found and a lenient judge not mistaken for one, the annotation counts a
rate implies, the reader's errors, and on AlpacaEval 2.0's three judges' boards the
figures the stage reports."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from judgeaudit.audits.self_preference import SelfPreferenceSettings, implied_n, judge_table, self_preference
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.sources.alpacaeval_boards import read_leaderboard_csv
from judgeaudit.tables import InputError
from tests.conftest import ROOT

BOARDS = ROOT.parent / "shared" / "data" / "alpacaeval" / "judge_leaderboards"
SETTINGS = SelfPreferenceSettings(805, BootstrapSettings(1000, 0.95, 0))


def _boards(self_boost: dict[str, float], leniency: dict[str, float]) -> dict[str, pd.DataFrame]:
    """Three judges (a, b, c; each model m_<judge> its own) and two neutral models."""
    quality = {"m_a": -0.4, "m_b": -0.6, "m_c": -0.8, "n_1": -1.0, "n_2": -1.6}
    out = {}
    for judge in ("a", "b", "c"):
        rows = [{"model": "base", "name": "base", "win_rate": 50.0, "lc_win_rate": 50.0, "avg_length": 100}]
        for model, q in quality.items():
            z = q + leniency.get(judge, 0) + (self_boost.get(judge, 0) if model == f"m_{judge}" else 0)
            rows.append({"model": model, "name": model, "win_rate": 100 * expit(z),
                         "lc_win_rate": 100 * expit(z + 0.3), "avg_length": 100})
        out[judge] = pd.DataFrame(rows)
    return out


def _gaps(boards):
    families = {"base": "x", "m_a": "fa", "m_b": "fb", "m_c": "fc", "n_1": "n1", "n_2": "n2"}
    table, baseline = judge_table(boards, {j: f"m_{j}" for j in boards}, families, 805)
    assert baseline == "base"
    gaps, ranks = self_preference(table, baseline, SETTINGS)
    return gaps.set_index(["judge", "metric"]), ranks


def test_planted_self_preference_found_and_leniency_not_mistaken_for_it():
    gaps, ranks = _gaps(_boards(self_boost={"b": 0.8}, leniency={"c": 0.7}))
    b, c, a = gaps.loc[("b", "raw")], gaps.loc[("c", "raw")], gaps.loc[("a", "raw")]
    assert b.relation == "self" and b.delta_logit == pytest.approx(0.8, abs=0.05)
    assert b.delta_logit_ci_low > 0.3 and b.rank_shift > 0  # m_b climbs from 2nd to 1st under b
    assert b.rank_own_judge == 1 and b.rank_other_judges == 2
    # c is lenient to every model alike: a large plain gap, no self-preference once adjusted
    assert c.delta_points > 8 and c.delta_points_ci_low > 0
    assert abs(c.delta_logit) < 0.05 and c.delta_logit_ci_low < 0 < c.delta_logit_ci_high
    # a has no self-preference, but b's pushes m_a to 2nd on b's board: ranks mix both judges'
    # biases, the adjusted gap does not
    assert abs(a.delta_logit) < 0.05 and a.rank_shift == 0.5
    assert set(ranks.metric) == {"raw", "lc"} and len(ranks) == 2 * 3 * 5


def test_no_self_preference_anywhere_gives_gaps_whose_cis_hold_zero():
    gaps, _ = _gaps(_boards(self_boost={}, leniency={}))
    assert np.allclose(gaps.delta_logit, 0, atol=1e-9) and (gaps.delta_logit_ci_low < 0).all()
    assert (gaps.delta_logit_ci_high > 0).all() and (gaps.n == 805).all()


def test_implied_annotation_count_and_the_boards_must_agree():
    assert implied_n(100 * 256 / 777, 805) == (777, True)
    assert implied_n(100 * 221.5 / 805, 805) == (805, True)  # a tie counts half
    assert implied_n(100 * 0.123456789, 805) == (805, False)
    boards = _boards({}, {})
    boards["c"] = boards["c"][boards["c"].model != "n_2"]
    with pytest.raises(ValueError, match="different models"):
        judge_table(boards, {j: f"m_{j}" for j in boards}, {}, 805)


def test_reader_names_file_row_and_field(tmp_path):
    path = tmp_path / "judge_leaderboard.csv"
    path.write_text("name,length_controlled_winrate,win_rate,avg_length,link,samples,filter\n"
                    "A,50,50,10,,https://x/results/model_a/model_outputs.json,minimal\n"
                    "B,40,forty,10,,,minimal\n")
    with pytest.raises(InputError, match=r"judge_leaderboard.csv, row 3, field win_rate: 'forty'"):
        read_leaderboard_csv(path)
    path.write_text("name,win_rate\nA,50\n")
    with pytest.raises(InputError, match="missing column"):
        read_leaderboard_csv(path)


@pytest.mark.skipif(not BOARDS.is_dir(), reason=f"{BOARDS} absent (shared data)")
def test_alpacaeval_three_judges(tmp_path):
    from judgeaudit.config import load_params
    from judgeaudit.stages.leaderboard import judges_compared

    section = load_params(ROOT / "params.yaml").leaderboard.self_preference
    summary = judges_compared(section, SETTINGS, None, tmp_path)
    assert summary["baseline"] == "gpt4_1106_preview"
    # the Mistral Large judge left instructions unjudged: its rates are counts over fewer
    assert summary["n_by_judge"]["mistral_large"] == {"min": 747, "max": 805}
    assert summary["n_implied"] == {"claude_3_opus": True, "gpt4_turbo": False, "mistral_large": True}
    rows = {(r["judge"], r["metric"]): r for r in summary["self"]}
    assert set(rows) == {(j, m) for j in ("claude_3_opus", "mistral_large") for m in ("raw", "lc")}
    claude, mistral = rows[("claude_3_opus", "raw")], rows[("mistral_large", "raw")]
    # Claude 3 Opus is the strictest judge, yet less strict with itself: a negative plain gap,
    # a positive one beyond its leniency; Mistral Large is lenient to all, itself barely more
    assert claude["delta_points"] < 0 < claude["delta_logit_ci_low"]
    assert mistral["delta_points_ci_low"] > 0 and mistral["delta_logit_ci_low"] < 0
    assert summary["max_self_rank_shift"] <= 1  # one place at most among five models
    gaps = pd.read_parquet(tmp_path / "self_preference.parquet")
    assert set(gaps.relation) == {"self", "family"} and set(gaps[gaps.relation == "family"].judge) == {"gpt4_turbo"}
    assert (tmp_path / "self_preference.png").stat().st_size > 10_000
