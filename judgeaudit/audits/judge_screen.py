"""The judge's screen: what a team asks of its own judge first, from its verdicts on real
pairs (both orders) and under the bias battery: accuracy, agreement between the two
presentation orders, each bias with its CI and whether it was found, the content-blind
baselines and the subsets where one of them does as well as the judge."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from judgeaudit.audits.baselines import baseline_accuracy, flagged_subsets
from judgeaudit.audits.bias_battery import battery_rates
from judgeaudit.audits.stats import BootstrapSettings


@dataclass
class JudgeScreen:
    """The tables of one judge's audit; ``summary`` holds its headline figures."""

    battery: pd.DataFrame
    baselines: pd.DataFrame
    flagged: pd.DataFrame
    summary: dict = field(default_factory=dict)


def _figure(row: pd.Series | None) -> dict | None:
    if row is None:
        return None
    value = {k: (None if pd.isna(row[k]) else round(float(row[k]), 6)) for k in ("estimate", "ci_low", "ci_high")}
    return {**value, "n": int(row["n"])}


def _versus_control(row: pd.Series) -> dict:
    """The bias's difference from the neutral-edit control (``vs_control``: estimate, CI,
    n) and ``beyond_control``; both None where it has none (position, the control itself)."""
    if "beyond_control" not in row or row["beyond_control"] is None or pd.isna(row["control_n"]):
        return {"vs_control": None, "beyond_control": None}
    figure = {"estimate": row["control_difference"], "ci_low": row["control_ci_low"],
              "ci_high": row["control_ci_high"], "n": row["control_n"]}
    return {"vs_control": _figure(pd.Series(figure)), "beyond_control": bool(row["beyond_control"])}


def _overall(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows covering every pair: "all"/"all" with several sources, else the one source's "all"."""
    whole = frame[(frame["source"] == "all") & (frame["subset"] == "all")]
    return whole if len(whole) else frame[frame["subset"] == "all"]


def judge_screen(live: pd.DataFrame, pairs: pd.DataFrame, bootstrap: BootstrapSettings) -> JudgeScreen:
    """The screen of the judge whose clean verdicts are ``live`` and whose battery pairs are
    ``pairs`` (``judging.battery.BatteryRun``)."""
    battery = battery_rates(live, pairs, bootstrap)
    baselines = baseline_accuracy(live, bootstrap)
    flagged = flagged_subsets(baselines)
    parsed = live["verdict"].isin(["1", "2", "tie"])
    summary: dict = {
        "judge": str(live["judge"].iloc[0]) if len(live) else None,
        "strategy": str(live["strategy"].iloc[0]) if len(live) else None,
        "pairs": int(live[["source", "subset", "item_id"]].drop_duplicates().shape[0]),
        "verdicts": int(len(live)),
        "unparseable": int((~parsed).sum()),
        "sources": sorted(live["source"].unique().tolist()),
    }
    whole = _overall(baselines)
    acc = whole[whole["method"] == "judge"]
    summary["accuracy"] = _figure(acc.iloc[0]) if len(acc) else None
    summary["baselines"] = {r.method: _figure(pd.Series(r._asdict())) | {"as_accurate_as_judge": r.as_accurate_as_judge}
                            for r in whole[whole["method"] != "judge"].itertuples()}
    rates = _overall(battery)
    position = rates[(rates["bias"] == "position") & (rates["metric"] == "flip_rate")]
    if len(position):  # agreement between the orders: one minus the share the order changes
        p = position.iloc[0]
        summary["order_agreement"] = {"estimate": round(1 - float(p.estimate), 6),
                                      "ci_low": round(1 - float(p.ci_high), 6),
                                      "ci_high": round(1 - float(p.ci_low), 6), "n": int(p.n)}
    summary["biases"] = {
        bias: {metric: _figure(r.iloc[0]) | {"found": bool(r.iloc[0]["found"])} | _versus_control(r.iloc[0])
               for metric, r in part.groupby("metric", sort=False)}
        for bias, part in rates.groupby("bias", sort=False)}
    summary["found"] = sorted(rates.loc[rates["found"].eq(True), "bias"].unique().tolist())
    summary["beyond_control"] = sorted(rates.loc[rates["found"].eq(True) & rates["beyond_control"].eq(True),
                                                 "bias"].unique().tolist())
    summary["flagged_subsets"] = flagged[["source", "subset", "baselines"]].to_dict("records")
    return JudgeScreen(battery, baselines, flagged, summary)


def forest_plot(battery: pd.DataFrame, path, metric: str = "flip_rate") -> None:
    """Each bias's ``metric`` over every pair, with its CI: found biases in red (orange where
    not beyond the neutral-edit control)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _overall(battery)
    rows = rows[rows["metric"] == metric].sort_values("estimate")
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * max(len(rows), 3) + 1.2))
    y = np.arange(len(rows))
    # found: red; found but no more than the neutral-edit control moves it: orange
    colours = ["tab:grey" if not f else "tab:orange" if b is False else "tab:red"
               for f, b in zip(rows["found"].eq(True), rows.get("beyond_control", [None] * len(rows)))]
    for k, (r, colour) in enumerate(zip(rows.itertuples(), colours)):
        ax.plot([r.ci_low, r.ci_high], [k, k], color=colour, linewidth=2)
        ax.plot([r.estimate], [k], "o", color=colour)
    ax.set_yticks(y, [f"{b} (n={n})" for b, n in zip(rows["bias"], rows["n"])])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(f"{metric.replace('_', ' ')} (95% CI); red: CI excludes 0, orange: not beyond the control")
    ax.set_title("Bias battery")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
