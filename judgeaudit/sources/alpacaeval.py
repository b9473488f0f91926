"""AlpacaEval annotations (tatsu-lab/alpaca_eval, data CC BY-NC 4.0): every instruction's
baseline output (output_1, generator_1) against a model's output (output_2), and the
judge's ``preference``, a float in [1, 2] (1: output_1 wins, 2: output_2 wins; weighted
annotators give the judge's log-prob-weighted expectation). AlpacaEval reads 0 as a draw
(1.5) and drops a missing or out-of-range preference; so does this reader, counting it.
It judges each (model, instruction) once: a repeated annotation is counted once (rejected,
named in a note); a repeat with other outputs or another preference is an error naming
both records, and so is a file that gives no annotation.

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

import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import FileReport, ReadReport, make_table, need
from judgeaudit.sources.text_input import load_json
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
    data = load_json(path)
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a list of annotations, got {type(data).__name__}")
    if not data:  # a truncated or unfinished file: the model would leave the leaderboard unsaid
        raise InputError(f"{path}: holds no annotation (an empty list); remove the file to leave its model "
                         "out")
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


# AlpacaEval judges each (model, instruction) once: a repeat would count twice in every figure
DUPLICATE = "duplicate of an earlier annotation (same judge, models, instruction, outputs and preference)"
NAMED = 5  # repeats named per file in the report's notes; the rest are counted


@dataclass
class _Firsts:
    """The first annotation of each (judge, baseline, model, instruction): a later one with
    the same outputs and preference is a repeat, counted and named; any other, an error."""

    seen: dict[tuple, tuple[Path, int, tuple]] = field(default_factory=dict)
    repeats: list[str] = field(default_factory=list)

    def is_new(self, key: tuple, values: dict, path: Path, k: int, file: FileReport) -> bool:
        first = self.seen.get(key)
        if first is None:
            self.seen[key] = (path, k, tuple(values.items()))
            return True
        first_path, first_k, first_values = first
        differ = [name for name, value in first_values if values[name] != value]
        instruction = str(key[-1])[:80]
        if differ:
            raise InputError(f"{path}: annotation {k} and {first_path}: annotation {first_k} both judge "
                             f"model {key[2]!r} against {key[1]!r} on instruction {instruction!r} but differ in "
                             f"{', '.join(differ)}; keep one of them")
        file.reject(DUPLICATE)
        where = f"annotation {first_k}" + ("" if first_path == path else f" of {first_path}")
        self.repeats.append(f"annotation {k} repeats {where} (instruction {instruction[:40]!r})")
        return False

    def note(self, path: Path) -> str | None:
        """One note naming the file's repeats (the first ``NAMED`` of them), then forgets them."""
        repeats, self.repeats = self.repeats, []
        if not repeats:
            return None
        more = f"; and {len(repeats) - NAMED} more" if len(repeats) > NAMED else ""
        named = "; ".join(repeats[:NAMED])
        return f"{path}: {len(repeats)} repeated annotation(s), each counted once: {named}{more}"


def read_alpaca_annotations(root: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """Every annotation file at ``root``: the judgment table. A repeated annotation is
    counted once (rejected, named in a note); one that repeats an annotation with other
    outputs or another preference, a file with no annotation, and a file that reads none
    are errors naming the file (and both records)."""
    report = ReadReport(SOURCE)
    rows = []
    firsts = _Firsts()
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
            instruction = need(rec, "instruction", path, where)
            baseline = str(need(rec, "generator_1", path, where))
            judge = str(rec.get("annotator") or "unknown")
            output_1, output_2 = need(rec, "output_1", path, where), need(rec, "output_2", path, where)
            if not firsts.is_new((judge, baseline, name, str(instruction)),
                                 {"dataset": rec.get("dataset"), "output_1": output_1, "output_2": output_2,
                                  "preference": p}, path, k, file):
                continue
            verdict = "2" if p > 1.5 else "1" if p < 1.5 else "tie"
            file.rows_read += 1
            switched = shown_switched(str(instruction))
            seen = switched_by_logprobs(rec.get("raw_completion"), p)
            report.checks["order_unchecked" if seen is None else
                          "order_agrees" if seen == switched else
                          "order_contradicted"] += 1
            rows.append({"source": SOURCE, "subset": str(rec.get("dataset") or "all"), "item_id": f"{name}/{k}",
                         "prompt": instruction, "response_1": output_1, "response_2": output_2,
                         "model_1": baseline, "model_2": name, "judge": judge, "strategy": "default",
                         "order": "2" if switched else "1",
                         "verdict": verdict, "p_1": 2.0 - p, "label": None, "human_labels": None,
                         "raw_output": None})
        if not file.rows_read and sum(file.rejected.values()) > file.rejected[DUPLICATE]:
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(file.rejected.items()))
            raise InputError(f"{path}: no annotation read ({reasons}); its model would drop out")
        repeats = firsts.note(path)
        if repeats:
            report.notes.append(repeats)
        if model and seen_generators - {model}:
            report.notes.append(f"{path}: generator_2 is {sorted(seen_generators)}; the model is named "
                                f"{model!r} after its file")
    return make_table(rows), report
