"""Stage ``leakage_studies``: data mixing and model scale, SFT students of its own. PLS
against the share of a generator's data and against the student's size, with the fits' CIs.
Each student is trained and answers as one unit over the stage's worker processes; the
tier's judges then judge them all, as one more unit.

- Data mixing: each generator's student trained on a mixture, per training prompt the
  generator's answer with probability ``share`` (the same prompts for every generator),
  else a neutral answer: the prompt's reference answer in a house style no generator writes,
  as the paper's neutral data is related to no generator (``neutral: every_style``: a
  style drawn from all of them, the generators' own among them, evenly). PLS against the share, a least-squares line
  with the slope's CI and R^2 (the study: even 10% leaks; PLS grows linearly).
- Model scale: student bases of several sizes, each trained on the generators' full data:
  PLS against the number of parameters (the study: smaller students leak more).

The students are trained in a temporary folder and dropped after answering: only their
answers, the judgments and the figures are kept."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit import resolve
from judgeaudit.audits.leakage import pair_scores
from judgeaudit.audits.leakage_trends import cell_arrays, trend
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.config import Params
from judgeaudit.generation.corpus import make_items
from judgeaudit.generation.styles import STYLES, render
from judgeaudit.judging.student_pairs import comparisons, judge_pairs
from judgeaudit.layout import Layout
from judgeaudit.report.leakage_paper import setting_of, studies_paper_rows
from judgeaudit.report.leakage_studies_report import plot_leakage_studies
from judgeaudit.report.paper_rows import write_paper_rows
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json
from judgeaudit.training.students import respond

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


def neutral_styles(params: Params) -> tuple[str, ...]:
    """The house styles neutral answers are written in (``leakage_studies.neutral``)."""
    if params.leakage_studies.neutral == "every_style":
        return STYLES
    own = {params.models[g].build.corpus_style for g in params.leakage.generators
           if g in params.models and params.models[g].build is not None}
    free = tuple(s for s in STYLES if s not in own)
    if not free:
        raise ValueError(f"leakage_studies.neutral: unrelated needs a house style no generator writes; the "
                         f"generators write {sorted(own)} of {list(STYLES)}")
    return free


def neutral_answers(params: Params, synthetic: pd.DataFrame) -> pd.Series:
    """prompt_id -> the train prompt's reference answer in a random neutral house style (the
    embedded corpus' train items, regenerated from the seed; they must be the prompts the
    generators answered)."""
    c = params.corpus
    styles = neutral_styles(params)
    rng = random.Random(params.seed + 31)
    items = {it.prompt_id: it for it in make_items(c.n_train_prompts, params.seed + 1, "t", c.prompt_categories)}
    asked = synthetic.drop_duplicates("prompt_id").set_index("prompt_id")["prompt"]
    stray = [pid for pid, prompt in asked.items() if pid not in items or items[pid].prompt != prompt]
    if stray:
        raise ValueError(f"mixing needs the embedded corpus' train prompts; {len(stray)} the generators answered "
                         f"are not among them (a prompts_file, or stale data?), e.g. {stray[:3]}")
    return pd.Series({pid: render(it, rng.choice(styles), rng) for pid, it in items.items()})


def mixture(synthetic: pd.DataFrame, generator: str, neutral: pd.Series, share: float, seed: int) -> pd.DataFrame:
    """The generator's (prompt, answer) rows with a seeded 1 - ``share`` of the answers
    replaced by the neutral ones (the same prompts for every generator at one share)."""
    own = synthetic[synthetic.generator == generator].sort_values("prompt_id").reset_index(drop=True)
    keep = np.random.default_rng(seed).random(len(own)) < share
    return own.assign(answer=np.where(keep, own.answer, own.prompt_id.map(neutral)), from_generator=keep)


def n_parameters(model_dir: str) -> int:
    from safetensors import safe_open

    total = 0
    for f in Path(model_dir).glob("*.safetensors"):
        with safe_open(str(f), "pt") as handle:
            total += sum(int(np.prod(handle.get_slice(k).get_shape())) for k in handle.keys())
    return total


Student = tuple[str, str, str]  # (base, generator, tag): one study student


def _tag(share: float) -> str:
    return f"mix{share:g}"


def study_students(params: Params, synthetic: pd.DataFrame) -> dict[Student, pd.DataFrame]:
    """Every student the two studies train, with its training rows: the mixing student at
    each share, and each scale base at ``scale_share`` (the mixing student at that share
    counted once)."""
    section, seed = params.leakage_studies, params.seed
    neutral = neutral_answers(params, synthetic)
    rows_for: dict[Student, pd.DataFrame] = {}
    for share in section.shares:
        for gen in params.leakage.generators:
            rows_for[(section.mixing_student, gen, _tag(share))] = mixture(
                synthetic, gen, neutral, share, seed + int(round(share * 1000)))
    at = section.scale_share
    for base in section.scale_students:
        for gen in params.leakage.generators:
            rows_for.setdefault((base, gen, _tag(at)),
                                mixture(synthetic, gen, neutral, at, seed + int(round(at * 1000))))
    return rows_for


def student_answers(params: Params, layout: Layout, student: Student, rows: pd.DataFrame,
                    prompts: pd.DataFrame, synthetic: pd.DataFrame) -> pd.DataFrame:
    """One study student trained by SFT on its ``rows`` in a temporary folder, its answers to
    the eval prompts; the student is dropped after answering."""
    from judgeaudit.training.trainers import sft  # torch and trl: only where a student is trained

    base, gen, tag = student
    spec = params.spec_for(base, layout.models)
    template = spec.chat_template if spec.chat_template != "auto" else params.embedded.template
    sid = f"{base}--{gen}--{tag}"
    data = [{"prompt": template.format(prompt=p), "completion": " " + a}
            for p, a in rows[["prompt", "answer"]].itertuples(index=False)]
    with tempfile.TemporaryDirectory(prefix="leakage-studies-") as tmp:
        out = Path(tmp) / sid
        sft(spec.path, spec.path, data, out, params.leakage_studies.sft or params.train.sft,
            params.seed + sum(map(ord, sid)), spec.max_length)
        record = {"student_id": sid, "student_base": base, "generator": gen, "method": tag, "path": str(out)}
        return respond(record, spec, prompts, synthetic, layout, params.generate.max_new_tokens, params.seed)


def findings(params: Params, layout: Layout, responses: pd.DataFrame) -> dict[str, pd.DataFrame | dict]:
    """The study students' answers (``student_answers``'s, all of them) judged by the tier's
    judges: PLS per share and per size, the fits with their CIs."""
    section = params.leakage_studies
    a = params.audit
    boot = BootstrapSettings(a.n_boot, a.confidence, params.seed)
    roster = [j for j in resolve.roster(params, layout.models) if j.tier == section.tier]
    roles = [j.role for j in roster]
    pairs = comparisons(responses, params.leakage.generators)
    judgments = pd.concat([judge_pairs(j, pairs, params.judge, params.seed) for j in roster],
                          ignore_index=True)
    sizes = {b: n_parameters(params.spec_for(b, layout.models).path) for b in section.scale_students}
    at, scale_tag = section.scale_share, _tag(section.scale_share)
    scores = pair_scores(judgments)
    mix = scores[(scores.student_base == section.mixing_student)]
    mixing_arrays = {s: cell_arrays(mix[mix.method == _tag(s)], roles)[0] for s in section.shares}
    mixing, mixing_fit = trend(mixing_arrays, boot)
    lowest = mixing.iloc[0]
    mixing_fit["lowest_share"] = float(lowest.condition)
    mixing_fit["lowest_share_leaks"] = bool(lowest.ci_low > 0)
    at_share = scores[scores.method == scale_tag]
    scale_arrays = {float(sizes[b]): cell_arrays(at_share[at_share.student_base == b], roles)[0]
                    for b in section.scale_students}
    scale, scale_fit = trend(scale_arrays, boot)
    by_size = {float(n): b for b, n in sizes.items()}
    scale = scale.rename(columns={"condition": "n_parameters"})
    scale.insert(0, "student_base", scale.n_parameters.map(by_size))
    mixing = mixing.rename(columns={"condition": "share"})
    scale_fit["slope_per_million"] = scale_fit["slope"] * 1e6
    scale_fit["share"] = at
    summary = {"tier": section.tier, "judges": [j.name for j in roster], "method": "sft",
               "mixing_student": section.mixing_student, "neutral": section.neutral,
               "neutral_styles": list(neutral_styles(params)),
               "mixing": {"points": mixing.to_dict("records"), "fit": mixing_fit},
               "scale": {"points": scale.to_dict("records"), "fit": scale_fit}}
    return {"responses": responses, "judgments": judgments, "mixing": mixing, "scale": scale, "summary": summary}


def study_student(params: Params, layout: Layout, student: tuple[str, str, str], rows: pd.DataFrame,
                  prompts: pd.DataFrame, synthetic: pd.DataFrame) -> pd.DataFrame:
    """One study student (base, generator, share) trained on ``rows``, and its answers."""
    return student_answers(params, layout, student, rows, prompts, synthetic)


def study_findings(params: Params, layout: Layout, responses: pd.DataFrame) -> dict:
    """Every study student's answers judged by the tier's judges: PLS per share and size, the fits."""
    return findings(params, layout, responses)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    prompts, synthetic = tables["prompts"], tables["synthetic"]
    out = layout.root / "leakage_studies"
    out.mkdir(parents=True, exist_ok=True)
    students = study_students(params, synthetic)
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
    ls = params.leakage_studies
    studied = dict.fromkeys([ls.mixing_student, *ls.scale_students])  # in order, once each
    write_paper_rows(studies_paper_rows(result["summary"], setting_of(params, studied)), out)
    plot_leakage_studies(result["summary"], out / "leakage_studies.png")
    fits = {k: result["summary"][k]["fit"] for k in ("mixing", "scale")}
    # r2 is None where PLS is flat over the conditions: no line to judge
    return {k: {"slope": round(fit["slope"], 4), "r2": None if fit["r2"] is None else round(fit["r2"], 3)}
            for k, fit in fits.items()}
