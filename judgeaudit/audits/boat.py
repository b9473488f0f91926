"""Bags of atomic interventions (BOAT) for contamination-robust evaluation.

Each intervention is a pure function (MCQ, rng, pool) -> MCQ that keeps the item
answerable and moves the label with the change, so a model that memorised "the answer
to this question is C" loses its shortcut while a model that can solve the item does
not. ``pool`` is the rest of the same dataset: the distractor question and the option
that answer removal swaps in are drawn from it. Each intervention adds its instruction
to the prompt. As the paper defines them:

- distractor hint: "if no option is correct, reply N" (N becomes a valid answer);
- answer removal: the correct option is replaced by an option of another question, so
  N is the answer; only together with the hint, which makes N answerable;
- distractor question: another question of the dataset, with its options, is shown
  first, and the model is told to answer only the last one;
- option shuffling and label replacement: the options reordered, relabelled;
- binary transformation: true/false for every option (the item is right only when every
  option is judged right); alone, or after question jitter;
- question jitter (word problems with a solution program, GSM8K): new numbers in the
  question, the answer re-solved and the numeric options moved with it.

``sample_bag`` draws a bag with the paper's probabilities (0.5 each, binary
transformation 0.1) and constraints; question jitter is drawn last, for items it can
change only, so the other items' bags do not depend on whether a dataset has any.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from judgeaudit.generation.mcq import MCQ, NONE_LABEL


def _instruct(item: MCQ, line: str) -> tuple[str, ...]:
    return item.instructions + (line,)


# -- atomic interventions (pure: the rng is the only source of choice) ------------------

def option_shuffling(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    order = list(range(len(item.options)))
    rng.shuffle(order)
    answer = None if item.answer is None else order.index(item.answer)
    return replace(item, options=tuple(item.options[i] for i in order), answer=answer)


def label_replacement(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    pools = ["1234567890", "abcdefghij", "PQRSTUVWXY", "αβγδεζηθικ"]
    labels = tuple(rng.choice(pools)[: len(item.options)])
    return replace(item, labels=labels,
                   instructions=_instruct(item, f"The options are labelled {', '.join(labels)}."))


def _others(item: MCQ, pool: Sequence[MCQ]) -> list[MCQ]:
    others = [q for q in pool if q.question != item.question]
    if not others:
        raise ValueError("the intervention draws from other questions of the dataset: the pool has none")
    return others


def distractor_question(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """Another question of the dataset, with its options, shown first."""
    other = rng.choice(_others(item, pool))
    shown = "\n".join(f"{lab}. {opt}" for lab, opt in zip(other.labels, other.options))
    return replace(item, preamble=f"{item.preamble}{other.question}\n{shown}\n\n",
                   instructions=_instruct(item, "Two questions follow. Answer only the last one."))


def distractor_hint(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """N becomes a valid reply: a model that never needs it must not be swayed by it."""
    return replace(item, none_allowed=True,
                   instructions=_instruct(item, f"If none of the options is correct, reply {NONE_LABEL}."))


def answer_removal(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """The correct option swapped for an option of another question: N is the answer."""
    if item.answer is None:
        return item
    taken = set(item.options)
    spare = [o for q in _others(item, pool) for o in q.options if o not in taken]
    if not spare:
        raise ValueError("no option of another question differs from this item's options")
    options = list(item.options)
    options[item.answer] = rng.choice(spare)
    return replace(item, options=tuple(options), answer=None)


def binary_transformation(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """True or false for every option; right only when every option is judged right."""
    return replace(item, binary=True,
                   instructions=_instruct(item, "Say whether the option shown is a correct answer to the question."))


def question_jitter(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """New numbers in a word problem and its answer re-solved (``item.program``); every
    numeric option moves by the answer's change, so the distractors keep their distances.
    An item it cannot change (no program, or no jitter that keeps the steps whole) is
    returned as it is."""
    if not item.jitterable:
        return item
    jittered = item.program.jitter(rng)
    if jittered is None:
        return item
    question, answer = jittered
    delta = answer - int(item.options[item.answer])
    return replace(item, question=question, options=tuple(str(int(o) + delta) for o in item.options),
                   program=None)


MCQ_INTERVENTIONS = {"question_jitter": question_jitter, "distractor_hint": distractor_hint, "distractor_question": distractor_question,
                     "answer_removal": answer_removal, "option_shuffling": option_shuffling,
                     "label_replacement": label_replacement, "binary_transformation": binary_transformation}
# applied in this order: the hint before answer removal (which needs it), shuffling and
# relabelling last so every earlier change is carried along
ORDER = ("distractor_question", "distractor_hint", "answer_removal", "option_shuffling", "label_replacement")
PROBABILITIES = {name: 0.5 for name in ORDER} | {"binary_transformation": 0.1, "question_jitter": 0.5}
# each intervention alone, as the paper measures it (answer removal only with its hint)
SINGLE = {"distractor_question": ("distractor_question",), "distractor_hint": ("distractor_hint",),
          "answer_removal": ("distractor_hint", "answer_removal"), "option_shuffling": ("option_shuffling",),
          "label_replacement": ("label_replacement",), "binary_transformation": ("binary_transformation",),
          "question_jitter": ("question_jitter",)}  # on the items it can change only


def sample_bag(rng: random.Random, answer_removal_scale: float = 1.0, jitter: bool = False,
               strength: float = 1.0) -> tuple[str, ...]:
    """A bag under the constraints: binary transformation alone (or after question
    jitter); answer removal only with a distractor hint. ``answer_removal_scale`` halves it
    for few-shot examples; ``jitter``: the item can take question jitter; ``strength``
    scales every probability (1: the paper's)."""
    p = {name: min(1.0, q * strength) for name, q in PROBABILITIES.items()}
    if rng.random() < p["binary_transformation"]:
        bag: tuple[str, ...] = ("binary_transformation",)
    else:
        drawn = [n for n in ORDER if n != "answer_removal" and rng.random() < p[n]]
        if "distractor_hint" in drawn and rng.random() < p["answer_removal"] * answer_removal_scale:
            drawn.append("answer_removal")
        bag = tuple(n for n in ORDER if n in drawn)
    if jitter and rng.random() < p["question_jitter"]:
        bag = ("question_jitter", *bag)
    return bag


def apply_bag(item: MCQ, bag: tuple[str, ...], rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    rest = tuple(n for n in bag if n != "question_jitter")
    if "binary_transformation" in rest and len(rest) > 1:
        raise ValueError("binary transformation must be applied alone (or after question jitter)")
    if "answer_removal" in bag and "distractor_hint" not in bag:
        raise ValueError("answer removal needs a distractor hint")
    order = ("question_jitter",) + (("binary_transformation",) if rest == ("binary_transformation",) else ORDER)
    for name in order:
        if name in bag:
            item = MCQ_INTERVENTIONS[name](item, rng, pool)
    return item
