"""Stage ``leaderboard``: a real leaderboard's win rates from its judge's annotations."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger, task

from flows.common import load_params, unconfigured
from flows.runners import stage_bar
from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline.leaderboard import leaderboard_stage


# params the flow reads beside its tasks' cache keys (read in its uncached task);
# with those: dvc.yaml's params (`judgeaudit deps --write`)
PARAMS = ("seed", "audit.confidence", "leaderboard")


@task(retries=1, retry_delay_seconds=5)
def leaderboard(params: Params, out: Path) -> dict:
    """Not cached by Prefect: its input is a folder outside the project (DVC decides reruns)."""
    with stage_bar(unit="step") as bar:
        return leaderboard_stage(params, out, steps=bar)


@flow(name="leaderboard")
def leaderboard_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """A real leaderboard's win rates from its judge's annotations: raw, length- and
    style-controlled, Bradley-Terry CIs, separability, gamed entries."""
    params, layout = load_params(params_path), Layout(Path(root))
    out = layout.root / "leaderboard"
    if unconfigured(params.leaderboard, out):
        return {}
    summary = leaderboard(params, out)
    for note in summary.get("notes", []):
        get_run_logger().warning(note)
    return {"flagged": summary.get("flagged", []), "separability_bt": summary.get("separability_bt")}
