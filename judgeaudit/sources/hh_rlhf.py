"""Anthropic's hh-rlhf preference pairs (``chosen`` / ``rejected``: whole "Human: ...
Assistant: ..." dialogues that differ in the last assistant turn) as (question, chosen,
rejected) items for reward-model training and the prefix-bias audit."""

from __future__ import annotations

import random
from pathlib import Path

from judgeaudit.tables import numbered_jsonl
from judgeaudit.tables import InputError

TURN = "\n\nAssistant:"


def split_dialogue(text: str) -> tuple[str, str]:
    """(the dialogue up to the last assistant turn, that turn's text)."""
    cut = text.rfind(TURN)
    if cut < 0:
        raise ValueError("no assistant turn")
    return text[:cut].strip(), text[cut + len(TURN):].strip()


def hh_rlhf_items(path: str | Path, n_items: int, seed: int, question_chars: int = 160,
                  answer_chars: int = 200) -> tuple[list[dict], str]:
    """(``n_items`` seeded items {q, chosen, rejected}, a note). Pairs whose dialogues
    differ before the last turn, or whose two answers are equal or empty, are skipped and
    counted. The question keeps its last ``question_chars`` (the turn being answered), each
    answer its first ``answer_chars``, so a comparison fits a small model's context."""
    path = Path(path)
    if path.is_dir():
        found = sorted(path.rglob("test.jsonl.gz")) + sorted(path.rglob("test.jsonl"))
        if not found:
            raise InputError(f"{path}: no test.jsonl(.gz) under it (hh-rlhf layout)")
        path = found[0]
    items, skipped = [], 0
    for line_no, rec in numbered_jsonl(path):
        for field in ("chosen", "rejected"):
            if not isinstance(rec.get(field), str):
                raise InputError(f"{path}: line {line_no}: field {field!r} missing or not text")
        try:
            (q1, chosen), (q2, rejected) = split_dialogue(rec["chosen"]), split_dialogue(rec["rejected"])
        except ValueError:
            skipped += 1
            continue
        if q1 != q2 or not chosen or not rejected or chosen == rejected:
            skipped += 1
            continue
        items.append({"q": q1[-question_chars:], "chosen": chosen[:answer_chars],
                      "rejected": rejected[:answer_chars]})
    picked = random.Random(seed).sample(items, min(n_items, len(items)))
    return picked, (f"hh-rlhf ({path.parent.name}): {len(picked)} of {len(items)} usable pairs "
                    f"({skipped} skipped: dialogues differing before the last turn, or equal/empty answers)")
