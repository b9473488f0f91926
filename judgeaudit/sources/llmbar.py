"""LLMBar (princeton-nlp, MIT): instruction-following pairs with gold labels and the
recorded verdicts of six LLM judges under up to 15 prompting strategies.

Layout: every set is a folder with ``dataset.json`` (input, output_1, output_2, label 1 or
2) and ``evaluators/<judge>/<strategy>/result.json``: the dataset's records, each with
``results``, a list of steps. LLMBar's own scorer reads the LAST step as the strategy's
final verdict; earlier steps are auxiliary outputs ([text, finish_reason]: generated
metrics or a reference answer) or, for Swap strategies, the first round whose two orders
disagreed before the synthesis step. The final step holds ``swap = False`` (output_1
shown first) and ``swap = True`` (output_2 shown first); each ``winner`` is already in the
ORIGINAL labelling (LLMBar reverses the swapped order's label before saving it), "1" or
"2", and anything else (None) where the judge's text did not parse. Rating strategies
score each output alone (``score_1`` / ``score_2``), so their two "orders" differ only in
how a tied score is broken.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import ReadReport, load_json, make_table, need
from judgeaudit.tables import InputError

SOURCE = "llmbar"
ORDER_KEYS = {"1": "swap = False", "2": "swap = True"}


def _completion(step: dict, key: str) -> str | None:
    """The judge's text for one order (or the two scores of a rating step)."""
    entry = step[key]
    if "completion" in entry:
        text = entry["completion"]
        return text[0] if isinstance(text, list) and text else str(text)
    if "score_1" in step:
        s1, s2 = (step[k][0] if isinstance(step[k], list) else step[k] for k in ("score_1", "score_2"))
        return f"score_1: {s1}\nscore_2: {s2}"
    return None


def _sets(root: Path) -> list[Path]:
    if not root.exists():
        raise InputError(f"{root}: no such folder")
    sets = sorted(p.parent for p in root.rglob("dataset.json"))
    if not sets:
        raise InputError(f"{root}: no LLMBar set found (no dataset.json below it)")
    return sets


def read_llmbar(root: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """Every set below ``root``, every judge and strategy: the judgment table."""
    root = Path(root)
    report = ReadReport(SOURCE)
    rows: list[dict] = []
    for folder in _sets(root):
        subset = folder.relative_to(root).as_posix() if folder != root else folder.name
        data_path = folder / "dataset.json"
        dataset = load_json(data_path)
        if not isinstance(dataset, list):
            raise InputError(f"{data_path}: expected a list of pairs, got {type(dataset).__name__}")
        items = []
        for k, rec in enumerate(dataset):
            where = f"record {k}"
            label = str(need(rec, "label", data_path, where))
            if label not in ("1", "2"):
                raise InputError(f"{data_path}: {where}: field 'label' must be 1 or 2, got {label!r}")
            items.append({"prompt": need(rec, "input", data_path, where),
                          "response_1": need(rec, "output_1", data_path, where),
                          "response_2": need(rec, "output_2", data_path, where), "label": label})
        for result_path in sorted(folder.glob("evaluators/*/*/result.json")):
            judge, strategy = result_path.parent.parent.name, result_path.parent.name
            rows += _read_result(result_path, items, subset, judge, strategy, report)
    return make_table(rows), report


def _read_result(path: Path, items: list[dict], subset: str, judge: str, strategy: str,
                 report: ReadReport) -> list[dict]:
    file = report.file(path)
    records = load_json(path)
    if not isinstance(records, list):
        raise InputError(f"{path}: expected a list of records, got {type(records).__name__}")
    if len(records) != len(items):
        raise InputError(f"{path}: {len(records)} records, but its dataset.json has {len(items)} pairs")
    rows = []
    for k, (rec, item) in enumerate(zip(records, items)):
        where = f"record {k}"
        if need(rec, "input", path, where) != item["prompt"] or rec.get("output_1") != item["response_1"]:
            raise InputError(f"{path}: {where}: the pair differs from dataset.json record {k}")
        steps = need(rec, "results", path, where)
        if not isinstance(steps, list) or not steps:
            file.reject("no results")
            continue
        final = steps[-1]  # LLMBar's scorer: the last step is the final verdict
        if not isinstance(final, dict) or not all(key in final for key in ORDER_KEYS.values()):
            raise InputError(f"{path}: {where}: field 'results'[-1] has no 'swap = False'/'swap = True' "
                             f"verdicts (got {type(final).__name__})")
        for order, key in ORDER_KEYS.items():
            winner = need(final[key], "winner", path, f"{where}, results[-1][{key!r}]")
            verdict = str(winner) if str(winner) in ("1", "2") else "unparseable"
            file.unparseable += verdict == "unparseable"
            file.rows_read += 1
            rows.append({"source": SOURCE, "subset": subset, "item_id": f"{subset}/{k}", **item,
                         "model_1": None, "model_2": None, "judge": judge, "strategy": strategy,
                         "order": order, "verdict": verdict, "p_1": None, "human_labels": None,
                         "raw_output": _completion(final, key)})
    return rows
