"""Real multiple-choice and maths items for BOAT: MMLU (``dev/<subject>_dev.csv`` and
``test/<subject>_test.csv``, header ``question,choice0..choice3,answer``) and GSM8K
(``test.jsonl``: ``question``, ``answer`` ending in ``#### N``). Errors name the file,
row and field; items are drawn with a seed, stratified by subject."""

from __future__ import annotations

import csv
import io
import random
import re
from dataclasses import dataclass
from pathlib import Path

from judgeaudit.generation.math_program import NotAProgram, Program, parse_program
from judgeaudit.generation.mcq import MCQ, answer_jitter
from judgeaudit.sources.text_input import utf8_text
from judgeaudit.tables import numbered_jsonl
from judgeaudit.tables import InputError

MMLU_FIELDS = ("question", "choice0", "choice1", "choice2", "choice3", "answer")
_FINAL = re.compile(r"####\s*(-?[\d,]+(?:\.\d+)?)\s*$")


@dataclass(frozen=True)
class RealItems:
    """Test items, the few-shot pool of each (the subject's dev items for MMLU, other
    items for GSM8K), and a note of what was read and skipped."""

    items: list[MCQ]
    groups: list[str]  # subject (MMLU) or "gsm8k", per item
    shot_pools: list[list[MCQ]]
    note: str


def _mmlu_file(path: Path) -> list[MCQ]:
    with io.StringIO(utf8_text(path), newline="") as f:  # decoded first: an error names the line
        reader = csv.DictReader(f)
        missing = [c for c in MMLU_FIELDS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path}: header lacks {missing} (expected {','.join(MMLU_FIELDS)})")
        out = []
        for row_no, row in enumerate(reader, start=2):
            options = tuple(str(row[f"choice{k}"]) for k in range(4))
            try:
                answer = int(row["answer"])
            except (TypeError, ValueError):
                raise InputError(f"{path}: row {row_no}: field 'answer' is {row['answer']!r}, not 0-3") from None
            if not 0 <= answer <= 3:
                raise InputError(f"{path}: row {row_no}: field 'answer' is {answer}, not 0-3")
            if len(set(options)) < 4 or not str(row["question"]).strip():
                continue  # duplicate options or an empty question: not a four-way item
            out.append(MCQ(str(row["question"]), options, answer))
    return out


def read_mmlu(root: str | Path, n_items: int, seed: int) -> RealItems:
    """``n_items`` test items spread evenly over the subjects, each with its subject's
    dev items as the few-shot pool."""
    root = Path(root)
    tests = sorted((root / "test").glob("*_test.csv"))
    if not tests:
        raise InputError(f"{root}: no test/<subject>_test.csv files (MMLU layout)")
    rng = random.Random(seed)
    by_subject: dict[str, tuple[list[MCQ], list[MCQ]]] = {}
    for path in tests:
        subject = path.name.removesuffix("_test.csv")
        dev = root / "dev" / f"{subject}_dev.csv"
        by_subject[subject] = (_mmlu_file(path), _mmlu_file(dev) if dev.exists() else [])
    subjects = sorted(s for s, (test, _) in by_subject.items() if test)
    order = {s: rng.sample(by_subject[s][0], len(by_subject[s][0])) for s in subjects}
    items, groups = [], []
    k = 0
    while len(items) < n_items and any(order.values()):  # round robin: even over subjects
        s = subjects[k % len(subjects)]
        if order[s]:
            items.append(order[s].pop())
            groups.append(s)
        k += 1
    pools = [by_subject[g][1] for g in groups]
    n_read = sum(len(t) for t, _ in by_subject.values())
    return RealItems(items, groups, pools, f"MMLU: {len(items)} of {n_read} four-way test items (repeated options "
                                           f"skipped) from {len(set(groups))} of {len(subjects)} subjects; shots "
                                           "from each subject's dev items")


def gsm8k_answer(text: str) -> int | None:
    """The final number after '####' (None if it is not an integer)."""
    m = _FINAL.search(text.strip())
    if m is None:
        return None
    value = m.group(1).replace(",", "")
    return int(value) if "." not in value else None


def read_gsm8k(root: str | Path, n_items: int, seed: int) -> RealItems:
    """``n_items`` problems as four-way items by answer jitter (the true answer among
    numbers near it); the shots come from the other problems."""
    path = Path(root)
    path = path / "test.jsonl" if path.is_dir() else path
    if not path.is_file():
        raise InputError(f"{path}: no such GSM8K file")
    problems = []
    for line_no, rec in numbered_jsonl(path):
        for field in ("question", "answer"):
            if not isinstance(rec.get(field), str):
                raise InputError(f"{path}: line {line_no}: field {field!r} missing or not text")
        answer = gsm8k_answer(rec["answer"])
        if answer is None:
            raise InputError(f"{path}: line {line_no}: field 'answer' does not end in '#### <integer>'")
        problems.append((rec["question"], answer, _program(rec["question"], rec["answer"])))
    rng = random.Random(seed)
    mcqs = []
    for question, answer, program in problems:
        jittered = answer_jitter(answer, rng)
        mcqs.append(MCQ(question, jittered.options, jittered.answer, program=program))
    order = rng.sample(range(len(mcqs)), len(mcqs))
    chosen, rest = order[:n_items], order[n_items:] or order
    pool = [mcqs[i] for i in rest[:50]]
    items = [mcqs[i] for i in chosen]
    n_jitter = sum(item.jitterable for item in items)
    return RealItems(items, ["gsm8k"] * len(items), [pool] * len(items),
                     f"GSM8K: {len(items)} of {len(problems)} problems, four options by answer jitter; "
                     f"question jitter on {n_jitter} of them (their calculator annotations read as a program "
                     "and re-solved); shots from other problems")


def _program(question: str, solution: str) -> Program | None:
    """The solution's program, where question jitter can use it (None: not readable as
    one, or no number it may move, or no tried jitter keeps the steps whole)."""
    try:
        program = parse_program(question, solution)
    except NotAProgram:
        return None
    return program if program.jitter(random.Random(0)) is not None else None
