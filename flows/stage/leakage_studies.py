"""Stage ``leakage_studies``: data mixing and model scale, SFT students of its own."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import read, unconfigured
from judgeaudit.config import Params, load_params
from judgeaudit.layout import Layout
from judgeaudit.pipeline.leakage_studies import studies_stage
from judgeaudit.report.leakage_report import plot_leakage_studies
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache
from tasks.io import write


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "train", "generate", "judge", "leakage",
                                   "leakage_studies", *MODELS)), **LOAD)
def leakage_studies(params: Params, prompts: pd.DataFrame, synthetic: pd.DataFrame, models_dir: Path,
                    root: str) -> dict:
    """``models_dir``: the bases and judges, whose content keys the cache."""
    return studies_stage(params, prompts, synthetic, Layout(Path(root)))


@flow(name="leakage-studies")
def leakage_studies_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Data mixing and model scale: SFT students of its own, PLS against the share of a
    generator's data and against the student's size, with the fits' CIs."""
    params, layout = load_params(params_path), Layout(Path(root))
    out = layout.root / "leakage_studies"
    if unconfigured(params.leakage_studies, out):
        return {}
    prompts = read(layout.prompts, "prompts", layout)
    synthetic = read(layout.synthetic, "synthetic", layout)
    result = leakage_studies(params, prompts, synthetic, layout.models, str(layout.root))
    for name in ("responses", "judgments", "mixing", "scale"):
        write(result[name], out / f"{name}.parquet")
    write_json(result["summary"], out / "summary.json")
    plot_leakage_studies(result["summary"], out / "leakage_studies.png")
    return {k: {"slope": round(result["summary"][k]["fit"]["slope"], 4), "r2": round(result["summary"][k]["fit"]["r2"], 3)}
            for k in ("mixing", "scale")}
