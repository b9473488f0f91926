"""The PU audit (partial optimal transport) on recorded verdicts of the judgment table,
with the check a correction owes its users: does it make the verdicts better?

Per (source, judge, strategy): one "A"/"B" verdict per item from its orders (where both
orders disagree the first order's verdict stands, as in the embedded audit), the label as
the human verdict, the subset as the question type. Items whose verdict or label is a tie
or unparseable are excluded, as in the paper, and counted.

``cons_orig`` / ``cons_adj`` (from ``pu_audit.consistency_table``) score the adjusted
verdicts against labels the audit never saw: on a benchmark that is the truth, but a
user holds only the p_ratio verified pairs. ``self_check`` therefore measures the gain
with the verified pairs alone: k-fold within them, the adjustment fitted on the other
folds is scored on the held-out fold; the gain (adjusted minus raw agreement) comes with
a bootstrap CI over the verified pairs, and the verdict "apply" only where the CI lies
above 0, "do not apply" otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from judgeaudit.audits.pu_audit import (
    Pairs,
    PUConfig,
    audit_split,
    consistency_table,
    improvement_vectors,
    run_pu_audit,
)
from judgeaudit.audits.stats import BootstrapSettings, mean_ci
from judgeaudit.progress import Steps, each
from judgeaudit.sources.judgment_table import by_order

GROUP = ["source", "judge", "strategy"]
_AB = {"1": "A", "2": "B"}


def one_verdict(first: str, second: str) -> str:
    """One verdict from the two orders' (original labelling): their mean score decides;
    an A/B split keeps the first order's; no decisive order gives "tie" (or
    "unparseable" when neither parsed)."""
    score = {"A": 1.0, "B": 0.0, "tie": 0.5}
    parsed = [score[v] for v in (first, second) if v in score]
    if not parsed:
        return "unparseable"
    if not any(v in ("A", "B") for v in (first, second)):
        return "tie"
    mean = float(np.mean(parsed))
    return "A" if mean > 0.5 else "B" if mean < 0.5 else first


def binary_items(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(items with pair_id, qtype, verdict, human, prompt and both responses, per group;
    per group, how many items were excluded and why)."""
    to_ab = {"1": "A", "2": "B", "tie": "tie", "unparseable": "unparseable"}
    wide, items = by_order(table)
    first = wide["1"].fillna(wide["2"]).map(to_ab)
    second = wide["2"].fillna(wide["1"]).map(to_ab)
    verdict = [one_verdict(a, b) for a, b in zip(first, second)]
    out = pd.DataFrame({"verdict": verdict, "human": items["label"].map(_AB).to_numpy(),
                        "prompt": items["prompt"].to_numpy(), "response_a": items["response_1"].to_numpy(),
                        "response_b": items["response_2"].to_numpy()}, index=wide.index).reset_index()
    out["pair_id"] = out["subset"] + "/" + out["item_id"].astype(str)
    out["qtype"] = out["subset"]
    keep = out["verdict"].isin(["A", "B"]) & out["human"].isin(["A", "B"])
    excluded = out.assign(tie_verdict=out["verdict"] == "tie", unparseable=out["verdict"] == "unparseable",
                          unlabelled=~out["human"].isin(["A", "B"])).groupby(GROUP)[
        ["tie_verdict", "unparseable", "unlabelled"]].sum().reset_index()
    return out[keep].reset_index(drop=True), excluded


