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
source dataset.

``order``: AlpacaEval shows the two outputs in a random order that it does not record but
draws from a seed: one switch per instruction, the same for every model (its
RandomSwitchTwoColumnsProcessor, seeded "is_switched_outputs" + instruction + the
annotator's seed, 0 by default). ``shown_switched`` redraws it, and where an annotation
keeps its log-prob completion, ``switched_by_logprobs`` reads the switch off the judge's
own output; the report's ``checks`` count where the two agree, disagree, or cannot be
compared. On AlpacaEval 2.0's GPT-4 Turbo annotations they agree on all 41,718 that keep
their log-probs. "2" means the model (output_2) was shown first.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import ReadReport, make_table, need
from judgeaudit.tables import InputError

SOURCE = "alpacaeval"
SUFFIXES = (".json", ".json.gz")
SWITCH_SEED = 0  # AlpacaEval's annotators' default seed (BaseAnnotator), handed to the order switch


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


def shown_switched(instruction: str, seed: int = SWITCH_SEED) -> bool:
    """Whether AlpacaEval showed output_2 first for ``instruction`` (its seeded switch)."""
    return random.Random(f"is_switched_outputs{instruction}{seed}").choices([False, True], k=1)[0]


def switched_by_logprobs(completion: object, preference: float) -> bool | None:
    """Whether the judge's own log-probs say the outputs were switched, or None where they
    cannot tell (no "m"/"M" log-probs, or P(m) = 1/2). AlpacaEval's log-prob annotators name
    the first output shown "m" and the second "M", record 2 - P(m), then 3 - that where
    they had switched: a preference of 2 - P(m) was shown unswitched, 1 + P(m) switched."""
    try:
        top = completion["logprobs"]["content"][0]["top_logprobs"]
        logprob = {t["token"]: float(t["logprob"]) for t in top if t["token"] in ("m", "M")}
    except (TypeError, KeyError, IndexError, ValueError):
        return None
    if not logprob:
        return None
    high = max(logprob.values())
    weights = {token: math.exp(logprob.get(token, -math.inf) - high) for token in ("m", "M")}
    p_m = weights["m"] / (weights["m"] + weights["M"])
    unswitched, switched = abs(2 - p_m - preference) < 1e-6, abs(1 + p_m - preference) < 1e-6
    return switched if unswitched != switched else None


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
            instruction = need(rec, "instruction", path, where)
            switched = shown_switched(str(instruction))
            seen = switched_by_logprobs(rec.get("raw_completion"), p)
            report.checks["order_unchecked" if seen is None else
                          "order_agrees" if seen == switched else
                          "order_contradicted"] += 1
            rows.append({"source": SOURCE, "subset": str(rec.get("dataset") or "all"), "item_id": f"{name}/{k}",
                         "prompt": instruction,
                         "response_1": need(rec, "output_1", path, where),
                         "response_2": need(rec, "output_2", path, where),
                         "model_1": str(need(rec, "generator_1", path, where)), "model_2": name,
                         "judge": str(rec.get("annotator") or "unknown"), "strategy": "default",
                         "order": "2" if switched else "1",
                         "verdict": verdict, "p_1": 2.0 - p, "label": None, "human_labels": None,
                         "raw_output": None})
        if model and seen_generators - {model}:
            report.notes.append(f"{path}: generator_2 is {sorted(seen_generators)}; the model is named "
                                f"{model!r} after its file")
    return make_table(rows), report
