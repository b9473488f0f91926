"""One Prefect flow per pipeline stage; each reads the previous stage's tables from
disk, validates them (Great Expectations) and writes its own. DVC runs each of these
as a stage; ``full_audit`` chains them all as one flow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
from prefect import flow, get_run_logger

from judgeaudit.config import load_params
from judgeaudit.audits.length_control import controlled_summary
from judgeaudit.pipeline.audit import unique_roster
from judgeaudit.pipeline.judge import comparisons
from judgeaudit.pipeline.layout import Layout
from judgeaudit.pipeline.students import student_id
from judgeaudit.report.leakage_report import write_report
from judgeaudit.tables import read_table, write_json
from flows.runners import task_runner
from tasks import units

# one row order for the judgments table, however the judging was sharded
JUDGMENT_ORDER = ["judge", "method", "student_base", "generator_a", "generator_b", "prompt_id", "order"]


# the stage that writes each table a later stage reads, and the tables each stage reads
WRITTEN_BY = {"prompts": "bootstrap", "synthetic": "generate", "student_index": "train", "responses": "respond",
              "judgments": "judge", "win_rates": "audit", "pls": "audit", "score_correlations": "score_range",
              "judge_quality": "real_judges"}
READS = {"generate": ("prompts",), "train": ("synthetic",), "respond": ("prompts", "synthetic", "student_index"),
         "judge": ("responses",), "audit": ("judgments", "prompts"), "leakage_studies": ("prompts", "synthetic"), "robustness": ("responses", "judgments"),
         "report": ("win_rates", "pls", "responses")}


def table_path(table: str, layout: Layout) -> Path:
    return {"prompts": layout.prompts, "synthetic": layout.synthetic, "student_index": layout.student_index,
            "responses": layout.responses, "judgments": layout.judgments,
            "win_rates": layout.metrics / "win_rates.parquet", "pls": layout.metrics / "pls.parquet"}[table]


def _missing(path: Path, table: str, layout: Layout) -> str:
    stage = WRITTEN_BY[table]
    return (f"{path}: no {table} table under {layout.root}; the {stage!r} stage writes it: "
            f"run `dvc repro {stage}` (or `judgeaudit run {stage} --root {layout.root}`) first")


def missing_upstream(stage: str, root: str | Path) -> str | None:
    """What ``stage`` reads and is not there yet, with the stage to run first; None if all is there."""
    layout = Layout(Path(root))
    for table in READS.get(stage, ()):
        if not table_path(table, layout).is_file():
            return _missing(table_path(table, layout), table, layout)
    return None


def _upstream(path: Path, table: str, layout: Layout, required: tuple[str, ...] = ()) -> pd.DataFrame:
    """An upstream table; absent, an error that names the stage to run first."""
    if not path.is_file():
        raise FileNotFoundError(_missing(path, table, layout))
    return read_table(path, required)


def _read(path: Path, table: str, layout: Layout) -> pd.DataFrame:
    return units.validate(_upstream(path, table, layout), table, str(path), layout.quarantine)


def _unconfigured(section: object, out: Path) -> bool:
    """An audit left out of params.yaml writes an empty summary, so DVC's outputs stay whole."""
    out.mkdir(parents=True, exist_ok=True)
    if section is None:
        write_json({}, out / "summary.json")
        return True
    return False


def _publish(frames: pd.DataFrame | list[pd.DataFrame], table: str, stage: str, path: Path,
             layout: Layout) -> pd.DataFrame:
    """Validate the stage's table, then write it: an invalid table never lands in data/."""
    frame = frames if isinstance(frames, pd.DataFrame) else pd.concat(frames, ignore_index=True)
    frame = units.validate(frame, table, stage, layout.quarantine)
    units.write(frame, path)
    return frame


@flow(name="bootstrap")
def bootstrap_flow(params_path: str = "params.yaml", root: str = "data") -> list[dict]:
    """Prompt table, tokenizer and the embedded models (real checkpoints are left as they are)."""
    params, layout = load_params(params_path), Layout(Path(root))
    prompts = units.validate(units.make_prompts(params), "prompts", "bootstrap", layout.quarantine)
    built = [n for n, m in params.models.items() if m.build is not None]
    summaries = []
    if built:
        tok = Path(units.build_tokenizer(params, layout.tokenizer))
        pending = list(built)
        while pending:  # parents before the models inherited from them
            ready = [n for n in pending if params.models[n].build.init_from not in pending]
            for name in ready:
                parent = params.models[name].build.init_from
                summaries.append(units.build_model(
                    params, name, layout.models / name, layout.models / parent if parent else tok))
            pending = [n for n in pending if n not in ready]
    units.write(prompts, layout.prompts)
    write_json(summaries, layout.models / "_summary.json")
    return summaries