def self_check(frame: pd.DataFrame, z: np.ndarray, cfg: PUConfig, settings: BootstrapSettings,
               folds: int = 5, pairs: Pairs | None = None) -> dict:
    """Gain of the adjustment on held-out verified pairs, with its CI and a plain verdict."""
    rng = np.random.default_rng(cfg.seed)
    human = frame["human"].to_numpy()
    raw_hits, adj_hits = {}, {}
    for _ in range(cfg.n_splits):
        labelled = np.zeros(len(frame), bool)
        for idx in frame.groupby("qtype").indices.values():
            k = max(1, int(round(cfg.p_ratio * len(idx))))
            labelled[rng.choice(idx, size=min(k, len(idx) - 1), replace=False)] = True
        verified = np.flatnonzero(labelled)
        for held in np.array_split(rng.permutation(verified), min(folds, len(verified))):
            fit = labelled.copy()
            fit[held] = False
            if not fit.any():
                continue
            adjusted = audit_split(frame, z, fit, cfg, pairs=pairs).set_index("pair_id")["adjusted"]
            for i in held:
                pid = frame["pair_id"].iat[i]
                raw_hits.setdefault(pid, []).append(frame["verdict"].iat[i] == human[i])
                adj_hits.setdefault(pid, []).append(adjusted[pid] == human[i])
    pids = sorted(raw_hits)
    gain = np.array([np.mean(adj_hits[p]) - np.mean(raw_hits[p]) for p in pids])
    if not len(gain):
        return {"check_n": 0, "check_gain": np.nan, "check_gain_ci_low": np.nan, "check_gain_ci_high": np.nan,
                "recommendation": "do not apply: no verified pair to check on"}
    est = mean_ci(gain, n_boot=settings.n_boot, confidence=settings.confidence, seed=settings.seed)
    if est.ci_low > 0:
        advice = "apply: the adjustment agrees better with held-out verified pairs"
    elif est.ci_high < 0:
        advice = "do not apply: the adjustment makes verdicts worse on held-out verified pairs"
    else:
        advice = "do not apply: no evidence that the adjustment helps on held-out verified pairs"
    return {"check_n": len(gain), "check_gain": est.estimate, "check_gain_ci_low": est.ci_low,
            "check_gain_ci_high": est.ci_high, "recommendation": advice}


def pu_audit_verdicts(table: pd.DataFrame, embed: Callable[[list[str]], np.ndarray], cfg: PUConfig,
                      settings: BootstrapSettings, folds: int = 5, min_items: int = 20,
                      steps: Steps | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(consistency per group and question type, with the self-check on the "all" rows;
    per-item results of every split). ``embed`` maps texts to vectors (one call);
    ``steps``: a step per group."""
    items, excluded = binary_items(table)
    texts = sorted(set(texts_for(items, "response_a")) | set(texts_for(items, "response_b")))
    vectors = dict(zip(texts, embed(texts))) if texts else {}
    tables, per_item = [], []
    for key, frame in each(steps, items.groupby(GROUP, sort=True)):
        frame = frame.reset_index(drop=True)
        if len(frame) < min_items or frame["human"].nunique() < 2:
            continue
        emb_a = np.stack([vectors[t] for t in texts_for(frame, "response_a")])
        emb_b = np.stack([vectors[t] for t in texts_for(frame, "response_b")])
        z = improvement_vectors(emb_a, emb_b, frame["verdict"])
        results = run_pu_audit(frame, z, cfg, pairs=(emb_a, emb_b))
        cons = consistency_table(results, n_boot=settings.n_boot, confidence=settings.confidence,
                                 seed=settings.seed)
        check = self_check(frame, z, cfg, settings, folds, pairs=(emb_a, emb_b))
        cons = cons.assign(**dict(zip(GROUP, key)))
        for col, value in check.items():
            cons[col] = np.where(cons["qtype"] == "all", value, None) if isinstance(value, str) else \
                np.where(cons["qtype"] == "all", value, np.nan)
        tables.append(cons)
        per_item.append(results.assign(**dict(zip(GROUP, key))))
    cons = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    if not cons.empty:
        cons = cons.merge(excluded, on=GROUP, how="left")
    return cons, (pd.concat(per_item, ignore_index=True) if per_item else pd.DataFrame())


def texts_for(frame: pd.DataFrame, col: str, question_chars: int = 400, answer_chars: int = 1500) -> list[str]:
    """F(x, o): the question's start and the response's end (where final answers sit)."""
    return [f"{str(q)[:question_chars]}\n\n{str(r)[-answer_chars:]}" for q, r in zip(frame["prompt"], frame[col])]
