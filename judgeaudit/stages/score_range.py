"""Stage ``score_range``: pointwise judges under several score ranges: greedy and expected
scores vs contrastive decoding, correlation with reference scores, with CIs. The scorers
are fine-tuned side by side first, each one unit over the stage's worker processes; then
each (judge, assistant) pair's audit is one unit, handed the fine-tuned scorers."""

from __future__ import annotations

import pandas as pd

from judgeaudit.config import Params, ScoreJudge
from judgeaudit.layout import Layout
from judgeaudit.models import ModelSpec
from judgeaudit.pipeline import score_range
from judgeaudit.pipeline.score_range import plot_grid, plot_histograms
from judgeaudit.report.score_range_report import write_score_range_report
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish, write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="score_range",
    params=(*MODELS, "audit", "score_range"),
    deps=("models",),
    outs=("score_range",),
    section="score_range",
    pool=True,
    gpu=True,
    plots=(("score_range/histograms.png", {}),),
)


def score_range_scorer(params: Params, layout: Layout, pair: ScoreJudge, role: str) -> ModelSpec:
    """The spec of ``pair``'s main or assistant, fine-tuned to score (``scorer_dir``) when the pair asks."""
    return score_range.scorer_spec(params, pair, role, layout)


def score_range_audit(params: Params, layout: Layout, pair: int,
                      trained: dict[str, ModelSpec]) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """The ``pair``-th pair's part, with the scorers already fine-tuned (``trained``, by name)."""
    return score_range.score_range_stage(params, layout, trained=trained, only=[pair])


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    out = layout.score_range
    out.mkdir(parents=True, exist_ok=True)
    # the scorers fine-tuned side by side, then each pair's audit
    futures = {}
    for pair, role in score_range.scorers_to_train(params):
        futures[getattr(pair, role)] = pool.submit(score_range_scorer, params=params, layout=layout,
                                                   pair=pair, role=role)
    trained = {name: f.result() for name, f in futures.items()}
    parts = [pool.submit(score_range_audit, params=params, layout=layout, pair=k, trained=trained)
             for k in range(len(score_range.score_range_pairs(params)))]
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
