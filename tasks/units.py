"""Prefect tasks: thin, cached, retried wrappers around the library's units of work."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd
from prefect import task

from judgeaudit.config import Params
from judgeaudit.pipeline import (audit, boat, bootstrap, generate, judge, prefix, pu_default, real_judges,
                                 robustness, score_range, students)
from judgeaudit.pipeline.layout import Layout
from judgeaudit.schemas.validate import validate_table
from judgeaudit.tables import write_table
from tasks.cache import artifact_cache

MODELS = ("seed", "corpus", "embedded", "models", "model_defaults")
_LOAD = dict(retries=2, retry_delay_seconds=5, persist_result=True,
             cache_expiration=timedelta(days=30))


@task(cache_policy=artifact_cache(("seed", "corpus")), persist_result=True)
def make_prompts(params: Params) -> pd.DataFrame:
    return bootstrap.make_prompts(params)


@task(cache_policy=artifact_cache(MODELS, output="out"), **_LOAD)
def build_tokenizer(params: Params, out: Path) -> str:
    return str(bootstrap.build_tokenizer(params, Layout(out.parent.parent)))


@task(cache_policy=artifact_cache(MODELS, output="out"), task_run_name="build-{name}", **_LOAD)
def build_model(params: Params, name: str, out: Path, depends_on: Path) -> dict:
    """``depends_on``: the tokenizer, or the parent model, whose content keys the cache."""
    return bootstrap.build_model(params, name, Layout(out.parent.parent))


@task(cache_policy=artifact_cache((*MODELS, "generate")), task_run_name="generate-{generator}", **_LOAD)
def generate_answers(params: Params, generator: str, prompts: pd.DataFrame, model_dir: Path,
                     root: str) -> pd.DataFrame:
    return generate.generate_answers(params, generator, prompts, Layout(Path(root)))


@task(cache_policy=artifact_cache((*MODELS, "train"), output="out"), task_run_name="train-{out.name}",
      **_LOAD)
def train_student(params: Params, base: str, generator: str, method: str, synthetic: pd.DataFrame,
                  base_dir: Path, out: Path) -> dict:
    return students.train_student(params, base, generator, method, synthetic, Layout(out.parent.parent))


@task(cache_policy=artifact_cache((*MODELS, "train", "generate")), task_run_name="respond-{student[student_id]}",
      **_LOAD)
def respond(params: Params, student: dict, prompts: pd.DataFrame, synthetic: pd.DataFrame,
            student_dir: Path, root: str) -> pd.DataFrame:
    return students.respond(params, student, prompts, synthetic, Layout(Path(root)))


@task(cache_policy=artifact_cache((*MODELS, "judge")), task_run_name="judge-{judge_entry[judge]}",
      **_LOAD)
def judge_pairs(params: Params, judge_entry: dict, pairs: pd.DataFrame, judge_dir: Path,
                root: str) -> pd.DataFrame:
    return judge.judge_pairs(params, judge_entry, pairs, Layout(Path(root)))


@task(cache_policy=artifact_cache(("seed", "audit", "leakage")), persist_result=True)
def leakage_audit(params: Params, judgments: pd.DataFrame, prompts: pd.DataFrame
                  ) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    return audit.leakage_audit(params, judgments, prompts)


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "train", "generate", "judge", "leakage",
                                   "leakage_studies", *MODELS)), **_LOAD)
def leakage_studies(params: Params, prompts: pd.DataFrame, synthetic: pd.DataFrame, models_dir: Path,
                    root: str) -> dict:
    """``models_dir``: the bases and judges, whose content keys the cache."""
    from judgeaudit.pipeline.leakage_studies import studies_stage

    return studies_stage(params, prompts, synthetic, Layout(Path(root)))


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "boat", *MODELS), output="out"), **_LOAD)
def boat_audit(params: Params, model_dir: Path, out: Path) -> tuple[pd.DataFrame, dict]:
    """``out``: where the contaminated model is written."""
    return boat.boat_stage(params, Layout(out.parent.parent))


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "pu", "judge", "leakage", "attacks", *MODELS)),
      **_LOAD)
def pu_audit(params: Params, models_dir: Path, root: str) -> tuple[pd.DataFrame, ...]:
    return pu_default.pu_stage(params, Layout(Path(root)))


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "prefix", *MODELS), output="out", artifacts="rm-*"),
      **_LOAD)
def prefix_audit(params: Params, base_dir: Path, out: Path) -> tuple[pd.DataFrame, dict]:
    """``out``: the folder the reward models are written to."""
    return prefix.prefix_stage(params, Layout(out.parent))


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "score_range", *MODELS), output="out",
                                  artifacts="scorers"), **_LOAD)
def score_range_audit(params: Params, models_dir: Path, out: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """``out``: the folder the scoring judges are fine-tuned into."""
    return score_range.score_range_stage(params, Layout(out.parent))


@task(cache_policy=artifact_cache(("seed", "audit", "judge", "leakage", "attacks", "recognition", *MODELS)), **_LOAD)
def robustness_audit(params: Params, responses: pd.DataFrame, judgments: pd.DataFrame, models_dir: Path,
                     root: str) -> tuple[pd.DataFrame, ...]:
    layout = Layout(Path(root))
    return (robustness.ablation_pls(params, responses, judgments, layout),
            robustness.attack_flips(params, responses, judgments, layout),
            robustness.calibrated_pls(params, judgments),
            *robustness.length_controlled(params, responses, judgments, layout),
            *(robustness.recognition(params, responses, layout) if params.recognition else (None, None)))


@task(retries=1, retry_delay_seconds=5)
def real_judges_audit(params: Params, root: str) -> real_judges.VerdictAudit:
    """Not cached by Prefect: its inputs are files outside the project (DVC decides reruns)."""
    return real_judges.real_judges_stage(params, Path(root))


@task(retries=1, retry_delay_seconds=5)
def leaderboard(params: Params, out: Path) -> dict:
    """Not cached by Prefect: its input is a folder outside the project (DVC decides reruns)."""
    from judgeaudit.pipeline.leaderboard import leaderboard_stage

    return leaderboard_stage(params, out)


@task(task_run_name="validate-{table}")
def validate(frame: pd.DataFrame, table: str, source: str, quarantine: Path) -> pd.DataFrame:
    return validate_table(frame, table, source, quarantine_dir=quarantine)


@task(retries=2, retry_delay_seconds=2, task_run_name="write-{path.name}")
def write(frame: pd.DataFrame, path: Path) -> str:
    return str(write_table(frame, path))
