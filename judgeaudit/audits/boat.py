"""Bags of atomic interventions (BOAT) for contamination-robust evaluation.

Each intervention is a pure function (MCQ, rng, pool) -> MCQ that keeps the item
answerable and moves the label with the change, so a model that memorised "the answer
to this question is C" loses its shortcut while a model that can solve the item does
not. ``pool`` is the rest of the same dataset: the distractor question is drawn from it.
Each intervention adds its instruction to the prompt. As the paper defines them
(docs/boat.md says where we had to choose):

- distractor hint: "if no option is correct, reply N" (N becomes a valid answer);
- answer removal: one option, drawn uniformly (the correct one or not), is removed; the
  answer is N when it was the correct one; only together with the hint;
- distractor question: another question of the dataset, without its options, appended
  after the question; the model is told only one of them corresponds to the options;
- option shuffling; label replacement: the options relabelled I, II, III, ...;
- binary transformation: true/false for every option (the item is right only when every
  option is judged right); alone;
- question jitter (word problems with a solution program, GSM8K): new numbers in the
  question, and a true/false judgement of a proposed answer (the re-solved answer or the
  original one, now wrong, drawn evenly); alone.
- ``question_jitter_resolve`` (ours, a named option beside the paper's): new numbers, the
  answer re-solved and the four numeric options moved with it, the other interventions
  composed after it.

``sample_bag`` draws a bag with the paper's probabilities (0.5 each, binary
transformation 0.1) and constraints; question jitter is drawn last, for items it can
change only, so the other items' bags do not depend on whether a dataset has any.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from judgeaudit.generation.mcq import MCQ, NONE_LABEL

ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X")
JITTERS = ("question_jitter", "question_jitter_resolve")


def _instruct(item: MCQ, line: str) -> tuple[str, ...]:
    return item.instructions + (line,)


# -- atomic interventions (pure: the rng is the only source of choice) ------------------

def option_shuffling(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    order = list(range(len(item.options)))
    rng.shuffle(order)
    answer = None if item.answer is None else order.index(item.answer)
    return replace(item, options=tuple(item.options[i] for i in order), answer=answer)


def label_replacement(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """The options relabelled with Roman numerals, the paper's example (I/II/III)."""
    labels = ROMAN[: len(item.options)]
    return replace(item, labels=labels,
                   instructions=_instruct(item, f"The options are labelled {', '.join(labels)}."))


def _others(item: MCQ, pool: Sequence[MCQ]) -> list[MCQ]:
    others = [q for q in pool if q.question != item.question]
    if not others:
        raise ValueError("the intervention draws from other questions of the dataset: the pool has none")
    return others