@flow(name="generate")
def generate_flow(params_path: str = "params.yaml", root: str = "data") -> int:
    """Each generator answers the training prompts."""
    params, layout = load_params(params_path), Layout(Path(root))
    prompts = _read(layout.prompts, "prompts", layout)
    frames = [units.generate_answers(params, g, prompts, Path(params.spec_for(g, layout.models).path),
                                     str(layout.root)) for g in params.leakage.generators]
    return len(_publish(frames, "synthetic", "generate", layout.synthetic, layout))


@flow(name="train")
def train_flow(params_path: str = "params.yaml", root: str = "data") -> int:
    """Students: each base x each generator's data x each method (SFT, DPO, ICL)."""
    params, layout = load_params(params_path), Layout(Path(root))
    synthetic = _read(layout.synthetic, "synthetic", layout)
    layout.students.mkdir(parents=True, exist_ok=True)
    layout.student_index.unlink(missing_ok=True)  # no index until every student is done
    rows = []
    for base in params.leakage.students:
        base_dir = Path(params.spec_for(base, layout.models).path)
        for gen in params.leakage.generators:
            for method in params.leakage.methods:
                out = layout.students / student_id(base, gen, method)
                rows.append(units.train_student(params, base, gen, method, synthetic, base_dir, out))
    keep = {Path(layout.from_stored(r["path"])).name for r in rows} | {layout.student_index.name}
    for stale in layout.students.iterdir():  # students of an earlier config
        if stale.name not in keep and stale.is_dir():
            shutil.rmtree(stale)
    units.write(pd.DataFrame(rows), layout.student_index)
    return len(rows)


@flow(name="respond")
def respond_flow(params_path: str = "params.yaml", root: str = "data") -> int:
    """Students answer the held-out eval prompts."""
    params, layout = load_params(params_path), Layout(Path(root))
    prompts = _read(layout.prompts, "prompts", layout)
    synthetic = _read(layout.synthetic, "synthetic", layout)
    index = _upstream(layout.student_index, "student_index", layout, ("student_id", "path", "method"))
    frames = [units.respond(params, s, prompts, synthetic, Path(layout.from_stored(s["path"])), str(layout.root))
              for s in index.to_dict("records")]
    return len(_publish(frames, "responses", "respond", layout.responses, layout))


@flow(name="judge-shards")
def judge_shards(params_path: str, root: str, pairs: pd.DataFrame) -> list[pd.DataFrame]:
    """Every judge on every shard of ``pairs``, submitted to the flow's task runner."""
    params, layout = load_params(params_path), Layout(Path(root))
    shards = np.array_split(np.arange(len(pairs)), min(params.scale.shards_per_judge, len(pairs)))
    futures = [units.judge_pairs.submit(params, j, pairs.iloc[idx].reset_index(drop=True),
                                        Path(params.spec_for(j["judge"], layout.models).path), root)
               for j in unique_roster(params) for idx in shards]
    return [f.result() for f in futures]


@flow(name="judge")
def judge_flow(params_path: str = "params.yaml", root: str = "data") -> int:
    """Every judge, every pair of students, both presentation orders; in-process, or
    sharded over a Dask cluster when params.yaml's ``scale`` says so."""
    params, layout = load_params(params_path), Layout(Path(root))
    responses = _read(layout.responses, "responses", layout)
    pairs = comparisons(responses, params.leakage.generators)
    frames = judge_shards.with_options(task_runner=task_runner(params.scale))(params_path, str(layout.root), pairs)
    judgments = pd.concat(frames, ignore_index=True).sort_values(JUDGMENT_ORDER, kind="stable", ignore_index=True)
    return len(_publish(judgments, "judgments", "judge", layout.judgments, layout))


