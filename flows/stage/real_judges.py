"""Stage ``real_judges``: recorded verdicts of real judges on public benchmarks."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger, task

from flows.common import load_params, unconfigured
from flows.runners import stage_bar
from judgeaudit.config import Params
from judgeaudit.pipeline import real_judges
from judgeaudit.layout import Layout


# params the flow reads beside its tasks' cache keys (read in its uncached task);
# with those: dvc.yaml's params (`judgeaudit deps --write`)
PARAMS = ("seed", "audit.confidence", "real_judges")


@task(retries=1, retry_delay_seconds=5)
def real_judges_audit(params: Params, root: str) -> real_judges.VerdictAudit:
    """Not cached by Prefect: its inputs are files outside the project (DVC decides reruns)."""
    with stage_bar(unit="step") as bar:
        return real_judges.real_judges_stage(params, Path(root), steps=bar)


@flow(name="real-judges")
def real_judges_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Recorded verdicts of real judges on public benchmarks: the report card, the
    benchmarks' published figures recomputed, and the PU audit with its self-check."""
    params, layout = load_params(params_path), Layout(Path(root))
    out = layout.root / "real_judges"
    if unconfigured(params.real_judges, out):
        return {}
    result = real_judges_audit(params, str(layout.root))
    real_judges.write_audit(result, out, layout.quarantine)
    info = real_judges.summary(result)
    for note in result.notes:
        get_run_logger().warning(note)
    return {"rows": info["rows"], "published_figures": info["published_figures"]}
