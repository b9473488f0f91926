"""The scheduled drift check of the user's judge: a flow of its own, so that no stage's code
deps include the live judge's (judgeaudit/stages/live_judge.py)."""

from __future__ import annotations

from prefect import flow, get_run_logger


@flow(name="judge-drift")
def judge_drift(params_path: str = "params.yaml", root: str = "data") -> dict:
    """The ``live_judge`` section's judge re-judges its pinned pairs with fresh calls and every
    figure is compared with its previous run (judgeaudit/stages/live_judge.py); the drifted
    figures show as an artifact."""
    from pathlib import Path

    from prefect.artifacts import create_table_artifact

    from judgeaudit.audits.drift import label
    from judgeaudit.config import load_params
    from judgeaudit.stages.live_judge import judge_drift as drift_run

    params = load_params(params_path)
    if params.live_judge is None:
        raise ValueError(f"{params_path}: no live_judge section: name the judge and its pinned pairs there")
    out, table = drift_run(params, Path(root))
    rows = [] if table is None else table.to_dict("records")
    create_table_artifact(key="judge-drift", table=rows or [{"note": "first run: nothing to compare with"}])
    drifted = [label(r) for r in rows if r["drifted"]]
    get_run_logger().info("%s: %s", out, f"drifted: {', '.join(drifted)}" if drifted else "no figure drifted")
    return {"folder": str(out), "drifted": drifted}