@flow(name="audit")
def audit_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Win rates and PLS, with bootstrap CIs."""
    params, layout = load_params(params_path), Layout(Path(root))
    judgments = _read(layout.judgments, "judgments", layout)
    prompts = _read(layout.prompts, "prompts", layout)
    wr, pls, summary, by_task = units.leakage_audit(params, judgments, prompts)
    _publish(wr, "win_rates", "audit", layout.metrics / "win_rates.parquet", layout)
    _publish(pls, "pls", "audit", layout.metrics / "pls.parquet", layout)
    units.write(by_task, layout.metrics / "pls_by_task.parquet")
    write_json(summary, layout.metrics / "summary.json")
    get_run_logger().info("PLS by tier: %s", summary["pls_by_tier"])
    return summary


@flow(name="robustness")
def robustness_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """PLS after removing style / format / wording, and presentation-attack flip rates."""
    params, layout = load_params(params_path), Layout(Path(root))
    responses = _read(layout.responses, "responses", layout)
    judgments = _read(layout.judgments, "judgments", layout)
    ablation, flips, calibration, controlled, moved, recognised, classifier = units.robustness_audit(
        params, responses, judgments, layout.models, str(layout.root))
    out = layout.root / "robustness"
    _publish(ablation, "pls", "robustness", out / "ablation.parquet", layout)
    _publish(calibration, "pls", "robustness", out / "calibration.parquet", layout)
    units.write(flips, out / "attack_flips.parquet")
    _publish(controlled, "controlled_win_rates", "robustness", out / "controlled_win_rates.parquet", layout)
    summary = {"controlled_win_rates": controlled_summary(controlled[controlled.condition == "clean"]),
               "length_gameability": moved.to_dict("records"), "ablation": ablation.to_dict("records"),
               "calibration": calibration.to_dict("records"),
               "attack_flips": flips[flips.category == "all"].to_dict("records")}
    if recognised is not None:  # configured: whether the judges, or a classifier, can see the leakage
        units.write(recognised, out / "recognition.parquet")
        units.write(classifier, out / "generator_classifier.parquet")
        summary["recognition"] = {"judges": recognised.to_dict("records"),
                                  "classifier": classifier.to_dict("records")}
    write_json(summary, out / "summary.json")
    return {"conditions": sorted(set(ablation.condition))}


@flow(name="leakage-studies")
def leakage_studies_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Data mixing and model scale: SFT students of its own, PLS against the share of a
    generator's data and against the student's size, with the fits' CIs."""
    from judgeaudit.report.leakage_report import plot_leakage_studies

    params, layout = load_params(params_path), Layout(Path(root))
    out = layout.root / "leakage_studies"
    if _unconfigured(params.leakage_studies, out):
        return {}
    prompts = _read(layout.prompts, "prompts", layout)
    synthetic = _read(layout.synthetic, "synthetic", layout)
    result = units.leakage_studies(params, prompts, synthetic, layout.models, str(layout.root))
    for name in ("responses", "judgments", "mixing", "scale"):
        units.write(result[name], out / f"{name}.parquet")
    write_json(result["summary"], out / "summary.json")
    plot_leakage_studies(result["summary"], out / "leakage_studies.png")
    return {k: {"slope": round(result["summary"][k]["fit"]["slope"], 4), "r2": round(result["summary"][k]["fit"]["r2"], 3)}
            for k in ("mixing", "scale")}


@flow(name="boat")
def boat_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Vanilla vs BOAT accuracy, clean and after training on the test items."""
    params, layout = load_params(params_path), Layout(Path(root))
    if _unconfigured(params.boat, layout.boat):
        return {}
    model_dir = Path(params.spec_for(params.boat.model, layout.models).path)
    results, summary = units.boat_audit(params, model_dir, layout.boat / "contaminated")
    _publish(results, "boat_results", "boat", layout.boat / "results.parquet", layout)
    write_json(summary, layout.boat / "summary.json")
    return {name: {k: round(summary[name][k]["accuracy"], 3) for k in ("vanilla", "boat")}
            for name in ("clean", "contaminated")}


@flow(name="pu")
def pu_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """PU audit of the embedded judges on known-quality pairs, clean and under attack."""
    from judgeaudit.pipeline.pu_default import attack_flip_rates
    from judgeaudit.report.pu_report import default_plots

    params, layout = load_params(params_path), Layout(Path(root))
    if _unconfigured(params.pu, layout.pu):
        return {}
    table, verdicts, items, sens, encoders = units.pu_audit(params, layout.models, str(layout.root))
    table = _publish(table, "pu_consistency", "pu", layout.pu / "consistency.parquet", layout)
    for frame, name in ((verdicts, "verdicts"), (items, "items"), (sens, "sensitivity"), (encoders, "encoders")):
        units.write(frame, layout.pu / f"{name}.parquet")
    a = params.audit
    flips = attack_flip_rates(verdicts, n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
    overall = table[table.qtype == "all"]
    plots = default_plots(table, items, sens, params.pu.eta, layout.pu)
    summary = {"consistency": overall.to_dict("records"), "attack_flip_rates": flips.to_dict("records"),
               "sensitivity": sens.to_dict("records"), "encoders": encoders.to_dict("records"),
               "plots": {k: v.name for k, v in plots.items()}}
    write_json(summary, layout.pu / "summary.json")
    return {"judges": int(overall.judge.nunique()), "conditions": sorted(set(overall.condition))}


@flow(name="prefix")
def prefix_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Reward-model prefix bias per preference source and base: zero-shot, baseline, and
    per-group augmentation audited on its group (aug) and the others (aug-gen)."""
    params, layout = load_params(params_path), Layout(Path(root))
    if _unconfigured(params.prefix, layout.prefix):
        return {}
    base_dir = Path(params.spec_for(params.prefix.base, layout.models).path)
    matrices, summary = units.prefix_audit(params, base_dir, layout.prefix)
    _publish(matrices, "prefix_matrices", "prefix", layout.prefix / "matrices.parquet", layout)
    write_json(summary, layout.prefix / "summary.json")
    return {f"{r['source']}/{r['base']}/{r['variant']}/{r['trained_group']}/{r['group']}": round(r["alpha_bar"], 3)
            for r in summary["rows"]}


