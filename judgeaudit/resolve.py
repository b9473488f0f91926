"""What a stage resolves from params.yaml once, at its door, and hands down as plain typed
values: the judges (each with the spec it loads with and its mode) and the model rewriter
of the attacks (the students' settings: ``training.students.StudentSettings``, built where
students are trained, so that judging stages do not import the trainers). The layers below
(judging, training, attacks) take these, never the whole ``Params``."""

from __future__ import annotations

from pathlib import Path

from judgeaudit.attacks.rewriter import ModelRewriter
from judgeaudit.config import Params
from judgeaudit.judging.student_pairs import RosterJudge


def roster(params: Params, models_dir: Path) -> list[RosterJudge]:
    """Every role of the judge roster, in params order (a judge model may hold several)."""
    return [RosterJudge(name=e["judge"], tier=e["tier"], related_generator=e["related_generator"],
                        spec=params.spec_for(e["judge"], models_dir),
                        mode=params.judge.modes.get(e["judge"], params.judge.mode))
            for e in params.judge_roster()]


def judges(params: Params, models_dir: Path) -> list[RosterJudge]:
    """The judge roster, each judge model once (its first role in params order)."""
    seen: set[str] = set()
    return [j for j in roster(params, models_dir) if not (j.name in seen or seen.add(j.name))]


def rewriter(params: Params, models_dir: Path) -> ModelRewriter | None:
    """The configured model rewriter of the attacks, or None for the rule-based ones."""
    if params.attacks.rewriter is None:
        return None
    from judgeaudit.models import load_model

    name = params.attacks.rewriter
    return ModelRewriter(load_model(params.spec_for(name, models_dir), name=name),
                         params.attacks.templates, params.attacks.max_new_tokens)
