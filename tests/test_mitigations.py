"""Leakage mitigations: Error Bias on planted verdicts, and chain of thought and contextual
calibration on a real tiny transformer (each checked against the same computation done by
hand with the model's own calls), and prompting likewise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgeaudit.audits.error_bias import error_bias, reference_scores
from judgeaudit.audits.leakage import pair_scores
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.config import Judge
from judgeaudit.judging.mitigations import contextual_verdicts, cot_verdicts, prompting_verdicts

ROSTER = [{"judge": "Ji", "tier": "same", "related_generator": "gi"},
          {"judge": "Jj", "tier": "same", "related_generator": "gj"},
          {"judge": "U", "tier": "unrelated", "related_generator": None}]


def _rows(judge: str, winners: list[str]) -> list[dict]:
    """Both orders of each prompt's comparison gi (first) vs gj, won by ``winners[k]``."""
    rows = []
    for k, w in enumerate(winners):
        for order in ("AB", "BA"):
            first_shown = order == "AB"
            verdict = "A" if (w == "gi") == first_shown else "B"
            rows.append(dict(judge=judge, method="sft", student_base="s", generator_a="gi", generator_b="gj",
                             prompt_id=f"e{k:02d}", order=order, verdict=verdict, p_a=float(verdict == "A")))
    return rows


def test_error_bias_counts_errors_towards_the_judges_own_student():
    rng = np.random.default_rng(0)
    truth = list(rng.choice(["gi", "gj"], size=40))
    # Ji overturns the reference to gi on a third of the prompts gj won; Jj agrees with it
    ji = [w if w == "gi" or k % 3 else "gi" for k, w in enumerate(truth)]
    scores = pair_scores(pd.DataFrame(_rows("U", truth) + _rows("Ji", ji) + _rows("Jj", truth)))
    reference = reference_scores(scores, ["U"])
    table = error_bias(scores, reference, ROSTER, BootstrapSettings(500, 0.95, 0)).iloc[0]
    wrong = sum(a != b for a, b in zip(ji, truth))
    # pooled over both related judges' comparisons (40 each), per prompt then over prompts
    assert table.estimate == pytest.approx(wrong / 40 / 2)
    assert table.ci_low > 0 and table.n == 40 and table.n_comparisons == 80
    fair = error_bias(pair_scores(pd.DataFrame(_rows("U", truth) + _rows("Ji", truth) + _rows("Jj", truth))),
                      reference, ROSTER, BootstrapSettings(500, 0.95, 0)).iloc[0]
    assert fair.estimate == 0 and fair.ci_low == fair.ci_high == 0
    against = [w if w == "gj" or k % 3 else "gj" for k, w in enumerate(truth)]  # Ji errs against its own
    neg = error_bias(pair_scores(pd.DataFrame(_rows("U", truth) + _rows("Ji", against) + _rows("Jj", truth))),
                     reference, ROSTER, BootstrapSettings(500, 0.95, 0)).iloc[0]
    assert neg.estimate < 0 and neg.ci_high < 0


QUESTIONS = ["What is 2 plus 2?", "Name a colour.", "What is the capital of France?"]
ANSWERS_1 = ["4", "red", "Paris"]
ANSWERS_2 = ["five", "the sky", "Rome is big"]


def _likelihood(model, questions, answers) -> np.ndarray:
    got = model.completion_logprobs([model.format_prompt(q) for q in questions], answers)
    return got[:, 0] / np.maximum(got[:, 1], 1)


