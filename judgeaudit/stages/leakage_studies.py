"""Stage ``leakage_studies``: data mixing and model scale, SFT students of its own. PLS
against the share of a generator's data and against the student's size, with the fits' CIs.
Each student is trained and answers as one unit over the stage's worker processes; the
tier's judges then judge them all, as one more unit."""

from __future__ import annotations

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import leakage_studies as studies
from judgeaudit.report.leakage_studies_report import plot_leakage_studies
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="leakage_studies",
    params=(*MODELS, "generate", "train", "leakage", "judge", "audit", "leakage_studies"),
    deps=("prompts", "synthetic", "models"),
    outs=("leakage_studies",),
    reads=("prompts", "synthetic"),
    section="leakage_studies",
    pool=True,
    gpu=True,
)


def study_student(params: Params, layout: Layout, student: tuple[str, str, str], rows: pd.DataFrame,
                  prompts: pd.DataFrame, synthetic: pd.DataFrame) -> pd.DataFrame:
    """One study student (base, generator, share) trained on ``rows``, and its answers."""
    return studies.student_answers(params, layout, student, rows, prompts, synthetic)


def study_findings(params: Params, layout: Layout, responses: pd.DataFrame) -> dict:
    """Every study student's answers judged by the tier's judges: PLS per share and size, the fits."""
    return studies.findings(params, layout, responses)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    prompts, synthetic = tables["prompts"], tables["synthetic"]
    out = layout.root / "leakage_studies"
    out.mkdir(parents=True, exist_ok=True)
    students = studies.study_students(params, synthetic)
    specs = {base: params.spec_for(base, layout.models) for base, _, _ in students}
    # the largest students first: in turn, the scale study's largest base came last and
    # trained alone at the end
    longest_first = sorted(students, key=lambda s: -specs[s[0]].weight_bytes * len(students[s]))
    answers = {student: pool.submit(study_student, params=params, layout=layout, student=student,
                                    rows=students[student], prompts=prompts, synthetic=synthetic)
               for student in longest_first}
    responses = pd.concat([answers[student].result() for student in students], ignore_index=True)
    result = pool.submit(study_findings, params=params, layout=layout, responses=responses).result()
    for name in ("responses", "judgments", "mixing", "scale"):
        write(result[name], out / f"{name}.parquet")
    write_json(result["summary"], out / "summary.json")
    plot_leakage_studies(result["summary"], out / "leakage_studies.png")
    fits = {k: result["summary"][k]["fit"] for k in ("mixing", "scale")}
    return {k: {"slope": round(fit["slope"], 4), "r2": round(fit["r2"], 3)} for k, fit in fits.items()}
