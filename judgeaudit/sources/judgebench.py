"""JudgeBench (ScalerLab, arXiv 2410.12784): hard response pairs (knowledge, reasoning,
math, coding) with an objective ground-truth label, and real judges' verdicts on them.

Layout: ``dataset=judgebench,response_model=<M>.jsonl`` (pair_id, source, question,
response_A, response_B, label "A>B" / "B>A") and one
``dataset=judgebench,response_model=<M>,judge_name=<strategy>,judge_model=<judge>.jsonl``
per judge: the same pairs with ``judgments``, one per presentation order. The second
judgment is the swapped game: its ``decision`` is in the swapped labelling (JudgeBench's
scorer flips it back), so this reader flips it into the original one. Reward-model
judgments carry ``scores`` [shown first, shown second], from which p_1 =
sigmoid(score_1 - score_2). Every response model's pairs are read, with or without judges.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import ReadReport, make_table, need
from judgeaudit.tables import InputError, numbered_jsonl

SOURCE = "judgebench"
_DECISION = {"A>B": "1", "B>A": "2", "A=B": "tie", "B=A": "tie"}
_FILE = re.compile(r"dataset=judgebench,response_model=(?P<model>[^,]+?)"
                   r"(?:,judge_name=(?P<strategy>[^,]+),judge_model=(?P<judge>.+))?\.jsonl$")


def question_type(source: str) -> str:
    """mmlu-pro-* -> knowledge, livebench-reasoning -> reasoning, livebench-math -> math,
    livecodebench -> coding."""
    for prefix, qtype in (("mmlu-pro", "knowledge"), ("livebench-reasoning", "reasoning"),
                          ("livebench-math", "math"), ("livecodebench", "coding")):
        if source.startswith(prefix):
            return qtype
    return source


def _label(value: object, path: Path, where: str) -> str:
    label = _DECISION.get(str(value).strip())
    if label not in ("1", "2"):
        raise InputError(f"{path}: {where}: field 'label' must be 'A>B' or 'B>A', got {value!r}")
    return label


def _scores(judgment: dict) -> list[float] | None:
    raw = judgment.get("scores") if isinstance(judgment, dict) else None
    if raw is None:
        return None
    values = json.loads(raw) if isinstance(raw, str) else raw  # "[1.88, 1.26]" is JSON
    return [float(v) for v in values] if len(values) == 2 else None


def read_judgebench(root: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """Every pairs file and judge file in ``root``: the judgment table."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: no such folder (JudgeBench data and outputs)")
    report = ReadReport(SOURCE)
    files = {p: _FILE.match(p.name) for p in sorted(root.glob("dataset=judgebench,*.jsonl"))}
    if not any(files.values()):
        raise InputError(f"{root}: no JudgeBench file (dataset=judgebench,response_model=....jsonl)")
    pairs: dict[str, dict[str, dict]] = {}
    for path, m in files.items():
        if m and not m["judge"]:
            pairs[m["model"]] = _read_pairs(path, m["model"], report)
    rows: list[dict] = []
    for path, m in files.items():
        if m and m["judge"]:
            rows += _read_judge(path, m["model"], m["strategy"], m["judge"], pairs.get(m["model"]), report)
    judged = {m["model"] for m in files.values() if m and m["judge"]}
    for model in sorted(set(pairs) - judged):
        report.notes.append(f"{root}: the {len(pairs[model])} pairs of response model {model} have no judge file")
    return make_table(rows), report


def _read_pairs(path: Path, model: str, report: ReadReport) -> dict[str, dict]:
    file = report.file(path)
    items = {}
    for line_no, rec in numbered_jsonl(path):
        where = f"line {line_no}"
        pid = str(need(rec, "pair_id", path, where))
        if pid in items:
            file.reject("duplicated pair_id (first kept)")
            continue
        items[pid] = _item(rec, model, path, where)
        file.rows_read += 1
    return items


def _item(rec: dict, model: str, path: Path, where: str) -> dict:
    return {"subset": question_type(str(need(rec, "source", path, where))),
            "item_id": str(need(rec, "pair_id", path, where)), "prompt": need(rec, "question", path, where),
            "response_1": need(rec, "response_A", path, where), "response_2": need(rec, "response_B", path, where),
            "model_1": model, "model_2": model, "label": _label(need(rec, "label", path, where), path, where),
            "human_labels": None}


def _read_judge(path: Path, model: str, strategy: str, judge: str, pairs: dict | None,
                report: ReadReport) -> list[dict]:
    file = report.file(path)
    rows, seen = [], set()
    for line_no, rec in numbered_jsonl(path):
        where = f"line {line_no}"
        item = _item(rec, model, path, where)
        pid = item["item_id"]
        if pid in seen:
            file.reject("duplicated pair_id (first kept)")
            continue
        seen.add(pid)
        if pairs is not None and pid not in pairs:
            file.reject("pair_id not in the pairs file")
            continue
        games = need(rec, "judgments", path, where) or []
        if not isinstance(games, list) or len(games) != 2:
            raise InputError(f"{path}: {where} (pair {pid}): field 'judgments' must hold 2 games (both orders), "
                             f"found {len(games) if isinstance(games, list) else type(games).__name__}")
        for order, game in zip(("1", "2"), games):
            decision = _DECISION.get(str((game or {}).get("decision")).strip(), "unparseable")
            if order == "2":  # the swapped game's decision is in the swapped labelling
                decision = {"1": "2", "2": "1"}.get(decision, decision)
            judgment = (game or {}).get("judgment")
            scores = _scores(judgment)
            p_1 = None
            if scores is not None:
                margin = scores[0] - scores[1] if order == "1" else scores[1] - scores[0]
                p_1 = 1.0 / (1.0 + math.exp(-max(min(margin, 50.0), -50.0)))
            raw = judgment.get("response") if isinstance(judgment, dict) else judgment
            file.unparseable += decision == "unparseable"
            file.rows_read += 1
            rows.append({"source": SOURCE, **item, "judge": judge, "strategy": strategy, "order": order,
                         "verdict": decision, "p_1": p_1, "raw_output": (str(raw).strip() or None) if raw else None})
    return rows
