"""Stage ``robustness``: PLS after removing style / format / wording, presentation-attack
flip rates, leakage mitigations (PLS and Error Bias), length- and style-controlled win rates,
and whether the judges, or a classifier, recognise the leakage. The audits are independent
of each other: one unit each, over the stage's worker processes."""

from __future__ import annotations

import pandas as pd

from judgeaudit.audits.length_control import controlled_summary
from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import robustness
from judgeaudit.report.robustness_report import plot_mitigations
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish, write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="robustness",
    params=(*MODELS, "leakage", "judge", "audit", "attacks", "recognition", "mitigation"),
    deps=("responses", "judgments", "models"),
    outs=("robustness",),
    reads=("responses", "judgments"),
    pool=True,
)

PARTS = {  # the robustness audits, independent of each other: one unit each
    "ablation": lambda p, r, j, lay: (robustness.ablation_pls(p, r, j, lay),),
    "attacks": lambda p, r, j, lay: (robustness.attack_flips(p, r, j, lay),),
    "mitigation": lambda p, r, j, lay: (robustness.mitigations(p, r, j, lay) if p.mitigation else None,),
    "length": lambda p, r, j, lay: robustness.length_controlled(p, r, j, lay),
    "recognition": lambda p, r, j, lay: robustness.recognition(p, r, lay) if p.recognition else (None, None),
}
# the longest parts first (as measured on the default: bench/stage_profile.py), so that two
# workers finish together
ORDER = ("mitigation", "attacks", "length", "recognition", "ablation")


def robustness_part(params: Params, part: str, responses: pd.DataFrame, judgments: pd.DataFrame,
                    layout: Layout) -> tuple[pd.DataFrame | None, ...]:
    """One of the PARTS."""
    return PARTS[part](params, responses, judgments, layout)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    responses, judgments = tables["responses"], tables["judgments"]
    futures = {part: pool.submit(robustness_part, params=params, part=part, responses=responses,
                                 judgments=judgments, layout=layout) for part in ORDER}
    got = {part: f.result() for part, f in futures.items()}
    (ablation,), (flips,), (mitigation,) = got["ablation"], got["attacks"], got["mitigation"]
    (controlled, moved), (recognised, classifier) = got["length"], got["recognition"]
    out = layout.root / "robustness"
    publish(ablation, "pls", "robustness", out / "ablation.parquet", layout)
    write(flips, out / "attack_flips.parquet")
    publish(controlled, "controlled_win_rates", "robustness", out / "controlled_win_rates.parquet", layout)
    summary = {"controlled_win_rates": controlled_summary(controlled[controlled.condition == "clean"]),
               "length_gameability": moved.to_dict("records"), "ablation": ablation.to_dict("records"),
               "attack_flips": flips[flips.category == "all"].to_dict("records")}
    if mitigation is not None:  # configured: PLS and Error Bias under each mitigation
        publish(mitigation, "pls", "robustness", out / "mitigation.parquet", layout)
        summary["mitigation"] = mitigation.to_dict("records")
        summary["plots"] = {"mitigation": plot_mitigations(mitigation, out / "mitigation.png").name}
    if recognised is not None:  # configured: whether the judges, or a classifier, can see the leakage
        write(recognised, out / "recognition.parquet")
        write(classifier, out / "generator_classifier.parquet")
        summary["recognition"] = {"judges": recognised.to_dict("records"),
                                  "classifier": classifier.to_dict("records")}
    write_json(summary, out / "summary.json")
    return {"conditions": sorted(set(ablation.condition))}
