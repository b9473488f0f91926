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

A pair is one item: a judge record whose pair fields differ from its pairs file's, or a
repeated pair_id with other contents, is an error naming both records; an exact repeat is
skipped and counted. An empty file, and a folder that gives no verdict, are errors.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import FileReport, ReadReport, make_table, need
from judgeaudit.tables import numbered_jsonl
from judgeaudit.tables import InputError

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


# the fields a judge record repeats from its pairs file, which must agree: one item, one label
PAIR_FIELDS = ("source", "question", "response_A", "response_B", "label")
REPEATED = "duplicated pair_id (first kept)"


@dataclass(frozen=True)
class _Record:
    """A record as first read: where it is, and what it holds."""

    path: Path
    line: int
    record: dict


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _first(seen: dict[str, _Record], pid: str, rec: dict, path: Path, line: int, file: FileReport) -> bool:
    """Whether ``rec`` is the first record of pair ``pid`` in its file: an exact repeat is
    counted and skipped; a repeat with other contents is an error naming both lines."""
    first = seen.get(pid)
    if first is None:
        seen[pid] = _Record(path, line, rec)
        return True
    differ = sorted(k for k in set(rec) | set(first.record) if rec.get(k) != first.record.get(k))
    if differ:
        raise InputError(f"{path}: line {line} repeats pair {pid} of line {first.line} with other "
                         f"{', '.join(differ)}; keep one of them")
    file.reject(REPEATED)
    return False


def _scores(judgment: object, path: Path, where: str, name: str) -> list[float] | None:
    """A reward model's [shown first, shown second] scores, or None where the judgment has
    none; anything but two finite numbers is an error naming the file, record and field."""
    raw = judgment.get("scores") if isinstance(judgment, dict) else None
    if raw is None:
        return None
    bad = f"{path}: {where}: field {name!r}"
    if isinstance(raw, str):  # "[1.88, 1.26]" is JSON
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise InputError(f"{bad}: {_short(raw)} is not JSON") from None
    if not isinstance(raw, list) or len(raw) != 2 or any(isinstance(v, bool) for v in raw):
        raise InputError(f"{bad}: must be two numbers [shown first, shown second], got {_short(raw)}")
    try:
        values = [float(v) for v in raw]
    except (TypeError, ValueError) as exc:
        raise InputError(f"{bad}: {exc}") from None
    if not all(math.isfinite(v) for v in values):
        raise InputError(f"{bad}: scores must be finite, got {_short(raw)}")
    return values


def read_judgebench(root: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """Every pairs file and judge file in ``root``: the judgment table."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: no such folder (JudgeBench data and outputs)")
    report = ReadReport(SOURCE)
    files = {p: _FILE.match(p.name) for p in sorted(root.glob("dataset=judgebench,*.jsonl"))}
    if not any(files.values()):
        raise InputError(f"{root}: no JudgeBench file (dataset=judgebench,response_model=....jsonl)")
    pairs: dict[str, dict[str, _Record]] = {}
    for path, m in files.items():
        if m and not m["judge"]:
            pairs[m["model"]] = _read_pairs(path, m["model"], report)
    rows: list[dict] = []
    for path, m in files.items():
        if m and m["judge"]:
            rows += _read_judge(path, m["model"], m["strategy"], m["judge"], pairs.get(m["model"]), report)
    judged = {m["model"] for m in files.values() if m and m["judge"]}
    unjudged = [f"the {len(pairs[model])} pairs of response model {model} have no judge file"
                for model in sorted(set(pairs) - judged)]
    if not rows:
        raise InputError(f"{root}: no judge verdict read ({'; '.join(unjudged) or 'no judge file'})")
    report.notes += [f"{root}: {note}" for note in unjudged]
    return make_table(rows), report


def _read_pairs(path: Path, model: str, report: ReadReport) -> dict[str, _Record]:
    file = report.file(path)
    items: dict[str, _Record] = {}
    for line_no, rec in numbered_jsonl(path):
        where = f"line {line_no}"
        pid = str(need(rec, "pair_id", path, where))
        if _first(items, pid, rec, path, line_no, file):
            _item(rec, model, path, where)  # every field checked now, not when a judge file uses it
            file.rows_read += 1
    if not items:
        raise InputError(f"{path}: no pair (the file is empty)")
    return items


def _item(rec: dict, model: str, path: Path, where: str) -> dict:
    return {"subset": question_type(str(need(rec, "source", path, where))),
            "item_id": str(need(rec, "pair_id", path, where)), "prompt": need(rec, "question", path, where),
            "response_1": need(rec, "response_A", path, where), "response_2": need(rec, "response_B", path, where),
            "model_1": model, "model_2": model, "label": _label(need(rec, "label", path, where), path, where),
            "human_labels": None}


def _agrees(rec: dict, pair: _Record, path: Path, where: str) -> None:
    """A judge record's pair fields as its pairs file has them, else an error naming both."""
    for name in PAIR_FIELDS:
        if rec.get(name) != pair.record.get(name):
            raise InputError(f"{path}: {where}: field {name!r} is {_short(rec.get(name))} but {pair.path}: "
                             f"line {pair.line} has {_short(pair.record.get(name))}; a pair has one {name}")


def _read_judge(path: Path, model: str, strategy: str, judge: str, pairs: dict[str, _Record] | None,
                report: ReadReport) -> list[dict]:
    file = report.file(path)
    rows: list[dict] = []
    seen: dict[str, _Record] = {}
    for line_no, rec in numbered_jsonl(path):
        pid = str(need(rec, "pair_id", path, f"line {line_no}"))
        where = f"line {line_no} (pair {pid})"
        item = _item(rec, model, path, where)
        if not _first(seen, pid, rec, path, line_no, file):
            continue
        if pairs is not None and pid not in pairs:
            file.reject("pair_id not in the pairs file")
            continue
        if pairs is not None:
            _agrees(rec, pairs[pid], path, where)
        games = need(rec, "judgments", path, where) or []
        if not isinstance(games, list) or len(games) != 2:
            raise InputError(f"{path}: {where}: field 'judgments' must hold 2 games (both orders), "
                             f"found {len(games) if isinstance(games, list) else type(games).__name__}")
        for index, (order, game) in enumerate(zip(("1", "2"), games)):
            decision = _DECISION.get(str((game or {}).get("decision")).strip(), "unparseable")
            if order == "2":  # the swapped game's decision is in the swapped labelling
                decision = {"1": "2", "2": "1"}.get(decision, decision)
            judgment = (game or {}).get("judgment")
            scores = _scores(judgment, path, where, f"judgments[{index}].judgment.scores")
            p_1 = None
            if scores is not None:
                margin = scores[0] - scores[1] if order == "1" else scores[1] - scores[0]
                p_1 = 1.0 / (1.0 + math.exp(-max(min(margin, 50.0), -50.0)))
            raw = judgment.get("response") if isinstance(judgment, dict) else judgment
            file.unparseable += decision == "unparseable"
            file.rows_read += 1
            rows.append({"source": SOURCE, **item, "judge": judge, "strategy": strategy, "order": order,
                         "verdict": decision, "p_1": p_1, "raw_output": (str(raw).strip() or None) if raw else None})
    if not seen:
        raise InputError(f"{path}: no verdict (the file is empty)")
    if not file.rows_read:
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(file.rejected.items()))
        raise InputError(f"{path}: no verdict read ({reasons}); its judge would drop out")
    return rows
