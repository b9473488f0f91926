"""PU audit: the entropic partial-OT solver matches POT's, and on a planted mixture
(correct verdicts in a cone, wrong ones pointing away) the audit recovers the labels."""

from __future__ import annotations

import numpy as np
import ot
import pandas as pd
import pytest

from judgeaudit.audits.partial_ot import cosine_cost, entropic_partial_marginals, transported_mass
from judgeaudit.audits.pu_audit import (M_VALUES, P_RATIOS, PUConfig, consistency_table, denoise, run_pu_audit,
                                        sensitivity, suspect_auc)


@pytest.mark.parametrize("m", [0.3, 0.8])
def test_entropic_marginals_match_pot(m):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 6)), rng.normal(size=(45, 6))
    a, b = np.full(30, 1 / 30), np.full(45, 1 / 45)
    cost = cosine_cost(x, y)
    plan = ot.partial.entropic_partial_wasserstein(a, b, cost, reg=0.1, m=m, numItermax=60)
    rows, cols, it = entropic_partial_marginals(a, b, cost.copy(), m, reg=0.1, max_iter=60, tol=0)
    assert it == 60
    np.testing.assert_allclose(cols, plan.sum(0), atol=1e-12)
    np.testing.assert_allclose(rows, plan.sum(1), atol=1e-12)
    assert cols.sum() == pytest.approx(m)


def test_exact_and_entropic_agree_on_who_gets_mass():
    rng = np.random.default_rng(1)
    src = rng.normal(size=(60, 8)) + 3
    tgt = np.vstack([rng.normal(size=(50, 8)) + 3, rng.normal(size=(50, 8)) - 3])
    exact = transported_mass(src, tgt, 0.5, method="exact")
    entropic = transported_mass(src, tgt, 0.5, method="entropic", reg=0.02, max_iter=500)
    assert exact[:50].sum() == pytest.approx(0.5) and exact[50:].sum() == pytest.approx(0.0)
    assert entropic[:50].sum() > 0.95 * 0.5


def test_denoise_keeps_keep_squared():
    z = np.random.default_rng(2).normal(size=(100, 4))
    kept = denoise(z, 0.7)
    assert len(kept) == 49 and len(set(kept)) == 49


def planted(n: int = 400, correct: float = 0.7, dim: int = 16, seed: int = 0):
    rng = np.random.default_rng(seed)
    u = rng.normal(size=dim)
    u /= np.linalg.norm(u)
    truth = u + 0.35 * rng.normal(size=(n, dim))  # true improvement directions: a cone around u
    ok = rng.random(n) < correct
    z = np.where(ok[:, None], truth, -truth)  # a wrong verdict swaps winner and loser
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    human = rng.choice(["A", "B"], size=n)
    verdict = np.where(ok, human, np.where(human == "A", "B", "A"))
    frame = pd.DataFrame({"pair_id": np.arange(n), "qtype": rng.choice(["math", "code"], size=n),
                          "verdict": verdict, "human": human})
    loser = 2 * u + rng.normal(size=(n, dim))  # F(x, o): the human's winner is its loser plus the truth
    winner = loser + truth
    a_wins = (human == "A")[:, None]
    return frame, z, (np.where(a_wins, winner, loser), np.where(a_wins, loser, winner))


def test_planted_mixture_is_recovered():
    frame, z, pairs = planted()
    results = run_pu_audit(frame, z, PUConfig(n_splits=3, seed=0), pairs=pairs)
    table = consistency_table(results, n_boot=300, confidence=0.95, seed=0).set_index("qtype")
    overall = table.loc["all"]
    assert 0.6 < overall.cons_orig < 0.8
    assert overall.cons_adj > 0.9  # wide cone: noise norm exceeds the signal
    assert overall.cons_adj_ci_low > overall.cons_orig_ci_high
    assert overall.flip_rate == pytest.approx(1 - overall.cons_orig, abs=0.06)
    assert set(table.index) == {"math", "code", "all"}


def test_audit_leaves_a_perfect_judge_alone():
    frame, z, pairs = planted(correct=1.0)
    results = run_pu_audit(frame, z, PUConfig(n_splits=2, seed=1), pairs=pairs)
    assert results["flipped"].mean() < 0.1


def test_verified_positives_come_from_the_clean_frame():
    """Under attack the positives are the verified pairs' clean improvement vectors: clean
    vectors that point elsewhere than the audited ones' truth must change the outcome, and
    a clean frame of other pairs is refused."""
    frame, z, _ = planted()
    cfg = PUConfig(n_splits=2, seed=3, core_filter="difference")
    alone = consistency_table(run_pu_audit(frame, z, cfg), n_boot=200, confidence=0.95, seed=0).iloc[-1]
    rng = np.random.default_rng(9)
    other = rng.normal(size=z.shape[1])
    other -= (other @ z.mean(axis=0)) / (z.mean(axis=0) @ z.mean(axis=0)) * z.mean(axis=0)  # orthogonal to u
    z_clean = other / np.linalg.norm(other) + 0.1 * rng.normal(size=z.shape)
    clean = frame.assign(verdict=frame["human"])  # the clean verdicts: all verified right
    verified = consistency_table(run_pu_audit(frame, z, cfg, (clean, z_clean)), n_boot=200, confidence=0.95,
                                 seed=0).iloc[-1]
    assert alone.cons_adj > 0.9 and verified.cons_adj < 0.8
    assert verified.cons_orig == pytest.approx(alone.cons_orig)  # the audited verdicts are the same
    with pytest.raises(ValueError, match="same pairs"):
        run_pu_audit(frame, z, cfg, (clean.iloc[::-1], z_clean))


