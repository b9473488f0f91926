"""Stage ``score_range``: pointwise judges under several score ranges, contrastive decoding."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params, publish, unconfigured
from flows.runners import parallel
from judgeaudit.config import Params, ScoreJudge
from judgeaudit.pipeline import score_range
from judgeaudit.layout import Layout
from judgeaudit.models import ModelSpec
from judgeaudit.pipeline.score_range import plot_grid, plot_histograms
from judgeaudit.report.score_range_report import write_score_range_report
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache
from tasks.io import write


SECTIONS = ("seed", "corpus", "audit", "score_range", *MODELS)


@task(cache_policy=artifact_cache(SECTIONS, output="out"), task_run_name="scorer-{out.name}", **LOAD)
def score_range_scorer(params: Params, pair: ScoreJudge, role: str, base_dir: Path, out: Path,
                       root: str) -> ModelSpec:
    """``base_dir``: the model's weights, whose content keys the cache; ``out``: where the
    scorer is fine-tuned (as ``scorer_spec`` places it)."""
    return score_range.scorer_spec(params, pair, role, Layout(Path(root)))


@task(cache_policy=artifact_cache(SECTIONS), task_run_name="score-range-{pair}", **LOAD)
def score_range_audit(params: Params, pair: int, models_dir: Path, scorers: Path, trained: dict[str, ModelSpec],
                      root: str) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """The ``pair``-th pair's part; ``scorers``: the fine-tuned scorers (``trained``), whose
    content keys the cache."""
    return score_range.score_range_stage(params, Layout(Path(root)), trained=trained, only=[pair])


@flow(name="score-range")
def score_range_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Pointwise judges under several score ranges: greedy and expected scores vs
    contrastive decoding, correlation with reference scores, with CIs."""
    params, layout = load_params(params_path), Layout(Path(root))
    out = layout.score_range
    if unconfigured(params.score_range, out):
        return {}
    with parallel(params.scale) as runner:  # the scorers fine-tuned side by side, then each pair's audit
        futures = {}
        for pair, role in score_range.scorers_to_train(params):
            name = getattr(pair, role)
            futures[name] = runner.submit(score_range_scorer, dict(
                params=params, pair=pair, role=role, base_dir=Path(params.spec_for(name, layout.models).path),
                out=score_range.scorer_dir(layout, name), root=str(layout.root)))
        trained = {name: f.result() for name, f in futures.items()}
        parts = [runner.submit(score_range_audit, dict(
            params=params, pair=k, models_dir=layout.models, scorers=out / "scorers", trained=trained,
            root=str(layout.root))) for k in range(len(score_range.score_range_pairs(params)))]
        scores, corr, summary, grid = score_range.merge_parts([f.result() for f in parts])
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
