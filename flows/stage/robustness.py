"""Stage ``robustness``: PLS after removing style / format / wording, presentation-attack
flip rates, leakage mitigations, length- and style-controlled win rates, recognition."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params, publish, read
from flows.runners import parallel
from judgeaudit.audits.length_control import controlled_summary
from judgeaudit.config import Params
from judgeaudit.pipeline import robustness
from judgeaudit.layout import Layout
from judgeaudit.report.robustness_report import plot_mitigations
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache
from tasks.io import write


PARTS = {  # the robustness audits, independent of each other: one task each
    "ablation": lambda p, r, j, lay: (robustness.ablation_pls(p, r, j, lay),),
    "attacks": lambda p, r, j, lay: (robustness.attack_flips(p, r, j, lay),),
    "mitigation": lambda p, r, j, lay: (robustness.mitigations(p, r, j, lay) if p.mitigation else None,),
    "length": lambda p, r, j, lay: robustness.length_controlled(p, r, j, lay),
    "recognition": lambda p, r, j, lay: robustness.recognition(p, r, lay) if p.recognition else (None, None),
}


@task(cache_policy=artifact_cache(("seed", "audit", "judge", "leakage", "attacks", "recognition", "mitigation",
                                   *MODELS)), task_run_name="robustness-{part}", **LOAD)
def robustness_audit(params: Params, part: str, responses: pd.DataFrame, judgments: pd.DataFrame,
                     models_dir: Path, root: str) -> tuple[pd.DataFrame | None, ...]:
    """One of the PARTS; ``models_dir``: the judges, whose content keys the cache."""
    return PARTS[part](params, responses, judgments, Layout(Path(root)))


@flow(name="robustness")
def robustness_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """PLS after removing style / format / wording, presentation-attack flip rates, leakage
    mitigations (PLS and Error Bias), length-controlled win rates and recognition."""
    params, layout = load_params(params_path), Layout(Path(root))
    responses = read(layout.responses, "responses", layout)
    judgments = read(layout.judgments, "judgments", layout)
    # the longest parts first (38, 33, 27, 12 and 11 s of a thread each on the default, an AMD
    # EPYC of family 26 scoring in bfloat16), so that two workers finish together
    order = ["mitigation", "attacks", "length", "recognition", "ablation"]
    with parallel(params.scale) as runner:
        futures = {part: runner.submit(robustness_audit, dict(
            params=params, part=part, responses=responses, judgments=judgments, models_dir=layout.models,
            root=str(layout.root))) for part in order}
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
