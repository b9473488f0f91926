"""Bags of atomic interventions (BOAT) for contamination-robust evaluation.

Each intervention is a pure function MCQ -> MCQ that keeps the item answerable and moves
the label with the change, so a model that memorised "the answer to this question is
C" loses its shortcut while a model that can solve the item does not. ``sample_bag``
draws a bag with the seed paper's probabilities (0.5 each, binary transformation 0.1)
and constraints (answer removal only together with a distractor hint; binary
transformation alone).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

LETTERS = "ABCDEFGHIJ"
NONE_OPTION = "None of the other options"
DISTRACTOR_QUESTIONS = (
    "Which planet is known as the red planet?",
    "How many legs does a spider have?",
    "What is the boiling point of water at sea level in Celsius?",
)


@dataclass(frozen=True)
class MCQ:
    """A multiple-choice item; ``answer`` indexes ``options``."""

    question: str
    options: tuple[str, ...]
    answer: int
    labels: tuple[str, ...] = tuple(LETTERS[:4])
    preamble: str = ""  # distractor question / hint text shown before the question
    binary: str | None = None  # binary transformation: the option asked about

    def __post_init__(self) -> None:
        if not 0 <= self.answer < len(self.options):
            raise ValueError(f"answer index {self.answer} outside {len(self.options)} options")
        if len(self.labels) != len(self.options) or len(set(self.labels)) != len(self.labels):
            raise ValueError("need one distinct label per option")

    @property
    def gold(self) -> str:
        """The label a correct answer gives ("Yes"/"No" after binary transformation)."""
        if self.binary is not None:
            return "Yes" if self.binary == self.options[self.answer] else "No"
        return self.labels[self.answer]

    def render(self) -> str:
        if self.binary is not None:
            return (f"{self.preamble}{self.question}\nIs the following the correct answer: "
                    f"{self.binary}\nAnswer Yes or No.")
        opts = "\n".join(f"{lab}. {opt}" for lab, opt in zip(self.labels, self.options))
        return f"{self.preamble}{self.question}\n{opts}\nAnswer with the option's label."


# -- atomic interventions (pure: the rng is the only source of choice) ------------------

def option_shuffling(item: MCQ, rng: random.Random) -> MCQ:
    order = list(range(len(item.options)))
    rng.shuffle(order)
    return replace(item, options=tuple(item.options[i] for i in order), answer=order.index(item.answer))


def label_replacement(item: MCQ, rng: random.Random) -> MCQ:
    pools = ["1234567890", "abcdefghij", "PQRSTUVWXY", "αβγδεζηθικ"]
    pool = rng.choice(pools)
    return replace(item, labels=tuple(pool[: len(item.options)]))


def distractor_question(item: MCQ, rng: random.Random) -> MCQ:
    extra = rng.choice(DISTRACTOR_QUESTIONS)
    return replace(item, preamble=f"{item.preamble}(Ignore this unrelated question: {extra})\n")


def distractor_hint(item: MCQ, rng: random.Random) -> MCQ:
    wrong = rng.choice([i for i in range(len(item.options)) if i != item.answer])
    return replace(item, preamble=f"{item.preamble}Hint (may be wrong): someone thinks the answer "
                                  f"is \"{item.options[wrong]}\".\n")


def answer_removal(item: MCQ, rng: random.Random) -> MCQ:
    """Replace the correct option by "None of the other options", which becomes correct."""
    options = list(item.options)
    options[item.answer] = NONE_OPTION
    return replace(item, options=tuple(options))


def binary_transformation(item: MCQ, rng: random.Random) -> MCQ:
    """Ask Yes/No about the correct option or a wrong one, with equal chance."""
    pick = item.answer if rng.random() < 0.5 else rng.choice(
        [i for i in range(len(item.options)) if i != item.answer])
    return replace(item, binary=item.options[pick])


MCQ_INTERVENTIONS = {"distractor_hint": distractor_hint, "distractor_question": distractor_question,
                     "answer_removal": answer_removal, "option_shuffling": option_shuffling,
                     "label_replacement": label_replacement, "binary_transformation": binary_transformation}
# applied in this order: hints describe the original options, answer removal edits them,
# shuffling and relabelling come last so every earlier change is carried along
ORDER = ("distractor_question", "distractor_hint", "answer_removal", "option_shuffling", "label_replacement")
PROBABILITIES = {name: 0.5 for name in ORDER} | {"binary_transformation": 0.1}


def sample_bag(rng: random.Random, answer_removal_scale: float = 1.0) -> tuple[str, ...]:
    """A bag under the constraints: binary transformation alone; answer removal only with
    a distractor hint. ``answer_removal_scale`` halves it for few-shot examples."""
    if rng.random() < PROBABILITIES["binary_transformation"]:
        return ("binary_transformation",)
    bag = [n for n in ORDER if n != "answer_removal" and rng.random() < PROBABILITIES[n]]
    if "distractor_hint" in bag and rng.random() < PROBABILITIES["answer_removal"] * answer_removal_scale:
        bag.append("answer_removal")
    return tuple(n for n in ORDER if n in bag)


def apply_bag(item: MCQ, bag: tuple[str, ...], rng: random.Random) -> MCQ:
    if "binary_transformation" in bag and len(bag) > 1:
        raise ValueError("binary transformation must be applied alone")
    if "answer_removal" in bag and "distractor_hint" not in bag:
        raise ValueError("answer removal needs a distractor hint")
    order = ("binary_transformation",) if bag == ("binary_transformation",) else ORDER
    for name in order:
        if name in bag:
            item = MCQ_INTERVENTIONS[name](item, rng)
    return item


# -- math items: question jitter and answer jitter, then MCQ ----------------------------

_NUM = re.compile(r"\d+")


def question_jitter(question: str, solve, rng: random.Random) -> tuple[str, int]:
    """Change every number in ``question`` by a small amount and re-solve it with
    ``solve`` (a function of the new numbers), so the label follows the change."""
    numbers = [int(x) for x in _NUM.findall(question)]
    jittered = [max(1, n + rng.choice([-3, -2, -1, 1, 2, 3])) for n in numbers]
    parts = _NUM.split(question)
    text = "".join(p + (str(j) if k < len(jittered) else "") for k, (p, j) in
                   enumerate(zip(parts, jittered + [0])))
    return text, solve(*jittered)


def answer_jitter(answer: int, rng: random.Random, n_options: int = 4) -> MCQ:
    """Options near the true answer, the true one among them: an MCQ for a math item."""
    offsets = rng.sample([-10, -3, -2, -1, 1, 2, 3, 10], n_options - 1)
    options = [answer] + [answer + o for o in offsets]
    rng.shuffle(options)
    return MCQ("", tuple(str(o) for o in options), options.index(answer))