def test_contextual_calibration_divides_out_the_content_free_likelihood(tiny_lm):
    settings = Judge()
    got = contextual_verdicts("N/A")(tiny_lm, "likelihood", settings, QUESTIONS, ANSWERS_1, ANSWERS_2)
    free = ["N/A"] * 3
    by_hand = ((_likelihood(tiny_lm, QUESTIONS, ANSWERS_1) - _likelihood(tiny_lm, free, ANSWERS_1))
               - (_likelihood(tiny_lm, QUESTIONS, ANSWERS_2) - _likelihood(tiny_lm, free, ANSWERS_2)))
    p_ab = np.asarray(got["AB"]["p_a"])
    assert np.log(p_ab / (1 - p_ab)) == pytest.approx(by_hand, abs=1e-4)
    assert np.asarray(got["BA"]["p_a"]) == pytest.approx(1 - p_ab)
    plain = _likelihood(tiny_lm, QUESTIONS, ANSWERS_1) - _likelihood(tiny_lm, QUESTIONS, ANSWERS_2)
    assert not np.allclose(plain, by_hand)  # the content-free prior is not zero: calibration moves verdicts
    prompted = contextual_verdicts("N/A")(tiny_lm, "prompted", settings, QUESTIONS, ANSWERS_1, ANSWERS_2)
    assert all(0 < p < 1 for p in prompted["AB"]["p_a"]) and len(prompted["BA"]["verdict"]) == 3
    with pytest.raises(ValueError, match="generative"):
        contextual_verdicts()(tiny_lm, "generative", settings, QUESTIONS, ANSWERS_1, ANSWERS_2)


def test_chain_of_thought_decides_with_the_judges_own_reasoning_in_context(tiny_lm):
    settings = Judge()
    template = "Q {question} A {answer_a} B {answer_b} think:"
    got = cot_verdicts(template, 6)(tiny_lm, "likelihood", settings, QUESTIONS, ANSWERS_1, ANSWERS_2)
    asked = [tiny_lm.format_prompt(template.format(question=q, answer_a=a, answer_b=b))
             for q, a, b in zip(QUESTIONS, ANSWERS_1, ANSWERS_2)]
    reasoning = tiny_lm.generate(asked, max_new_tokens=6)
    assert any(r.strip() for r in reasoning)  # the judge did write something
    context = [f"{q}\n{r.strip()}" for q, r in zip(QUESTIONS, reasoning)]
    by_hand = _likelihood(tiny_lm, context, ANSWERS_1) - _likelihood(tiny_lm, context, ANSWERS_2)
    p_ab = np.asarray(got["AB"]["p_a"])
    assert np.log(p_ab / (1 - p_ab)) == pytest.approx(by_hand, abs=1e-4)
    prompted = cot_verdicts(template, 6)(tiny_lm, "prompted", settings, QUESTIONS, ANSWERS_1, ANSWERS_2)
    assert set(prompted) == {"AB", "BA"} and all(0 < p < 1 for p in prompted["BA"]["p_a"])


def test_prompting_puts_the_notice_before_every_question_in_any_mode(tiny_lm):
    settings = Judge()
    notice = "Some answers may come from a model related to you."
    got = prompting_verdicts(notice)(tiny_lm, "likelihood", settings, QUESTIONS, ANSWERS_1, ANSWERS_2)
    told = [f"{notice}\n{q}" for q in QUESTIONS]
    by_hand = _likelihood(tiny_lm, told, ANSWERS_1) - _likelihood(tiny_lm, told, ANSWERS_2)
    p_ab = np.asarray(got["AB"]["p_a"])
    assert np.log(p_ab / (1 - p_ab)) == pytest.approx(by_hand, abs=1e-4)
    plain = _likelihood(tiny_lm, QUESTIONS, ANSWERS_1) - _likelihood(tiny_lm, QUESTIONS, ANSWERS_2)
    assert not np.allclose(plain, by_hand)  # the notice is read: it moves the margins
    prompted = prompting_verdicts(notice)(tiny_lm, "prompted", settings, QUESTIONS, ANSWERS_1, ANSWERS_2)
    assert set(prompted) == {"AB", "BA"} and all(0 < p < 1 for p in prompted["AB"]["p_a"])
    with pytest.raises(ValueError, match="prompting_notice is empty"):
        prompting_verdicts(" ")(tiny_lm, "likelihood", settings, QUESTIONS, ANSWERS_1, ANSWERS_2)
