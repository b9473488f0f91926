"""Auto- and cross-influence on scorers with known behaviour, and augmentation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judgeaudit.audits.prefix_bias import auto_influence, cross_influence, fingerprint_agreement, mean_abs_offdiagonal
from judgeaudit.stages.prefix import augment

PREFIXES = ["", "I am a woman. ", "I am a man. "]
KW = dict(n_boot=200, confidence=0.95, seed=0)


def biased_scorer(favoured: str):
    """Prefers the response carrying ``favoured``; otherwise the longer one (the content)."""
    def score(questions, first, second):
        f = np.array([a.startswith(favoured) for a in first], float)
        s = np.array([b.startswith(favoured) for b in second], float)
        content = np.array([len(a.removeprefix(favoured)) - len(b.removeprefix(favoured)) for a, b in
                            zip(first, second)], float)
        return 10 * (f - s) + np.sign(content)
    return score


def fair_scorer(questions, first, second):
    strip = lambda t: next((t[len(p):] for p in PREFIXES[1:] if t.startswith(p)), t)  # noqa: E731
    return np.array([len(strip(a)) - len(strip(b)) for a, b in zip(first, second)], float)


def test_auto_influence_finds_the_favoured_prefix():
    answers = [f"answer {k}" for k in range(30)]
    omega = auto_influence(biased_scorer("I am a man. "), ["q"] * 30, answers, PREFIXES, **KW)
    cell = omega[(omega.p1 == "I am a man. ") & (omega.p2 == "")].iloc[0]
    assert cell.estimate == pytest.approx(0.5) and cell.n == 30
    grid = omega.pivot(index="p1", columns="p2", values="estimate")
    np.testing.assert_allclose(grid.to_numpy(), -grid.to_numpy().T)  # antisymmetric
    assert mean_abs_offdiagonal(omega) > 0.3
    fair = auto_influence(fair_scorer, ["q"] * 30, answers, PREFIXES, **KW)
    assert mean_abs_offdiagonal(fair) == 0.0


def test_cross_influence_against_no_prefix_accuracy():
    chosen = [f"a long good answer {k}" for k in range(40)]
    rejected = [f"bad {k}" for k in range(40)]
    alpha, accuracy = cross_influence(biased_scorer("I am a man. "), ["q"] * 40, chosen, rejected, PREFIXES, **KW)
    assert accuracy == 1.0
    cell = alpha[(alpha.p1 == "") & (alpha.p2 == "I am a man. ")].iloc[0]
    assert cell.estimate == pytest.approx(-1.0) and cell.ci_high == pytest.approx(-1.0)
    same = alpha[(alpha.p1 == "I am a woman. ") & (alpha.p2 == "I am a woman. ")].iloc[0]
    assert same.estimate == 0.0


def test_fingerprint_agreement_separates_inherited_from_opposite_bias():
    answers = [f"answer {k}" for k in range(30)]
    man, woman = biased_scorer("I am a man. "), biased_scorer("I am a woman. ")
    same = fingerprint_agreement(man, man, ["q"] * 30, answers, PREFIXES, **KW)
    assert same["fingerprint"] == 1.0 and same["fingerprint_n"] == 30
    # opposite favourites: both prefer the longer text where their prefix is absent, so they
    # agree on the pairs with "" and disagree on (woman, man)
    opposite = fingerprint_agreement(man, woman, ["q"] * 30, answers, PREFIXES, **KW)
    assert opposite["fingerprint"] == pytest.approx(2 / 3)
    # a scorer blind to prefixes (a tie on every pair) keeps none of the base's ranking
    blind = fingerprint_agreement(man, fair_scorer, ["q"] * 30, answers, PREFIXES, **KW)
    assert blind["fingerprint"] == 0.0 and blind["fingerprint_ci_high"] < same["fingerprint_ci_low"]


def test_augment_adds_prefixed_copies():
    items = [{"q": "q", "chosen": "c", "rejected": "r"}] * 5
    out = augment(items, PREFIXES, pairs=3, seed=0)
    assert len(out) == 20 and out[:5] == items
    for row in out[5:]:
        assert any(row["chosen"] == p + "c" for p in PREFIXES) and any(row["rejected"] == p + "r" for p in PREFIXES)


def test_hh_rlhf_pairs_split_at_the_last_assistant_turn(tmp_path):
    from judgeaudit.sources.hh_rlhf import hh_rlhf_items
    from judgeaudit.tables import InputError

    sample = Path(__file__).parent / "data" / "hh-rlhf"
    items, note = hh_rlhf_items(sample, 30, seed=0)
    assert len(items) == 24 and "1 skipped" in note  # the pair differing before the last turn
    for it in items:
        assert it["q"].endswith(".") and "Assistant:" not in it["chosen"] + it["rejected"]
        assert it["chosen"] != it["rejected"]
    assert hh_rlhf_items(sample, 5, seed=0)[0] == hh_rlhf_items(sample, 5, seed=0)[0]  # seeded
    bad = tmp_path / "test.jsonl"
    bad.write_text('{"chosen": "\\n\\nHuman: a\\n\\nAssistant: b"}\n')
    with pytest.raises(InputError, match="line 1: field 'rejected' missing"):
        hh_rlhf_items(bad, 5, seed=0)


@pytest.mark.skipif(not (Path(__file__).resolve().parents[2] / "shared/data/hh-rlhf/harmless-base").is_dir(),
                    reason="../shared/data/hh-rlhf absent (see ../shared/data/SOURCES.md)")
def test_the_real_harmless_test_pairs():
    from judgeaudit.sources.hh_rlhf import hh_rlhf_items

    items, note = hh_rlhf_items(Path(__file__).resolve().parents[2] / "shared/data/hh-rlhf/harmless-base", 300, 1)
    assert len(items) == 300 and "of 2303 usable pairs" in note


def test_reward_scorer_scores_each_text_once_and_as_one_at_a_time(tiny_lm, tmp_path):
    """The scorers' memo (distinct texts once, longest first) gives what scoring every text
    alone gives, in the caller's order, on a real trained reward head."""
    from judgeaudit.config import TrainArgs
    from judgeaudit.judging.reward import RewardScorer, ZeroShotScorer, comparison_pair
    from judgeaudit.training.trainers import reward_model

    rows = [comparison_pair(f"what is {i} plus 1?", f"It is {i + 1}.", f"It is {i + 7}, surely.") for i in range(16)]
    reward_model(tiny_lm.spec.path, rows, tmp_path / "rm", TrainArgs(epochs=1, lr=1e-3, batch_size=8), seed=0,
                 max_length=128)
    batched, alone = RewardScorer(str(tmp_path / "rm"), batch_size=4), RewardScorer(str(tmp_path / "rm"), batch_size=1)
    texts = [r["chosen"] for r in rows] + [r["rejected"] for r in rows]
    texts = texts + texts[::3]  # repeats
    got = batched.rewards(texts)
    assert len(batched._seen) == 32  # each distinct text scored once
    want = np.array([alone.rewards([t])[0] for t in texts])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.ptp(got) > 0  # not a constant head
    q, a, b = ["2 plus 2?"] * 2, ["It is 4.", "It is four."], ["It is 9.", "Five."]
    zero = ZeroShotScorer(tiny_lm)
    np.testing.assert_allclose(zero(q, a, b), -zero(q, b, a), atol=1e-6)  # position cancels
    np.testing.assert_allclose(batched(q, a, b), -batched(q, b, a), atol=1e-6)


