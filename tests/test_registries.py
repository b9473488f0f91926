"""Verdict modes and model backends by name: a mode or a backend defined here, in one
place, is usable through the path the pipeline judges by (``judge_pairs``), chain of
thought and contextual calibration wrap a new mode with no edit of theirs, and an unknown
name says which names exist."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from judgeaudit.config import Judge
from judgeaudit.judging.mitigations import contextual_verdicts, cot_verdicts
from judgeaudit.judging.modes import ScoringMode, register_mode, registered_modes, verdict_mode
from judgeaudit.judging.student_pairs import RosterJudge, judge_pairs
from judgeaudit.models import LanguageModel, ModelSpec, load_model
from judgeaudit.models.registry import backend_names, register_backend

QUESTIONS = ["What is 2 plus 2?", "Name a colour.", "What is the capital of France?", "Name a colour."]
ANSWERS_A = ["4", "red", "Paris", "blue"]
ANSWERS_B = ["five apples", "the sky", "Rome is big", "blue"]


@register_mode("summed-likelihood")
@dataclass(frozen=True)
class SummedLikelihood(ScoringMode):
    """A mode of the test's own: the answer's summed log-prob (no setting beyond tie_margin)."""

    def scores(self, model, questions, answers) -> np.ndarray:
        return model.completion_logprobs([model.format_prompt(q) for q in questions], list(answers))[:, 0]


@register_backend("length-test")
class LengthModel(LanguageModel):
    """A backend of the test's own: every character of a completion costs 0.1 nats."""

    def __init__(self, spec: ModelSpec, name: str = "", progress: bool = False) -> None:
        super().__init__(spec, name)

    def format_prompt(self, prompt: str) -> str:
        return f"Q: {prompt}\nA:"

    def generate(self, prompts, *, max_new_tokens, temperature=0.0, seed=0) -> list[str]:
        return ["because" for _ in prompts]

    def completion_logprobs(self, prompts, completions) -> np.ndarray:
        return np.array([[-0.1 * len(c), max(len(c.split()), 1)] for c in completions], dtype=float)

    def next_token_logprobs(self, prompts, candidates) -> np.ndarray:
        return np.log(np.full((len(prompts), len(candidates)), 1 / len(candidates)))


def _pairs() -> pd.DataFrame:
    return pd.DataFrame(dict(method="sft", student_base="s", prompt_id=[f"e{k}" for k in range(len(QUESTIONS))],
                             prompt=QUESTIONS, generator_a="ga", generator_b="gb", student_a="sa", student_b="sb",
                             response_a=ANSWERS_A, response_b=ANSWERS_B))


def _judge(mode: str, spec: ModelSpec | None = None) -> RosterJudge:
    return RosterJudge("j", "same", "ga", spec or ModelSpec(path="unused"), mode)


def test_a_mode_defined_here_judges_through_the_pipeline_path(tiny_lm):
    assert {"likelihood", "prompted", "generative", "summed-likelihood"} <= set(registered_modes())
    out = judge_pairs(_judge("summed-likelihood"), _pairs(), Judge(), seed=0, model=tiny_lm)
    prompts = [tiny_lm.format_prompt(q) for q in QUESTIONS]
    s_a = tiny_lm.completion_logprobs(prompts, ANSWERS_A)[:, 0]
    s_b = tiny_lm.completion_logprobs(prompts, ANSWERS_B)[:, 0]
    ab = out[out.order == "AB"].reset_index(drop=True)
    np.testing.assert_allclose(ab["p_a"], 1 / (1 + np.exp(-(s_a - s_b))))
    assert ab["verdict"].tolist() == ["A" if d > 1e-6 else "B" if d < -1e-6 else "tie" for d in s_a - s_b]
    assert ab.loc[3, "verdict"] == "tie" and set(out["mode"]) == {"summed-likelihood"}
    # the summed score is not the default mean-per-token one: the mode's own computation ran
    likelihood = judge_pairs(_judge("likelihood"), _pairs(), Judge(), seed=0, model=tiny_lm)
    assert not np.allclose(likelihood["p_a"], out["p_a"])


