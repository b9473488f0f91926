"""PandaLM (WeOpenML, Apache-2.0): 999 response pairs with three independent human labels
each ("0" a tie, "1" or "2" the better response) and two real judges' verdicts on them
(gpt-3.5-turbo and PandaLM-7B), one presentation order (response 1 first).

Layout: ``testset-v1.json`` (idx, cmp_key "<model 1>_<model 2>", instruction, input,
response1, response2, annotator1..3) and one ``<judge>-testset-v1.json`` per judge (idx,
``<x>_result``, ``<x>_reason``). A judge's "Tie" (or 0) is a tie; any other value (e.g.
"garbage") is an unparseable verdict. The label is the human majority (at least two of
the three annotators); an item whose three annotators all differ has no label.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import ReadReport, load_json, make_table, need
from judgeaudit.sources.repeats import Repeats
from judgeaudit.tables import InputError

SOURCE = "pandalm"
TESTSET = "testset-v1.json"
ANNOTATORS = ("annotator1", "annotator2", "annotator3")
_HUMAN = {"0": "tie", "1": "1", "2": "2"}
_JUDGE = {"1": "1", "2": "2", "0": "tie", "tie": "tie"}
REPEATED = "duplicated idx: an exact copy of an earlier record (first kept)"


def majority(labels: list[str]) -> str | None:
    """The label at least two annotators gave, else None."""
    value, count = Counter(labels).most_common(1)[0]
    return value if count >= 2 else None


def _as_text(value: object, report: ReadReport) -> str:
    """A response the file stores as a JSON boolean or number (a model that answered
    "True"), read as its text; counted in the report's notes."""
    if isinstance(value, str):
        return value
    note = "responses stored as JSON booleans or numbers were read as text (e.g. true -> 'True')"
    if note not in report.notes:
        report.notes.append(note)
    return str(value)


def _prompt(rec: dict) -> str:
    extra = str(rec.get("input") or "").strip()
    return rec["instruction"] + (f"\n\n{extra}" if extra else "")


def read_pandalm(root: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """The test set with each judge file beside it: the judgment table. A repeated idx is
    counted and skipped where the record is an exact copy, an error where it differs; a read
    that gives no verdict is an error."""
    root = Path(root)
    test_path = root / TESTSET if root.is_dir() else root
    if not test_path.is_file():
        raise InputError(f"{test_path}: no such file (the PandaLM test set)")
    report = ReadReport(SOURCE)
    testset = load_json(test_path)
    if not isinstance(testset, list):
        raise InputError(f"{test_path}: expected a list of pairs, got {type(testset).__name__}")
    if not testset:
        raise InputError(f"{test_path}: no pairs (an empty list)")
    items: dict[int, dict] = {}
    test_file = report.file(test_path)
    repeats = Repeats(test_path, test_file, REPEATED)
    for k, rec in enumerate(testset):
        where = f"record {k}"
        idx = need(rec, "idx", test_path, where)
        if repeats.is_copy(idx, k, rec, f"both have idx {idx}", f"idx {idx}"):
            continue
        humans = []
        for a in ANNOTATORS:
            value = str(need(rec, a, test_path, where))
            if value not in _HUMAN:
                raise InputError(f"{test_path}: {where} (idx {idx}): field {a!r} must be 0, 1 or 2, got {value!r}")
            humans.append(_HUMAN[value])
        label = majority(humans)
        if label is None:
            test_file.reject("no human majority (three different labels): kept, label left empty")
        models = str(need(rec, "cmp_key", test_path, where)).split("_", 1)
        items[idx] = {"item_id": str(idx), "prompt": _prompt({"instruction": need(rec, "instruction", test_path, where),
                                                             "input": rec.get("input")}),
                      "response_1": _as_text(need(rec, "response1", test_path, where), report),
                      "response_2": _as_text(need(rec, "response2", test_path, where), report),
                      "model_1": models[0], "model_2": models[1] if len(models) > 1 else None,
                      "label": label, "human_labels": humans}
        test_file.rows_read += 1
    report.notes += repeats.note()
    rows = []
    judge_files = sorted(p for p in root.glob(f"*-{TESTSET}")) if root.is_dir() else []
    for path in judge_files:
        judge = path.name[: -len(f"-{TESTSET}")]
        rows += _read_judge(path, judge, items, report)
    if not rows:
        why = (f"no judge file (*-{TESTSET}) beside the test set" if not judge_files
               else f"no record of {len(judge_files)} judge file(s) kept; see their rejections")
        raise InputError(f"{root}: no verdict read ({why})")
    return make_table(rows), report


def _read_judge(path: Path, judge: str, items: dict[int, dict], report: ReadReport) -> list[dict]:
    file = report.file(path)
    records = load_json(path)
    if not isinstance(records, list):
        raise InputError(f"{path}: expected a list of verdicts, got {type(records).__name__}")
    repeats = Repeats(path, file, REPEATED)
    rows = []
    for k, rec in enumerate(records):
        where = f"record {k}"
        idx = need(rec, "idx", path, where)
        result_key = next((key for key in rec if key.endswith("_result")), None)
        if result_key is None:
            raise InputError(f"{path}: {where} (idx {idx}): no '<judge>_result' field (has {sorted(rec)})")
        if idx not in items:
            file.reject("idx not in the test set")
            continue
        if repeats.is_copy(idx, k, rec, f"both have idx {idx}", f"idx {idx}"):
            continue
        raw = str(rec[result_key]).strip()
        verdict = _JUDGE.get(raw.lower(), "unparseable")
        file.unparseable += verdict == "unparseable"
        file.rows_read += 1
        reason_key = result_key.replace("_result", "_reason")
        rows.append({"source": SOURCE, "subset": "test", **items[idx], "judge": judge, "strategy": "default",
                     "order": "1", "verdict": verdict, "p_1": None,
                     "raw_output": f"{raw}\n{rec.get(reason_key) or ''}".strip()})
    report.notes += repeats.note()
    missing = len(items) - len(rows)
    if missing:
        report.notes.append(f"{path}: no verdict for {missing} of the {len(items)} test pairs")
    return rows