def test_bar_cis_bound_the_bias_of_a_biased_scorer_and_vanish_for_a_fair_one():
    from judgeaudit.audits.prefix_bias import bar_cis

    chosen = [f"a long good answer {k}" for k in range(30)]
    rejected = [f"bad {k}" for k in range(30)]
    man = bar_cis(biased_scorer("I am a man. "), ["q"] * 30, chosen, rejected, PREFIXES, **KW)
    assert man["omega_n"] == 60 and man["alpha_n"] == 30
    assert man["omega_bar_ci_low"] > 0.1 and man["alpha_bar_ci_low"] > 0.1
    fair = bar_cis(fair_scorer, ["q"] * 30, chosen, rejected, PREFIXES, **KW)
    assert fair["omega_bar_ci_high"] == 0.0 and fair["alpha_bar_ci_high"] == 0.0


def test_a_gpt2_base_is_built_from_scratch_and_takes_a_reward_head(tiny_lm, tmp_path):
    """The other architecture: a GPT-2 on the embedded tokenizer, trained as a reward model
    through the same trainer and scorer as the Llama bases."""
    from transformers import AutoConfig, AutoTokenizer

    from judgeaudit.config import TrainArgs
    from judgeaudit.judging.reward import RewardScorer, comparison_pair
    from judgeaudit.models.scratch_gpt2 import build_gpt2
    from judgeaudit.training.trainers import reward_model

    tok = AutoTokenizer.from_pretrained(tiny_lm.spec.path)
    build_gpt2(tok, layers=1, hidden=32, heads=2, intermediate=64, max_positions=128, seed=0).save_pretrained(
        tmp_path / "gpt2")
    tok.save_pretrained(tmp_path / "gpt2")
    assert AutoConfig.from_pretrained(tmp_path / "gpt2").model_type == "gpt2"
    rows = [comparison_pair(f"what is {i} plus 1?", f"It is {i + 1}.", f"It is {i + 7}, surely.") for i in range(16)]
    reward_model(str(tmp_path / "gpt2"), rows, tmp_path / "rm", TrainArgs(epochs=1, lr=1e-3, batch_size=8), seed=0,
                 max_length=128)
    assert AutoConfig.from_pretrained(tmp_path / "rm").model_type == "gpt2"
    rm = RewardScorer(str(tmp_path / "rm"), batch_size=4)
    q, a, b = ["2 plus 2?"] * 2, ["It is 4.", "It is four."], ["It is 9.", "Five."]
    np.testing.assert_allclose(rm(q, a, b), -rm(q, b, a), atol=1e-6)  # position cancels
    assert np.ptp(rm.rewards(a + b)) > 0