@flow(name="score-range")
def score_range_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Pointwise judges under several score ranges: greedy and expected scores vs
    contrastive decoding, correlation with reference scores, with CIs."""
    from judgeaudit.pipeline.score_range import plot_grid, plot_histograms
    from judgeaudit.report.score_range_report import write_score_range_report

    params, layout = load_params(params_path), Layout(Path(root))
    out = layout.score_range
    if _unconfigured(params.score_range, out):
        return {}
    scores, corr, summary, grid = units.score_range_audit(params, layout.models, out)
    _publish(scores, "score_range_scores", "score_range", out / "scores.parquet", layout)
    corr = _publish(corr, "score_correlations", "score_range", out / "correlations.parquet", layout)
    units.write(grid, out / "grid.parquet")
    write_json(summary, out / "summary.json")
    plot_histograms(summary, out / "histograms.png")
    plot_grid(grid, out / "grid.png")
    write_score_range_report(corr, summary, out / "report.md")
    spearman = corr[(corr.kind == "spearman") & corr.method.isin(["greedy", "cd_expected"])]
    return {f"{r.judge}+{r.assistant}/{r.score_range}/{r.method}": round(r.estimate, 3)
            for r in spearman.itertuples()}


@flow(name="real-judges")
def real_judges_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Recorded verdicts of real judges on public benchmarks: the report card, the
    benchmarks' published figures recomputed, and the PU audit with its self-check."""
    from judgeaudit.pipeline.real_judges import summary, write_audit

    params, layout = load_params(params_path), Layout(Path(root))
    out = layout.root / "real_judges"
    if _unconfigured(params.real_judges, out):
        return {}
    result = units.real_judges_audit(params, str(layout.root))
    write_audit(result, out, layout.quarantine)
    info = summary(result)
    for note in result.notes:
        get_run_logger().warning(note)
    return {"rows": info["rows"], "published_figures": info["published_figures"]}


@flow(name="leaderboard")
def leaderboard_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """A real leaderboard's win rates from its judge's annotations: raw, length- and
    style-controlled, Bradley-Terry CIs, separability, gamed entries."""
    params, layout = load_params(params_path), Layout(Path(root))
    out = layout.root / "leaderboard"
    if _unconfigured(params.leaderboard, out):
        return {}
    summary = units.leaderboard(params, out)
    for note in summary.get("notes", []):
        get_run_logger().warning(note)
    return {"flagged": summary.get("flagged", []), "separability_bt": summary.get("separability_bt")}


