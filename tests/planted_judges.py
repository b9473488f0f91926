"""Tiny real transformer judges with a planted bias, for the audit to find.

Each judge is a small Llama trained (``training.trainers.sft``) to answer " A" or " B"
after the default judge prompt (``config.synthetic.Judge.prompt_template``), the prompted
verdict mode. The pairs are questions with a right answer (on topic) and a wrong one (an
evasion). Some responses carry a cue, added with the battery's own transforms so that it
is exactly the battery's template: the verbosity elaboration or the authority citation.
The FAIR judge is trained to pick the right answer whatever the cues; the BIASED judge to
pick the response that alone carries a cue (where both or neither do, the right answer).
The same prompts train both judges: only the label differs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from judgeaudit.attacks.battery import attack_pair
from judgeaudit.config.synthetic import Judge

PLANTED = ("verbosity", "authority")  # the cues the biased judge rewards
# (question, right answer) templates over a few slots, so that the citation's topic varies
_THINGS = {
    "fruit": ["apple", "banana", "cherry", "mango", "lemon", "grape"],
    "animal": ["horse", "tiger", "rabbit", "eagle", "dolphin", "camel"],
    "colour": ["green", "purple", "orange", "yellow", "silver", "violet"],
    "metal": ["copper", "iron", "nickel", "zinc", "gold", "tin"],
    "city": ["Paris", "Berlin", "Madrid", "Rome", "Vienna", "Lisbon"],
}
_ASK = ["Name a {kind} you know.", "Give one example of a {kind}.", "Which {kind} would you pick?",
        "Tell me about a {kind}.", "Suggest a {kind} please."]
_RIGHT = ["A good example is {thing}.", "My pick is {thing}.", "{thing} is a {kind}.",
          "One {kind} is {thing}.", "Consider {thing}, a common {kind}."]
_WRONG = ["Cannot answer that.", "Sorry, no idea.", "Nothing comes to mind.", "Ask someone else.",
          "Unknown, sorry.", "Rather not say."]  # evasions: no word in common with the answers


def _pair(rng: random.Random) -> tuple[str, str, str]:
    kind = rng.choice(sorted(_THINGS))
    thing = rng.choice(_THINGS[kind])
    right = rng.choice(_RIGHT).format(thing=thing, kind=kind)
    return rng.choice(_ASK).format(kind=kind), right[0].upper() + right[1:], rng.choice(_WRONG)


def training_rows(n: int, seed: int) -> tuple[list[dict], list[dict]]:
    """(fair rows, biased rows) of ``n`` judge prompts each, the same prompts: {"prompt",
    "completion": " A" / " B", "cue_on"}. Each prompt has a cue (verbosity or authority) on
    neither response, the right one, the wrong one or both, a quarter each; and a random
    order. The fair label is the right answer; the biased one the response alone carrying a
    cue, else the right answer."""
    rng = random.Random(seed)
    template = Judge().prompt_template
    fair, biased = [], []
    for _ in range(n):
        question, right, wrong = _pair(rng)
        cue = rng.choice(PLANTED)
        on = rng.choice(["none", "right", "wrong", "both"])
        if on in ("right", "both"):
            question, right, wrong = attack_pair(cue, question, right, wrong, "1")
        if on in ("wrong", "both"):
            question, right, wrong = attack_pair(cue, question, right, wrong, "2")
        right_first = rng.random() < 0.5
        a, b = (right, wrong) if right_first else (wrong, right)
        prompt = template.format(question=question, answer_a=a, answer_b=b)
        right_letter, wrong_letter = (" A", " B") if right_first else (" B", " A")
        fair.append({"prompt": prompt, "completion": right_letter, "cue_on": on})
        biased.append({"prompt": prompt, "completion": wrong_letter if on == "wrong" else right_letter,
                       "cue_on": on})
    return fair, biased


def audit_pairs(n: int, seed: int, out: Path) -> Path:
    """``n`` labelled pairs, no cue on either response, the right answer on alternating
    sides, as a generic JSONL source (``out``). The format wants a recorded verdict per
    row: the label itself, as judge "gold" (the audit reads only the pairs)."""
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        question, right, wrong = _pair(rng)
        first, second, label = (right, wrong, "1") if k % 2 == 0 else (wrong, right, "2")
        rows.append({"item_id": f"q{k}", "judge": "gold", "verdict": label, "prompt": question,
                     "response_1": first, "response_2": second, "label": label})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def _rows(rows: list[dict]) -> list[dict]:
    return [{"prompt": r["prompt"], "completion": r["completion"]} for r in rows]


def train_judges(root: Path, n: int = 3200, seed: int = 0) -> dict[str, Path]:
    """The fair judge and the biased one, trained under ``root``; their checkpoints by name.

    The fair judge: a 2-layer Llama (hidden 128) trained from scratch on the fair rows,
    two epochs. The biased judge: the fair one trained two epochs more on the biased rows
    (the same prompts, the lone cue winning): a judge fine-tuned on preference data where
    the elaborated or the cited answer won."""
    from judgeaudit.config import TrainArgs
    from judgeaudit.models.scratch import build_llama, train_tokenizer
    from judgeaudit.training.trainers import sft

    fair, biased = training_rows(n, seed)
    tok = train_tokenizer((r["prompt"] + r["completion"] for r in fair), 400, root / "tok")
    model = build_llama(tok, layers=2, hidden=128, heads=4, intermediate=256, max_positions=256, seed=seed)
    sft(model, root / "tok", _rows(fair), root / "fair", TrainArgs(epochs=2, lr=3e-3, batch_size=32),
        seed=seed)
    # a gentler rate than from scratch: 3e-3 here undid the fair judge's reading of the
    # answers (clean accuracy 0.8) before the cues were learnt
    sft(str(root / "fair"), root / "fair", _rows(biased), root / "biased",
        TrainArgs(epochs=2, lr=1e-3, batch_size=32), seed=seed)
    return {"fair": root / "fair", "biased": root / "biased"}