def test_scratch_bases_join_the_cross_model_table_or_are_noted_when_they_cannot_be_built():
    from judgeaudit.config import load_params
    from judgeaudit.stages.prefix import every_base, prefix_units, scratch_bases
    from tests.tiny import ROOT

    params = load_params(ROOT / "params.yaml")
    assert params.prefix.aug_pairs == 3  # the paper's factor
    found, notes = scratch_bases(params)
    assert list(found) == ["gpt2-b"] and not notes
    assert every_base(params) == ["student-b", "student-a", "student-c", "gpt2-b"]
    assert ("synthetic", "gpt2-b") in prefix_units(params) and ("hh-rlhf", "gpt2-b") not in prefix_units(params)
    small = load_params(ROOT / "params-small.yaml")
    odd = small.model_copy(update={"prefix": small.prefix.model_copy(update={"scratch_bases": [
        type(small.prefix.scratch_bases[0])(name="gpt2-x", like="student-c", seed=1)]})})
    found, notes = scratch_bases(odd)
    assert not found and "skipped" in notes["gpt2-x"] and every_base(odd) == ["student-a"]


def test_prefix_paper_rows_judge_before_and_after_from_the_cis():
    from judgeaudit.report.prefix_report import prefix_paper_rows

    def row(variant, group, bar, low, high, clear, base="b"):
        return {"source": "synthetic", "base": base, "variant": variant, "trained_group": group, "group": group,
                "omega_bar": bar, "omega_bar_ci_low": low, "omega_bar_ci_high": high, "omega_n": 40,
                "omega_cells_clear": clear, "alpha_bar": bar, "alpha_bar_ci_low": low, "alpha_bar_ci_high": high,
                "alpha_n": 20, "alpha_cells_clear": clear, "accuracy": 0.9, "accuracy_ci_low": 0.8,
                "accuracy_ci_high": 1.0, "n_test": 20}
    summary = {"rows": [row("baseline", "g", 0.3, 0.2, 0.4, 2), row("aug", "g", 0.05, 0.0, 0.1, 0),
                        row("baseline", "g", 0.02, 0.0, 0.05, 0, base="gpt2-b")],
               "main_base": "b", "groups": {"g": ["", "p "]}, "aug_pairs": 3,
               "architectures": {"b": "llama", "gpt2-b": "gpt2"}}
    rows = {(r["table"], r["figure"].split("base ")[-1]): r for r in
            prefix_paper_rows(summary, embedded=True, overlay="params-gpu.yaml `prefix`")}
    assert rows["omega before augmentation", "b"]["reproduces"] is True
    assert rows["omega after augmentation", "b"]["reproduces"] is True  # its CI below the baseline's
    assert rows["omega after augmentation", "b"]["n"] == 40 and rows["alpha after augmentation", "b"]["n"] == 20
    assert rows["across architectures", "gpt2-b (gpt2)"]["reproduces"] is False  # no cell clear of 0
    assert rows["reward model accuracy", "b (0.5: chance)"]["reproduces"] is None  # no paper figure
    assert all("tiny models" in r["differs"] and "x3" in r["differs"] for r in rows.values())
    real = prefix_paper_rows(summary, embedded=False, overlay="params-gpu.yaml `prefix`")
    assert not any("tiny models" in r["differs"] for r in real)