@flow(name="report")
def report_flow(params_path: str = "params.yaml", root: str = "data") -> str:
    """HTML + JSON report, and the same as Prefect artifacts."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    from judgeaudit.report.leakage_report import summary_table

    layout = Layout(Path(root))
    wr = _read(layout.metrics / "win_rates.parquet", "win_rates", layout)
    pls = _read(layout.metrics / "pls.parquet", "pls", layout)
    summary = json.loads((layout.metrics / "summary.json").read_text())
    responses = _read(layout.responses, "responses", layout)
    boat_file = layout.boat / "summary.json"
    boat = json.loads(boat_file.read_text()) if boat_file.exists() else None
    pu_file = layout.pu / "summary.json"
    pu = {**json.loads(pu_file.read_text()), "dir": str(layout.pu)} if pu_file.exists() else None
    matrices_file = layout.prefix / "matrices.parquet"
    prefix = ({"summary": json.loads((layout.prefix / "summary.json").read_text()),
               "matrices": pd.read_parquet(matrices_file)} if matrices_file.exists() else None)
    studies_file = layout.root / "leakage_studies" / "summary.json"
    studies = json.loads(studies_file.read_text()) if studies_file.exists() else None
    robust_file = layout.root / "robustness" / "summary.json"
    robust = json.loads(robust_file.read_text()) if robust_file.exists() else None
    corr_file = layout.score_range / "correlations.parquet"
    score_range = ({"summary": json.loads((layout.score_range / "summary.json").read_text()),
                    "correlations": _read(corr_file, "score_correlations", layout),
                    "dir": str(layout.score_range)} if corr_file.exists() else None)
    judges_dir = layout.root / "real_judges"
    info = json.loads((judges_dir / "summary.json").read_text()) if (judges_dir / "summary.json").exists() else {}
    judges = None
    if info:  # configured: its leaderboard, or the notes saying why there is none
        rows = info["rows"] > 0
        judges = {"card": _read(judges_dir / "judge_quality.parquet", "judge_quality", layout) if rows
                  else pd.DataFrame(), "reproduction": pd.read_parquet(judges_dir / "reproduction.parquet"),
                  "pu": pd.read_parquet(judges_dir / "pu_consistency.parquet"),
                  "headline": pd.DataFrame(info["headline"]), "notes": info["notes"]}
    lb_dir = layout.root / "leaderboard"
    lb_info = json.loads((lb_dir / "summary.json").read_text()) if (lb_dir / "summary.json").exists() else {}
    leaderboard = ({"summary": lb_info, "dir": lb_dir, "board": pd.read_parquet(lb_dir / "win_rates.parquet")
                    if (lb_dir / "win_rates.parquet").exists() else None} if lb_info else None)
    paths = write_report(wr, pls, summary, responses, layout.report, boat=boat, pu=pu, prefix=prefix,
                         robustness=robust, score_range=score_range, judges=judges, leaderboard=leaderboard,
                         studies=studies)
    table = summary_table(pls)
    create_markdown_artifact(key="preference-leakage",
                             markdown="# Preference leakage (PLS, 95% CI, n prompts)\n\n"
                             + table.to_markdown(index=False) + f"\n\nReport: {paths['html'].resolve()}")
    create_table_artifact(key="pls-pairs", table=pls[pls.scope == "pair"].round(4).to_dict("records"))
    return str(paths["html"])


STAGES = {"bootstrap": bootstrap_flow, "generate": generate_flow, "train": train_flow,
          "respond": respond_flow, "judge": judge_flow, "audit": audit_flow,
          "robustness": robustness_flow, "leakage_studies": leakage_studies_flow, "boat": boat_flow,
          "pu": pu_flow, "prefix": prefix_flow, "score_range": score_range_flow,
          "real_judges": real_judges_flow, "leaderboard": leaderboard_flow, "report": report_flow}


@flow(name="full-audit")
def full_audit(params_path: str = "params.yaml", root: str = "data") -> str:
    """The whole DAG: bootstrap -> generate -> train -> respond -> judge -> audit -> robustness -> boat -> pu -> prefix
    -> score_range -> report."""
    for stage in STAGES.values():
        result = stage(params_path=params_path, root=root)
    return str(result)


# Stages that want an accelerator: with the GPU pool deployments of prefect.yaml, the
# full audit sends these to the "judgeaudit-gpu" work pool and runs the rest here.
GPU_STAGES = ("train", "respond", "judge", "leakage_studies", "score_range")


@flow(name="full-audit-gpu-pool")
def full_audit_gpu_pool(params_path: str = "params.yaml", root: str = "data",
                        gpu_deployment_suffix: str = "gpu", timeout_s: int = 6 * 3600) -> str:
    """The whole DAG, with training, responding, judging and scoring run as deployments
    on the GPU work pool (``<flow>/judgeaudit-<stage>-<suffix>``) and the rest in-process.
    Each GPU stage must finish before the next stage starts (they share ``root``)."""
    from prefect.deployments import run_deployment

    result = None
    for stage, stage_flow in STAGES.items():
        if stage in GPU_STAGES:
            name = f"{stage_flow.name}/judgeaudit-{stage.replace('_', '-')}-{gpu_deployment_suffix}"
            run = run_deployment(name=name, parameters={"params_path": params_path, "root": root},
                                 timeout=timeout_s, as_subflow=True)
            if run.state is None or not run.state.is_completed():
                raise RuntimeError(f"GPU stage {stage} ({name}) ended {run.state.name if run.state else 'unknown'}")
            result = run.state.name
        else:
            result = stage_flow(params_path=params_path, root=root)
    return str(result)
