"""Stage ``robustness``: PLS after removing style / format / wording, presentation-attack
flip rates, leakage mitigations, length- and style-controlled win rates, recognition."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import publish, read
from judgeaudit.audits.length_control import controlled_summary
from judgeaudit.config import Params, load_params
from judgeaudit.pipeline import robustness
from judgeaudit.layout import Layout
from judgeaudit.report.leakage_report import plot_mitigations
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache
from tasks.io import write


@task(cache_policy=artifact_cache(("seed", "audit", "judge", "leakage", "attacks", "recognition", "mitigation",
                                   *MODELS)), **LOAD)
def robustness_audit(params: Params, responses: pd.DataFrame, judgments: pd.DataFrame, models_dir: Path,
                     root: str) -> tuple[pd.DataFrame, ...]:
    """``models_dir``: the judges, whose content keys the cache."""
    layout = Layout(Path(root))
    return (robustness.ablation_pls(params, responses, judgments, layout),
            robustness.attack_flips(params, responses, judgments, layout),
            robustness.mitigations(params, responses, judgments, layout) if params.mitigation else None,
            *robustness.length_controlled(params, responses, judgments, layout),
            *(robustness.recognition(params, responses, layout) if params.recognition else (None, None)))


@flow(name="robustness")
def robustness_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """PLS after removing style / format / wording, presentation-attack flip rates, leakage
    mitigations (PLS and Error Bias), length-controlled win rates and recognition."""
    params, layout = load_params(params_path), Layout(Path(root))
    responses = read(layout.responses, "responses", layout)
    judgments = read(layout.judgments, "judgments", layout)
    ablation, flips, mitigation, controlled, moved, recognised, classifier = robustness_audit(
        params, responses, judgments, layout.models, str(layout.root))
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