def test_paper_positives_take_every_labelled_pair_in_the_humans_order():
    """A judge wrong on every pair: our positives (pairs the judge got right) are none, so
    nothing is flipped; the paper's (every labelled pair, turned to the human's order)
    point the audit to the truth, and it flips the verdicts back."""
    frame, z, pairs = planted(correct=0.0)
    table = {}
    for positives in ("all", "agreed"):
        cfg = PUConfig(n_splits=2, seed=4, positives=positives)
        table[positives] = consistency_table(run_pu_audit(frame, z, cfg, pairs=pairs), n_boot=200,
                                             confidence=0.95, seed=0).iloc[-1]
    assert table["agreed"].cons_adj == 0.0 and table["agreed"].flip_rate == 0.0
    assert table["all"].cons_adj > 0.9


def test_core_filter_reads_the_winners_embeddings():
    """The paper's P-core keeps the positives whose winner embedding e_i lies near the
    winners' centre, whatever their z; ours (``core=None``) reads the z alone."""
    rng = np.random.default_rng(5)
    z = rng.normal(size=(40, 6))
    core = np.tile(np.eye(6)[0], (40, 1)) + 0.05 * rng.normal(size=(40, 6))
    core[:10] = -core[:10]  # a quarter of the winners lie far from the others
    kept = set(denoise(z, 0.7, core))
    assert kept.isdisjoint(range(10)) and set(denoise(z, 0.7)) & set(range(10))


def test_winner_filter_needs_both_embeddings():
    frame, z, _ = planted(n=40)
    with pytest.raises(ValueError, match="winner's embedding"):
        run_pu_audit(frame, z, PUConfig(n_splits=1))


def test_m_sweep_shows_the_collapse_at_small_mass():
    """The paper's sweeps, 0.01 to 0.99: with m = 0.01 nearly every unlabelled verdict gets
    no mass and is flipped (the adjustment makes a good judge worse), while near the
    judge's consistency the adjustment helps."""
    frame, z, pairs = planted(n=200)
    sens = sensitivity(frame, z, PUConfig(n_splits=6, seed=0), confidence=0.95, pairs=pairs, n_boot=100)
    assert list(sens[sens.sweep == "p_ratio"].p_ratio) == list(P_RATIOS)
    m_rows = sens[sens.sweep == "m"].reset_index(drop=True)
    assert list(m_rows.m) == pytest.approx(list(M_VALUES))
    at = dict(zip(M_VALUES, m_rows.itertuples()))
    assert at[0.01].gain_ci_high < 0 < at[0.7].gain_ci_low


def test_suspect_score_ranks_wrong_verdicts_low():
    frame, z, pairs = planted()
    results = run_pu_audit(frame, z, PUConfig(n_splits=2, seed=0), pairs=pairs)
    auc = suspect_auc(results, n_boot=200, confidence=0.95, seed=0)
    assert auc["auc_ci_low"] > 0.9 and auc["n"] == results.pair_id.nunique()
    shuffled = results.assign(score=np.random.default_rng(0).random(len(results)))
    assert 0.35 < suspect_auc(shuffled, n_boot=200, confidence=0.95, seed=0)["auc"] < 0.65


def test_decisive_verdicts_exclude_ties_instead_of_reading_them_as_a():
    from judgeaudit.stages.pu import decisive_verdicts

    # BA verdicts are in the swapped labelling: "B" there means the canonical first response
    orders = {"p1": ("A", "B"), "p2": ("tie", "tie"), "p3": ("A", "A"), "p4": ("tie", "A"),
              "p5": ("unparseable", "unparseable"), "p6": ("unparseable", "A")}
    judgments = pd.DataFrame([{"prompt_id": p, "order": o, "verdict": v}
                              for p, pair in orders.items() for o, v in zip(("AB", "BA"), pair)])
    got = decisive_verdicts(judgments).to_dict()
    assert got == {"p1": "A", "p2": "tie", "p3": "A", "p4": "B", "p5": "unparseable", "p6": "B"}


def test_last_token_pooling_reads_a_decoder_like_a_reward_model(tiny_lm):
    """A decoder as F(x, o): left padding puts every text's last token at the last position,
    so a text's vector does not depend on the batch it was padded in."""
    from judgeaudit.models.encoder import Encoder

    encoder = Encoder(tiny_lm.spec.path, pooling="last", batch_size=8)
    texts = ["The capital of France is Paris.", "Paris.", "What is 2 plus 3? It is 5, as the sum shows."]
    together = encoder.embed(texts)
    alone = np.concatenate([encoder.embed([t]) for t in texts])
    assert together.shape == (3, 32)
    np.testing.assert_allclose(together, alone, atol=1e-4)
    assert not np.allclose(together[0], together[1])
