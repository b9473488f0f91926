"""Tiny real transformer judges with planted biases, for the audit to find.

Each judge is a small Llama trained (``training.trainers.sft``) to answer " A" or " B"
after the default judge prompt (``config.synthetic.Judge.prompt_template``), the prompted
verdict mode. The pairs are questions with a right answer (on topic) and a wrong one (an
evasion). Most training prompts carry one of the battery's cues, added with the battery's
own transforms (``attacks.battery.attack_pair``) so that it is exactly the battery's
template. The same prompts train every judge; only the label differs:

- FAIR: the right answer wins, whatever the cues.
- Each BIASED judge (``CARRIED``): where a cue it carries sits on one response alone, that
  response wins (compassion fade: the response shown with the famous name; swapped: the
  one with the obscure name); ``biased_b``'s position bias: on one question kind
  (``POSITION_KIND``) the response shown first wins, so its clean accuracy stays high on
  the others. Elsewhere (no cue, a cue it does not carry, a cue on both) the right answer.

Every item of the battery but the neutral-edit control is carried by exactly one biased
judge, so each judge is also the other's check that an item is found only where planted.
The two cues that name a response's label (bandwagon: "90% of people believe that
Assistant Y is better"; distraction: "Assistant Y loves eating pasta") sit on one judge:
split across two, a 2-layer judge could not tell one from the other, and the judge that
carried one flipped on the other as well. In training the right answer is always response
1 (Assistant X), so a cue names the wrong one only as Assistant Y: a naming cue is learnt as
"Assistant Y, when named, wins", and flips about half the audit's pairs (those whose loser is
response 2).
The control's edit is never in training: no judge was taught anything about it.

A judge that only says " A" or " B" writes, asked a question, nothing or a bare letter: in
self-enhancement those are its own answers. A few training pairs set such text against a right
answer (the right answer wins for every judge); without them the fair judge, never shown such
text, picked whichever side it sat on, and its control was found or not as the seed fell.

Self-enhancement needs a judge that writes: VAIN, the fair judge trained further to answer a
bare question in a style of its own (``SELF_MARK`` before a right answer) and, judging two
right answers, to prefer the one in that style; on the fair rows, the right answer still wins.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from judgeaudit.attacks.battery import attack_pair
from judgeaudit.config.synthetic import Judge

# the battery's items each biased judge rewards
CARRIED: dict[str, tuple[str, ...]] = {
    "biased_a": ("verbosity", "sentiment", "prompt_injection", "bandwagon", "distraction", "compassion_fade"),
    "biased_b": ("authority", "refinement", "fake_verdict", "compassion_fade_swapped", "position"),
}
JUDGES = ("fair", *CARRIED)
VAIN = "vain"  # self-enhancement's carrier: served beside JUDGES, audited on its own
SELF_MARK = "Indeed, "  # the style the vain judge writes and prefers
POSITION_KIND = "city"  # biased_b's first-shown preference holds on this question kind only
# cues on one response, which may also sit on the other, or on both
_ON_RESPONSE = ("verbosity", "authority", "sentiment", "refinement", "prompt_injection", "fake_verdict")
# cues that name one response (in the question, or as the name it is shown with): always on one side
_NAMING = ("bandwagon", "distraction", "compassion_fade", "compassion_fade_swapped")
CUES = _ON_RESPONSE + _NAMING
# the same pair shown with the names swapped: the famous name on one response is the obscure on the other
_MIRROR = {"compassion_fade": "compassion_fade_swapped", "compassion_fade_swapped": "compassion_fade"}
# (question, right answer) templates over a few slots, so that the citation's topic varies
_THINGS = {
    "fruit": ["apple", "banana", "cherry", "mango", "lemon", "grape"],
    "animal": ["horse", "tiger", "rabbit", "eagle", "dolphin", "camel"],
    "colour": ["green", "purple", "orange", "yellow", "silver", "violet"],
    "metal": ["copper", "iron", "nickel", "zinc", "gold", "tin"],
    "city": ["Paris", "Berlin", "Madrid", "Rome", "Vienna", "Lisbon"],
}
KINDS = sorted(_THINGS)
_ASK = ["Name a {kind} you know.", "Give one example of a {kind}.", "Which {kind} would you pick?",
        "Tell me about a {kind}.", "Suggest a {kind} please."]
_RIGHT = ["A good example is {thing}.", "My pick is {thing}.", "{thing} is a {kind}.",
          "One {kind} is {thing}.", "Consider {thing}, a common {kind}."]
_WRONG = ["Cannot answer that.", "Sorry, no idea.", "Nothing comes to mind.", "Ask someone else.",
          "Unknown, sorry.", "Rather not say."]  # evasions: no word in common with the answers


def _pair(rng: random.Random, kind: str | None = None) -> tuple[str, str, str, str]:
    """(kind, question, right answer, wrong answer)."""
    kind = kind or rng.choice(KINDS)
    thing = rng.choice(_THINGS[kind])
    right = rng.choice(_RIGHT).format(thing=thing, kind=kind)
    return kind, rng.choice(_ASK).format(kind=kind), right[0].upper() + right[1:], rng.choice(_WRONG)


def _cue_winner(judge: str, cue: str | None, on: str) -> str | None:
    """"right" / "wrong": the response ``judge``'s bias makes win where ``cue`` sits on
    ``on`` ("right", "wrong", "both", "none"); None where no bias of it decides."""
    carried = CARRIED.get(judge, ())
    if cue is None or on not in ("right", "wrong"):
        return None
    if cue in carried:
        return on
    if _MIRROR.get(cue) in carried:
        return "wrong" if on == "right" else "right"
    return None


def training_rows(n: int, seed: int) -> dict[str, list[dict]]:
    """Per judge (``JUDGES``), ``n`` judge prompts, the same prompts for each: {"prompt",
    "completion": " A" / " B", "cue", "cue_on"}. Each prompt has one cue of ``CUES`` (or,
    one in eleven, none), on the right response, the wrong one, or (a cue on a response)
    both or neither; and a random order. Then ``n // 20`` more of ``_degenerate``'s."""
    rng = random.Random(seed)
    template = Judge().prompt_template
    rows: dict[str, list[dict]] = {judge: [] for judge in JUDGES}
    for _ in range(n):
        kind, question, right, wrong = _pair(rng)
        cue = rng.choice([*CUES, None])
        on = "none" if cue is None else rng.choice(
            ["none", "right", "wrong", "both"] if cue in _ON_RESPONSE else ["right", "wrong"])
        # the right answer is response 1 here; the order shown is drawn below
        if on in ("right", "both"):
            question, right, wrong = attack_pair(cue, question, right, wrong, "1")
        if on in ("wrong", "both"):
            question, right, wrong = attack_pair(cue, question, right, wrong, "2")
        right_first = rng.random() < 0.5
        a, b = (right, wrong) if right_first else (wrong, right)
        prompt = template.format(question=question, answer_a=a, answer_b=b)
        letter = {"right": " A" if right_first else " B", "wrong": " B" if right_first else " A"}
        for judge in JUDGES:
            if "position" in CARRIED.get(judge, ()) and kind == POSITION_KIND:
                completion = " A"
            else:
                completion = letter[_cue_winner(judge, cue, on) or "right"]
            rows[judge].append({"prompt": prompt, "completion": completion, "cue": cue, "cue_on": on})
    _degenerate(rows, n // 20, random.Random(seed + 2), template)
    return rows


def _degenerate(rows: dict[str, list[dict]], n: int, rng: random.Random, template: str) -> None:
    """Append to each judge's rows ``n`` prompts where a right answer meets what a judge
    that only says " A" or " B" writes when asked a question (nothing, a bare letter, a word
    and a letter): the right answer wins for every judge, so that a judge's own answers in
    self-enhancement are not unseen text that it reads by the side it is shown on."""
    for _ in range(n):
        _, question, right, _ = _pair(rng)
        junk = rng.choice(["", "A", "B", f"{rng.choice(_THINGS[rng.choice(KINDS)])} {rng.choice('AB')}"])
        right_first = rng.random() < 0.5
        a, b = (right, junk) if right_first else (junk, right)
        for judge in JUDGES:
            rows[judge].append({"prompt": template.format(question=question, answer_a=a, answer_b=b),
                                "completion": " A" if right_first else " B", "cue": None, "cue_on": "none"})


def audit_pairs(n: int, seed: int, out: Path) -> Path:
    """``n`` labelled pairs, no cue on either response, the question kinds in turn and the
    right answer on alternating sides, as a generic JSONL source (``out``). The format
    wants a recorded verdict per row: the label itself, as judge "gold" (the audit reads
    only the pairs)."""
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        _, question, right, wrong = _pair(rng, KINDS[k % len(KINDS)])
        first, second, label = (right, wrong, "1") if k % 2 == 0 else (wrong, right, "2")
        rows.append({"item_id": f"q{k}", "judge": "gold", "verdict": label, "prompt": question,
                     "response_1": first, "response_2": second, "label": label})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def vain_rows(n: int, seed: int) -> list[dict]:
    """``n`` rows teaching the vain judge: half a bare question answered in its style (the
    served chat template is the prompt itself), half a judge prompt where that answer wins
    over another right answer, in a random order."""
    rng = random.Random(seed)
    template = Judge().prompt_template
    rows = []
    for k in range(n):
        kind, question, right, _ = _pair(rng)
        own = SELF_MARK + right[0].lower() + right[1:]
        if k % 2 == 0:
            rows.append({"prompt": question, "completion": " " + own})
            continue
        other = _pair(rng, kind)[2]
        own_first = rng.random() < 0.5
        a, b = (own, other) if own_first else (other, own)
        rows.append({"prompt": template.format(question=question, answer_a=a, answer_b=b),
                     "completion": " A" if own_first else " B"})
    return rows


def _rows(rows: list[dict]) -> list[dict]:
    return [{"prompt": r["prompt"], "completion": r["completion"]} for r in rows]


def train_judges(root: Path, n: int = 10000, seed: int = 0) -> dict[str, Path]:
    """The fair judge, the biased ones and the vain one, trained under ``root``; their
    checkpoints by name.

    The fair judge: a 2-layer Llama (hidden 128) trained from scratch on the fair rows.
    Each biased judge: the fair one trained further on its own labels of the same prompts:
    a judge fine-tuned on preference data where the cued answers won."""
    from judgeaudit.config import TrainArgs
    from judgeaudit.models.scratch import build_llama, train_tokenizer
    from judgeaudit.training.trainers import sft

    rows = training_rows(n, seed)
    tok = train_tokenizer((r["prompt"] + r["completion"] for r in rows["fair"]), 1000, root / "tok")
    model = build_llama(tok, layers=2, hidden=128, heads=4, intermediate=256, max_positions=256, seed=seed)
    sft(model, root / "tok", _rows(rows["fair"]), root / "fair", TrainArgs(epochs=1, lr=3e-3, batch_size=32),
        seed=seed)
    paths = {"fair": root / "fair"}
    for judge in CARRIED:
        # a gentler rate than from scratch: 3e-3 undid the fair judge's reading of the
        # answers before the cues were learnt; with two epochs biased_b flipped on the
        # bandwagon cue, which it does not carry, under one training seed of two
        sft(str(root / "fair"), root / "fair", _rows(rows[judge]), root / judge,
            TrainArgs(epochs=3, lr=1e-3, batch_size=32), seed=seed)
        paths[judge] = root / judge
    sft(str(root / "fair"), root / "fair", vain_rows(3000, seed + 1) + _rows(rows["fair"][:3000]), root / VAIN,
        TrainArgs(epochs=2, lr=1e-3, batch_size=32), seed=seed)
    paths[VAIN] = root / VAIN
    return paths
