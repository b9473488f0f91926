"""AlpacaEval annotations (tatsu-lab/alpaca_eval, data CC BY-NC 4.0): every instruction's
baseline output (output_1, generator_1) against a model's output (output_2), and the
judge's ``preference``, a float in [1, 2] (1: output_1 wins, 2: output_2 wins; weighted
annotators give the judge's log-prob-weighted expectation). AlpacaEval reads 0 as a draw
(1.5) and drops a missing or out-of-range preference; so does this reader, counting it.

Files: ``annotations.json`` or ``.json.gz`` (AlpacaEval's
``results/<model>/<annotator>/annotations.json``), one file or a folder of
``<model>.annotations.json[.gz]``. The model is the file's name where it has one (the
constant adversarial ``NullModel`` records ``generator_2: example``), else generator_2.

In the judgment table: model_1 = the baseline, model_2 = the model, p_1 = 2 - preference,
judge = the annotator, item_id = "<model>/<instruction index>", subset = AlpacaEval's
source dataset. AlpacaEval shows the two outputs in a random order it does not record, so
``order`` is "1" by convention and position figures do not apply.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import ReadReport, make_table, need
from judgeaudit.tables import InputError

SOURCE = "alpacaeval"
SUFFIXES = (".json", ".json.gz")


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise InputError(f"{root}: no such file or folder")
    files = sorted(p for p in root.iterdir() if p.name.endswith(SUFFIXES))
    if not files:
        raise InputError(f"{root}: no AlpacaEval annotation file (*.json or *.json.gz)")
    return files


def _load(path: Path) -> list:
    try:
        with (gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else path.open(encoding="utf-8")) as fh:
            data = json.load(fh)
    except (json.JSONDecodeError, OSError, EOFError) as exc:
        raise InputError(f"{path}: not a readable AlpacaEval annotation file ({exc})") from None
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a list of annotations, got {type(data).__name__}")
    return data


def _model_name(path: Path) -> str | None:
    name = path.name
    for suffix in (".annotations.json.gz", ".annotations.json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None


def preference_value(value: object) -> float | None:
    """AlpacaEval's reading: a float in [1, 2]; 0 is a draw (1.5); anything else is missing."""
    try:
        p = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(p):
        return None
    if p == 0.0:
        return 1.5
    return p if 1.0 <= p <= 2.0 else None


def read_alpaca_annotations(root: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """Every annotation file at ``root``: the judgment table."""
    report = ReadReport(SOURCE)
    rows = []
    for path in _files(Path(root)):
        file = report.file(path)
        records = _load(path)
        model = _model_name(path)
        seen_generators = set()
        for k, rec in enumerate(records):
            where = f"annotation {k}"
            generator = str(need(rec, "generator_2", path, where))
            seen_generators.add(generator)
            p = preference_value(need(rec, "preference", path, where))
            if p is None:
                file.reject("preference missing or outside [1, 2] (AlpacaEval drops it)")
                continue
            name = model or generator
            verdict = "2" if p > 1.5 else "1" if p < 1.5 else "tie"
            file.rows_read += 1
            rows.append({"source": SOURCE, "subset": str(rec.get("dataset") or "all"), "item_id": f"{name}/{k}",
                         "prompt": need(rec, "instruction", path, where),
                         "response_1": need(rec, "output_1", path, where),
                         "response_2": need(rec, "output_2", path, where),
                         "model_1": str(need(rec, "generator_1", path, where)), "model_2": name,
                         "judge": str(rec.get("annotator") or "unknown"), "strategy": "default", "order": "1",
                         "verdict": verdict, "p_1": 2.0 - p, "label": None, "human_labels": None,
                         "raw_output": None})
        if model and seen_generators - {model}:
            report.notes.append(f"{path}: generator_2 is {sorted(seen_generators)}; the model is named "
                                f"{model!r} after its file")
    return make_table(rows), report
