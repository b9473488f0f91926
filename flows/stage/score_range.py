"""Stage ``score_range``: pointwise judges under several score ranges, contrastive decoding."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import publish, unconfigured
from judgeaudit.config import Params, load_params
from judgeaudit.pipeline import score_range
from judgeaudit.layout import Layout
from judgeaudit.pipeline.score_range import plot_grid, plot_histograms
from judgeaudit.report.score_range_report import write_score_range_report
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache
from tasks.io import write


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "score_range", *MODELS), output="out",
                                  artifacts="scorers"), **LOAD)
def score_range_audit(params: Params, models_dir: Path, out: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """``out``: the folder the scoring judges are fine-tuned into."""
    return score_range.score_range_stage(params, Layout(out.parent))


@flow(name="score-range")
def score_range_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Pointwise judges under several score ranges: greedy and expected scores vs
    contrastive decoding, correlation with reference scores, with CIs."""
    params, layout = load_params(params_path), Layout(Path(root))
    out = layout.score_range
    if unconfigured(params.score_range, out):
        return {}
    scores, corr, summary, grid = score_range_audit(params, layout.models, out)
    publish(scores, "score_range_scores", "score_range", out / "scores.parquet", layout)
    corr = publish(corr, "score_correlations", "score_range", out / "correlations.parquet", layout)
    write(grid, out / "grid.parquet")
    write_json(summary, out / "summary.json")
    plot_histograms(summary, out / "histograms.png")
    plot_grid(grid, out / "grid.png")
    write_score_range_report(corr, summary, out / "report.md")
    spearman = corr[(corr.kind == "spearman") & corr.method.isin(["greedy", "cd_expected"])]
    return {f"{r.judge}+{r.assistant}/{r.score_range}/{r.method}": round(r.estimate, 3)
            for r in spearman.itertuples()}