def test_the_mitigations_wrap_a_new_mode_unchanged(tiny_lm):
    """Contextual calibration of a scoring mode subtracts each answer's score under the
    content-free question; chain of thought scores each answer given the reasoning."""
    calibrated = judge_pairs(_judge("summed-likelihood"), _pairs(), Judge(), seed=0, model=tiny_lm,
                             verdicts=contextual_verdicts("N/A"))
    mode = verdict_mode("summed-likelihood", Judge())
    free = ["N/A"] * len(QUESTIONS)
    margin = ((mode.scores(tiny_lm, QUESTIONS, ANSWERS_A) - mode.scores(tiny_lm, free, ANSWERS_A))
              - (mode.scores(tiny_lm, QUESTIONS, ANSWERS_B) - mode.scores(tiny_lm, free, ANSWERS_B)))
    ab = calibrated[calibrated.order == "AB"]
    np.testing.assert_allclose(ab["p_a"], 1 / (1 + np.exp(-margin)))
    template = "Which is better?\n{question}\nA: {answer_a}\nB: {answer_b}\nReasoning:"
    cot = judge_pairs(_judge("summed-likelihood"), _pairs(), Judge(), seed=0, model=tiny_lm,
                      verdicts=cot_verdicts(template, 4))
    assert len(cot) == 2 * len(QUESTIONS) and cot["p_a"].between(0, 1).all()


def test_an_unknown_mode_names_the_registered_ones(tiny_lm):
    with pytest.raises(ValueError, match=r"unknown verdict mode 'majority'; registered: .*generative.*likelihood"):
        judge_pairs(_judge("majority"), _pairs(), Judge(), seed=0, model=tiny_lm)
    with pytest.raises(ValueError, match="already registered"):
        register_mode("likelihood")(SummedLikelihood)
    with pytest.raises(ValueError, match="contextual calibration needs verdict probabilities; a 'generative'"):
        contextual_verdicts()(tiny_lm, "generative", Judge(), QUESTIONS, ANSWERS_A, ANSWERS_B)


def test_a_backend_defined_here_loads_by_name_in_the_pipeline_path():
    spec = ModelSpec(backend="length-test", path="nowhere")
    assert "length-test" in backend_names() and isinstance(load_model(spec), LengthModel)
    # judge_pairs loads the judge from its spec: the shorter answer is the likelier one here
    out = judge_pairs(_judge("likelihood", spec), _pairs(), Judge(normalise="sum"), seed=0)
    assert out[out.order == "AB"]["verdict"].tolist() == ["A", "A", "A", "tie"]
    with pytest.raises(ValueError, match=r"unknown model backend 'tensorflow'; known: .*'openai'.*'transformers'"):
        ModelSpec(backend="tensorflow", path="x")


def test_naming_the_backends_imports_none_of_them():
    code = ("import sys; from judgeaudit.models import ModelSpec; from judgeaudit.models.registry import backend_names;"
            "ModelSpec(backend='openai', path='x'); ModelSpec(backend='vllm', path='x');"
            "print(sorted(backend_names()), [m for m in ('openai', 'vllm', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['openai', 'transformers', 'vllm'] []"


def test_a_registered_mode_is_nameable_in_the_params_and_an_unknown_one_is_refused(tmp_path, capsys):
    """judge.mode takes any registered mode (the one this file registers included), and
    check-params refuses a name no mode is registered under, naming the field."""
    from flows.cli import main
    from judgeaudit.config import Judge
    from tests.conftest import ROOT

    assert Judge(mode="summed-likelihood", modes={"j": "summed-likelihood"}).mode == "summed-likelihood"
    text = (ROOT / "params.yaml").read_text().replace("judge:\n  mode: likelihood", "judge:\n  mode: likelyhood")
    assert "likelyhood" in text
    (tmp_path / "params.yaml").write_text(text)
    assert main(["check-params", "--params", str(tmp_path / "params.yaml")]) == 2
    err = capsys.readouterr().err
    assert "judge.mode: unknown verdict mode 'likelyhood'" in err and "generative" in err
