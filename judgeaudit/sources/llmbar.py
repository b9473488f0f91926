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

import json
from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import FileReport, ReadReport, load_json, make_table, need
from judgeaudit.sources.repeats import Repeats
from judgeaudit.tables import InputError

SOURCE = "llmbar"
ORDER_KEYS = {"1": "swap = False", "2": "swap = True"}
REPEATED = "duplicated pair: an exact copy of an earlier record of dataset.json (first kept)"


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
    """Every set below ``root``, every judge and strategy: the judgment table. A pair that
    a set repeats exactly is counted and skipped (its verdicts too, where the judge gave the
    same ones); one repeated with another label, or judged differently, is an error naming
    both records; a read that gives no verdict is an error."""
    root = Path(root)
    report = ReadReport(SOURCE)
    rows: list[dict] = []
    n_results = 0
    for folder in _sets(root):
        subset = folder.relative_to(root).as_posix() if folder != root else folder.name
        data_path = folder / "dataset.json"
        items, copy_of = _read_dataset(data_path, report)
        for result_path in sorted(folder.glob("evaluators/*/*/result.json")):
            judge, strategy = result_path.parent.parent.name, result_path.parent.name
            rows += _read_result(result_path, items, copy_of, subset, judge, strategy, report)
            n_results += 1
    if not rows:
        why = ("no evaluators/<judge>/<strategy>/result.json below it" if not n_results
               else f"every record of its {n_results} result file(s) rejected")
        raise InputError(f"{root}: no verdict read ({why})")
    return make_table(rows), report


def _read_dataset(path: Path, report: ReadReport) -> tuple[list[dict | None], dict[int, int]]:
    """(the set's pairs, None where a record repeats an earlier one exactly; for each such
    record, the number of the record it repeats). The read report counts rows per result
    file, so a repeat is counted there, per judge and strategy, and named in a note here."""
    dataset = load_json(path)
    if not isinstance(dataset, list):
        raise InputError(f"{path}: expected a list of pairs, got {type(dataset).__name__}")
    if not dataset:
        raise InputError(f"{path}: no pairs (an empty list)")
    repeats = Repeats(path, FileReport(str(path)), REPEATED)
    items: list[dict | None] = []
    copy_of: dict[int, int] = {}
    for k, rec in enumerate(dataset):
        where = f"record {k}"
        label = str(need(rec, "label", path, where))
        if label not in ("1", "2"):
            raise InputError(f"{path}: {where}: field 'label' must be 1 or 2, got {label!r}")
        item = {"prompt": need(rec, "input", path, where), "response_1": need(rec, "output_1", path, where),
                "response_2": need(rec, "output_2", path, where), "label": label}
        pair = json.dumps([item["prompt"], item["response_1"], item["response_2"]])
        if repeats.is_copy(pair, k, rec, "hold the same pair"):
            copy_of[k] = repeats.first_of(pair)
            items.append(None)
            continue
        items.append(item)
    report.notes += repeats.note()
    return items, copy_of


def _read_result(path: Path, items: list[dict | None], copy_of: dict[int, int], subset: str, judge: str,
                 strategy: str, report: ReadReport) -> list[dict]:
    file = report.file(path)
    records = load_json(path)
    if not isinstance(records, list):
        raise InputError(f"{path}: expected a list of records, got {type(records).__name__}")
    if len(records) != len(items):
        raise InputError(f"{path}: {len(records)} records, but its dataset.json has {len(items)} pairs")
    finals: dict[int, dict | None] = {}
    rows = []
    for k, rec in enumerate(records):
        where = f"record {k}"
        first = copy_of.get(k, k)
        item = items[first]
        if need(rec, "input", path, where) != item["prompt"] or rec.get("output_1") != item["response_1"]:
            raise InputError(f"{path}: {where}: the pair differs from dataset.json record {k}")
        final = _final(rec, path, where)
        if k in copy_of:  # the judge's verdicts on a pair the set repeats: the same ones, or a conflict
            if _winners(final) != _winners(finals.get(first)):
                raise InputError(f"{path}: records {first} and {k} judge the same pair but their verdicts differ "
                                 f"({_winners(finals.get(first))} and {_winners(final)})")
            file.reject(REPEATED)
            continue
        finals[k] = final
        if final is None:
            file.reject("no results")
            continue
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


def _final(rec: dict, path: Path, where: str) -> dict | None:
    """The record's final step (LLMBar's scorer reads the last), None where it has no results."""
    steps = need(rec, "results", path, where)
    if not isinstance(steps, list) or not steps:
        return None
    final = steps[-1]
    if not isinstance(final, dict) or not all(key in final for key in ORDER_KEYS.values()):
        raise InputError(f"{path}: {where}: field 'results'[-1] has no 'swap = False'/'swap = True' "
                         f"verdicts (got {type(final).__name__})")
    return final


def _winners(final: dict | None) -> dict[str, object] | None:
    """The winner of each order of a final step, as recorded."""
    if final is None:
        return None
    return {key: final[key].get("winner") if isinstance(final[key], dict) else None for key in ORDER_KEYS.values()}
