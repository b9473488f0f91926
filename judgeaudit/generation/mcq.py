"""Multiple-choice items (``MCQ``) and the ones made from the template corpus, for BOAT:
knowledge items get three wrong facts as distractors; arithmetic items get question
jitter (new numbers, the answer re-solved) and answer jitter (numeric distractors around
the answer)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from judgeaudit.generation.corpus import Item, degrade, make_items
from judgeaudit.generation.math_program import Program

LETTERS = "ABCDEFGHIJ"
NONE_LABEL = "N"  # the reply for "no option is correct" (distractor hint, answer removal)
TRUE_FALSE = ("True", "False")


@dataclass(frozen=True)
class MCQ:
    """A multiple-choice item; ``answer`` indexes ``options`` (None: no option is correct,
    after answer removal, so the gold reply is ``NONE_LABEL``)."""

    question: str
    options: tuple[str, ...]
    answer: int | None
    labels: tuple[str, ...] = tuple(LETTERS[:4])
    preamble: str = ""  # distractor question shown before the question
    instructions: tuple[str, ...] = ()  # one per intervention applied
    none_allowed: bool = False  # distractor hint: N is a valid reply
    binary: bool = False  # binary transformation: true/false for every option
    program: Program | None = None  # a word problem's solution as a program: question jitter re-solves it

    @property
    def jitterable(self) -> bool:
        """Whether question jitter can change this item (numeric options, a program with
        numbers it may move)."""
        return self.program is not None and any(self.program.jitterable) and self.answer is not None

    def __post_init__(self) -> None:
        if self.answer is None and not self.none_allowed:
            raise ValueError("an item without a correct option needs the 'reply N' hint")
        if self.answer is not None and not 0 <= self.answer < len(self.options):
            raise ValueError(f"answer index {self.answer} outside {len(self.options)} options")
        if len(self.labels) != len(self.options) or len(set(self.labels)) != len(self.labels):
            raise ValueError("need one distinct label per option")
        if NONE_LABEL in self.labels:
            raise ValueError(f"label {NONE_LABEL!r} is reserved for 'no option is correct'")

    @property
    def gold(self) -> str:
        """The reply a correct answer gives (for a binary item: its first query's)."""
        return self.queries()[0][2]

    @property
    def candidates(self) -> tuple[str, ...]:
        return self.labels + ((NONE_LABEL,) if self.none_allowed else ())

    def _head(self) -> str:
        instructions = "".join(f"{line}\n" for line in self.instructions)
        return f"{instructions}{self.preamble}{self.question}\n"

    def render(self) -> str:
        opts = "\n".join(f"{lab}. {opt}" for lab, opt in zip(self.labels, self.options))
        return f"{self._head()}{opts}\nAnswer with the option's label."

    def queries(self) -> list[tuple[str, tuple[str, ...], str]]:
        """(prompt, candidate replies, gold reply) per question asked: one, or one per
        option after binary transformation."""
        if not self.binary:
            gold = NONE_LABEL if self.answer is None else self.labels[self.answer]
            return [(self.render(), self.candidates, gold)]
        return [(f"{self._head()}Option: {opt}\nIs this option correct? Answer True or False.", TRUE_FALSE,
                 TRUE_FALSE[0] if k == self.answer else TRUE_FALSE[1]) for k, opt in enumerate(self.options)]


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
