"""The pipeline's stages, each declared once: its name (the DVC stage, the CLI choice and
the module ``flows/stage/<name>.py`` whose ``<name>_flow`` runs it), the tables it reads
and writes for later stages, and whether it wants an accelerator. dvc.yaml, the CLI, the
GPU-pool flow, the upstream checks and the workers' preloads come from here or are tested
against it.

Imports nothing heavy: the CLI reads it before any flow (or Prefect) is loaded."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgeaudit.layout import Layout


@dataclass(frozen=True)
class Stage:
    name: str
    reads: tuple[str, ...] = ()   # tables of earlier stages, validated before use
    writes: tuple[str, ...] = ()  # tables later stages read
    gpu: bool = False             # sent to the GPU work pool by full_audit_gpu_pool
    pool: bool = False            # its tasks run over worker processes (flows.runners.parallel)

    @property
    def module(self) -> str:
        return f"flows.stage.{self.name}"

    @property
    def flow_name(self) -> str:
        return f"{self.name}_flow"


STAGES: tuple[Stage, ...] = (
    Stage("bootstrap", writes=("prompts",), pool=True),
    Stage("generate", reads=("prompts",), writes=("synthetic",)),
    Stage("train", reads=("synthetic",), writes=("student_index",), gpu=True, pool=True),
    Stage("respond", reads=("prompts", "synthetic", "student_index"), writes=("responses",), gpu=True),
    Stage("judge", reads=("responses",), writes=("judgments",), gpu=True),
    Stage("audit", reads=("judgments", "prompts"), writes=("win_rates", "pls")),
    Stage("robustness", reads=("responses", "judgments"), pool=True),
    Stage("leakage_studies", reads=("prompts", "synthetic"), gpu=True, pool=True),
    Stage("boat", pool=True),
    Stage("pu", pool=True),
    Stage("prefix", pool=True),
    Stage("score_range", writes=("score_correlations",), gpu=True, pool=True),
    Stage("real_judges", writes=("judge_quality", "judge_comparison", "strategy_comparison", "error_correlation",
                                 "alt_test", "selective", "reliability")),
    Stage("leaderboard"),
    Stage("report", reads=("win_rates", "pls", "responses")),
)
NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)
GPU_STAGES: tuple[str, ...] = tuple(s.name for s in STAGES if s.gpu)
WRITTEN_BY: dict[str, str] = {table: s.name for s in STAGES for table in s.writes}


def stage(name: str) -> Stage:
    for s in STAGES:
        if s.name == name:
            return s
    raise KeyError(f"no stage {name!r}; the stages are {', '.join(NAMES)}")


def table_path(table: str, layout: Layout) -> Path:
    return {"prompts": layout.prompts, "synthetic": layout.synthetic, "student_index": layout.student_index,
            "responses": layout.responses, "judgments": layout.judgments,
            "win_rates": layout.metrics / "win_rates.parquet", "pls": layout.metrics / "pls.parquet"}[table]


def missing_message(path: Path, table: str, layout: Layout) -> str:
    by = WRITTEN_BY[table]
    return (f"{path}: no {table} table under {layout.root}; the {by!r} stage writes it: "
            f"run `dvc repro {by}` (or `judgeaudit run {by} --root {layout.root}`) first")


def missing_upstream(name: str, root: str | Path) -> str | None:
    """What stage ``name`` reads and is not there yet, with the stage to run first; None if all is there."""
    layout = Layout(Path(root))
    for table in stage(name).reads:
        if not table_path(table, layout).is_file():
            return missing_message(table_path(table, layout), table, layout)
    return None


def load_flow(name: str | None) -> Any:
    """The Prefect flow of stage ``name`` (the whole audit for None), imported on demand
    so that running one stage loads only its own code."""
    if name is None:
        return importlib.import_module("flows.stages").full_audit
    s = stage(name)
    return getattr(importlib.import_module(s.module), s.flow_name)