def distractor_question(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """Another question of the dataset appended, without its options."""
    other = rng.choice(_others(item, pool))
    return replace(item, question=f"{item.question}\n{other.question}",
                   instructions=_instruct(item, "Two questions follow; only one of them corresponds to the "
                                                "options. Answer that one."))


def distractor_hint(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """N becomes a valid reply: a model that never needs it must not be swayed by it."""
    return replace(item, none_allowed=True,
                   instructions=_instruct(item, f"If none of the options is correct, reply {NONE_LABEL}."))


def answer_removal(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """One option removed, drawn uniformly: N is the answer when it was the correct one."""
    if len(item.options) < 2:
        return item
    gone = rng.randrange(len(item.options))
    options = item.options[:gone] + item.options[gone + 1:]
    if item.answer is None or item.answer == gone:
        answer = None
    else:
        answer = item.answer - (item.answer > gone)
    return replace(item, options=options, answer=answer, labels=item.labels[: len(options)])


def binary_transformation(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """True or false for every option; right only when every option is judged right."""
    return replace(item, binary=True,
                   instructions=_instruct(item, "Say whether the option shown is a correct answer to the question."))


def _jittered(item: MCQ, rng: random.Random) -> tuple[str, int] | None:
    if not item.jitterable:
        return None
    return item.program.jitter(rng)


def question_jitter(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """The paper's: new numbers in a word problem (re-solved by ``item.program``), then a
    true/false judgement of one proposed answer, the new one or the original (drawn
    evenly). An item it cannot change is returned as it is."""
    jittered = _jittered(item, rng)
    if jittered is None:
        return item
    question, answer = jittered
    old = int(item.options[item.answer])
    proposed = answer if rng.random() < 0.5 or old == answer else old
    right = proposed == answer
    return MCQ(question, (str(proposed),), 0 if right else None, labels=("A",), none_allowed=not right,
               binary=True, preamble=item.preamble,
               instructions=_instruct(item, "Say whether the answer shown is the correct answer to the question."))


def question_jitter_resolve(item: MCQ, rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    """Ours: new numbers and the answer re-solved; every numeric option moves by the
    answer's change, so the distractors keep their distances and four options stay."""
    jittered = _jittered(item, rng)
    if jittered is None:
        return item
    question, answer = jittered
    delta = answer - int(item.options[item.answer])
    return replace(item, question=question, options=tuple(str(int(o) + delta) for o in item.options),
                   program=None)


MCQ_INTERVENTIONS = {"question_jitter": question_jitter, "question_jitter_resolve": question_jitter_resolve,
                     "distractor_hint": distractor_hint, "distractor_question": distractor_question,
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
          "question_jitter": ("question_jitter",),  # on the items it can change only
          "question_jitter_resolve": ("question_jitter_resolve",)}


def sample_bag(rng: random.Random, answer_removal_scale: float = 1.0, jitter: bool = False,
               strength: float = 1.0, jitter_kind: str = "question_jitter") -> tuple[str, ...]:
    """A bag under the constraints: binary transformation alone; answer removal only with
    a distractor hint; the paper's question jitter (a true/false judgement) alone, ours
    (``jitter_kind="question_jitter_resolve"``) before the others. ``answer_removal_scale``
    scales answer removal (0.5: our independent few-shot bags); ``jitter``: the item can
    take question jitter; ``strength`` scales every probability (1: the paper's)."""
    if jitter_kind not in JITTERS:
        raise ValueError(f"unknown question jitter {jitter_kind!r}: one of {JITTERS}")
    p = {name: min(1.0, q * strength) for name, q in PROBABILITIES.items()}
    if rng.random() < p["binary_transformation"]:
        bag: tuple[str, ...] = ("binary_transformation",)
    else:
        drawn = [n for n in ORDER if n != "answer_removal" and rng.random() < p[n]]
        if "distractor_hint" in drawn and rng.random() < p["answer_removal"] * answer_removal_scale:
            drawn.append("answer_removal")
        bag = tuple(n for n in ORDER if n in drawn)
    if jitter and rng.random() < p["question_jitter"]:
        bag = ("question_jitter",) if jitter_kind == "question_jitter" else (jitter_kind, *bag)
    return bag


def apply_bag(item: MCQ, bag: tuple[str, ...], rng: random.Random, pool: Sequence[MCQ] = ()) -> MCQ:
    rest = tuple(n for n in bag if n != "question_jitter_resolve")
    if "question_jitter" in bag and len(bag) > 1:
        raise ValueError("question jitter (a true/false judgement) must be applied alone")
    if "binary_transformation" in rest and len(rest) > 1:
        raise ValueError("binary transformation must be applied alone (or after question_jitter_resolve)")
    if "answer_removal" in bag and "distractor_hint" not in bag:
        raise ValueError("answer removal needs a distractor hint")
    if bag == ("question_jitter",):
        return question_jitter(item, rng, pool)
    order = ("question_jitter_resolve",) + (("binary_transformation",) if rest == ("binary_transformation",)
                                            else ORDER)
    for name in order:
        if name in bag:
            item = MCQ_INTERVENTIONS[name](item, rng, pool)
    return item
