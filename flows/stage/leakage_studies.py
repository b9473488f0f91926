"""Stage ``leakage_studies``: data mixing and model scale, SFT students of its own. Each
student is trained and answers on the stage's worker processes; the tier's judges then
judge them all."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params, read, unconfigured
from flows.runners import parallel
from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import leakage_studies as studies
from judgeaudit.report.leakage_studies_report import plot_leakage_studies
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache
from tasks.io import write

# what each task reads: a student, its training and answering settings; the findings, the
# judges and the statistics (a change to a judge's settings retrains no student)
STUDENT = (*MODELS, "train", "generate", "leakage_studies")
FINDINGS = (*MODELS, "audit", "judge", "leakage", "leakage_studies")


@task(cache_policy=artifact_cache(STUDENT), task_run_name="study-{student[0]}--{student[1]}--{student[2]}",
      **LOAD)
def study_student(params: Params, student: tuple[str, str, str], rows: pd.DataFrame, prompts: pd.DataFrame,
                  synthetic: pd.DataFrame, base_dir: Path, root: str) -> pd.DataFrame:
    """``base_dir``: the student base's weights, whose content keys the cache."""
    return studies.student_answers(params, Layout(Path(root)), student, rows, prompts, synthetic)


@task(cache_policy=artifact_cache(FINDINGS), **LOAD)
def study_findings(params: Params, responses: pd.DataFrame, models_dir: Path, root: str) -> dict:
    """``models_dir``: the bases and judges, whose content keys the cache."""
    return studies.findings(params, Layout(Path(root)), responses)


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
    common = dict(params=params, root=str(layout.root))
    students = studies.study_students(params, synthetic)
    specs = {base: params.spec_for(base, layout.models) for base, _, _ in students}
    # the largest students first: in turn, the scale study's largest base came last and
    # trained alone at the end
    longest_first = sorted(students, key=lambda s: -specs[s[0]].weight_bytes * len(students[s]))
    with parallel(params.scale) as runner:
        answers = {student: runner.submit(study_student, dict(
            student=student, rows=students[student], prompts=prompts, synthetic=synthetic,
            base_dir=Path(specs[student[0]].path), **common)) for student in longest_first}
        responses = pd.concat([answers[student].result() for student in students], ignore_index=True)
        result = runner.submit(study_findings,
                               dict(responses=responses, models_dir=layout.models, **common)).result()
    for name in ("responses", "judgments", "mixing", "scale"):
        write(result[name], out / f"{name}.parquet")
    write_json(result["summary"], out / "summary.json")
    plot_leakage_studies(result["summary"], out / "leakage_studies.png")
    fits = {k: result["summary"][k]["fit"] for k in ("mixing", "scale")}
    return {k: {"slope": round(fit["slope"], 4), "r2": round(fit["r2"], 3)} for k, fit in fits.items()}
