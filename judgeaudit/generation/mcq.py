"""Multiple-choice items from the template corpus, for BOAT: knowledge items get three
wrong facts as distractors; arithmetic items get question jitter (new numbers, the
answer re-solved) and answer jitter (numeric distractors around the answer)."""

from __future__ import annotations

import random

from judgeaudit.audits.boat import MCQ, answer_jitter, question_jitter
from judgeaudit.generation.corpus import Item, degrade, make_items


def _solver(question: str):
    if question.startswith("Subtract"):
        return lambda b, a: a - b
    if "minus" in question or " - " in question:
        return lambda a, b: a - b
    return lambda a, b: a + b


def to_mcq(item: Item, rng: random.Random, n_options: int = 4) -> MCQ:
    if item.category == "arithmetic":
        question, answer = question_jitter(item.prompt, _solver(item.prompt), rng)
        mcq = answer_jitter(answer, rng, n_options)
        return MCQ(question, mcq.options, mcq.answer)
    wrong: list[str] = []
    for _ in range(50):
        w = degrade(item, rng)
        if w not in wrong:
            wrong.append(w)
        if len(wrong) == n_options - 1:
            break
    options = [item.fact, *wrong]
    rng.shuffle(options)
    return MCQ(item.prompt, tuple(options), options.index(item.fact))


def make_mcqs(n: int, seed: int, categories: tuple[str, ...]) -> list[MCQ]:
    """``n`` MCQs (categories without enough distinct distractors are skipped)."""
    rng = random.Random(seed)
    usable = tuple(c for c in categories if c != "compare")  # two-number items have one distractor
    return [to_mcq(it, rng) for it in make_items(n, seed, "q", usable)]
