"""JudgeBench (ScalerLab, arXiv 2410.12784): hard response pairs with objective labels
and the verdicts of real judges, both presentation orders. Read from ../shared/data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from judgeaudit.judging.pairwise import binary_verdict, combine_orders
from judgeaudit.tables import InputError

PAIRS_FILE = "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl"


def question_type(source: str) -> str:
    """mmlu-pro-* -> knowledge, livebench-reasoning -> reasoning, livebench-math -> math,
    livecodebench -> coding."""
    for prefix, qtype in (("mmlu-pro", "knowledge"), ("livebench-reasoning", "reasoning"),
                          ("livebench-math", "math"), ("livecodebench", "coding")):
        if source.startswith(prefix):
            return qtype
    return source


def _decision(text: str) -> str:
    text = (text or "").strip()
    if re.match(r"^A\s*>", text):
        return "A"
    if re.match(r"^B\s*>", text):
        return "B"
    return "tie"


def _jsonl(path: Path) -> list[dict]:
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: line {lineno}: malformed JSON ({exc.msg})") from None
    return rows


def load_pairs(root: str | Path) -> pd.DataFrame:
    """The 350 GPT-4o response pairs: pair_id, qtype, question, response_a/b, human."""
    rows = _jsonl(Path(root) / PAIRS_FILE)
    frame = pd.DataFrame(rows)
    frame["human"] = frame["label"].map(_decision)
    frame["qtype"] = frame["source"].map(question_type)
    return frame.rename(columns={"response_A": "response_a", "response_B": "response_b"})[
        ["pair_id", "source", "qtype", "question", "response_a", "response_b", "human"]]


def load_judges(root: str | Path) -> pd.DataFrame:
    """One row per (judge, pair): the verdict from both orders (position swap) and
    whether the two orders agreed. An inconsistent pair keeps the first order's verdict."""
    rows = []
    for path in sorted(Path(root).glob("dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=*")):
        judge = path.stem.split("judge_model=")[-1]
        for rec in _jsonl(path):
            games = rec.get("judgments") or []
            if len(games) != 2:
                raise InputError(f"{path}: pair {rec.get('pair_id')}: expected 2 judgments "
                                 f"(both orders), found {len(games)}")
            first, second = (_decision(g.get("decision")) for g in games)
            rows.append({"judge": judge, "pair_id": rec["pair_id"],
                         "verdict": binary_verdict(first, second),
                         "consistent": combine_orders(first, second) in (0.0, 1.0)})
    if not rows:
        raise InputError(f"{root}: no JudgeBench judge files found")
    return pd.DataFrame(rows)
