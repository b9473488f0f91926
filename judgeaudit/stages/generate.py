"""Stage ``generate``: each generator answers the training prompts (the synthetic data),
in turn in the stage's process."""

from __future__ import annotations

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.models import load_model
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish
from judgeaudit.stagekit.pool import Pool

STAGE = Stage(name="generate", params=(*MODELS, "generate", "leakage.generators"), deps=("prompts", "models"),
              outs=("synthetic",), reads=("prompts",))


def generate_answers(params: Params, generator: str, prompts: pd.DataFrame, layout: Layout,
                     progress: bool = False) -> pd.DataFrame:
    """The generator's answers to every training prompt. An empty answer is re-drawn
    once with temperature 1; if still empty it stays, and validation reports it."""
    model = load_model(params.spec_for(generator, layout.models), name=generator, progress=progress)
    train = prompts[prompts["split"] == "train"].reset_index(drop=True)
    formatted = [model.format_prompt(p) for p in train["prompt"]]
    g = params.generate
    answers = model.generate(formatted, max_new_tokens=g.max_new_tokens, temperature=g.temperature,
                             seed=params.seed)
    empty = [i for i, a in enumerate(answers) if not a]
    if empty:
        redo = model.generate([formatted[i] for i in empty], max_new_tokens=g.max_new_tokens,
                              temperature=1.0, seed=params.seed + 1)
        for i, a in zip(empty, redo):
            answers[i] = a
    return train.assign(generator=generator, answer=answers)[
        ["generator", "prompt_id", "prompt", "category", "fact", "answer"]]


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> int:
    frames = [generate_answers(params, g, tables["prompts"], layout)
              for g in pool.each(params.leakage.generators)]
    return len(publish(frames, "synthetic", "generate", layout.synthetic, layout))
