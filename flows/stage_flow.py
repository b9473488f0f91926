"""The Prefect flows: every stage is one flow, ``stage`` (its run named for the stage), over
the library's runner (judgeaudit/runner/execute.py); the whole audit chains them; the
scheduled re-audit asks DVC, the one cache that decides what reruns, to reproduce what is
out of date; the GPU audit sends the stages declared ``gpu`` to the GPU work pool."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from judgeaudit.runner import registry
from judgeaudit.runner.execute import execute


@flow(name="stage", flow_run_name="{name}")
def stage_flow(name: str, params_path: str = "params.yaml", root: str = "data") -> Any:
    """One stage of the pipeline (judgeaudit/stages/<name>.py) on the data under ``root``;
    what it returns as ``artifacts`` (markdown, or a table's rows) shows in the Prefect UI."""
    result = execute(name, params_path, root)
    if isinstance(result, dict) and "artifacts" in result:
        from prefect.artifacts import create_markdown_artifact, create_table_artifact

        for key, content in result.pop("artifacts").items():
            if isinstance(content, str):
                create_markdown_artifact(key=key, markdown=content)
            else:
                create_table_artifact(key=key, table=content)
    return result


@flow(name="full-audit")
def full_audit(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Every stage, each after the stages it reads from (bootstrap -> ... -> report)."""
    return {s.name: stage_flow(s.name, params_path, root) for s in registry.stages()}


@flow(name="reproduce")
def reproduce(targets: list[str] | None = None) -> list[str]:
    """`dvc repro` in the deployment's working directory: DVC reruns the stages whose code,
    params or inputs changed since dvc.lock, and nothing else (a re-audit with nothing
    changed runs nothing). Each stage's command reports to this Prefect server as its own
    stage flow run."""
    from dvc.repo import Repo

    with Repo(".") as repo:
        ran = [stage.addressing for stage in repo.reproduce(targets=targets)]
    get_run_logger().info("reproduced: %s", ", ".join(ran) or "nothing (dvc.lock is up to date)")
    return ran


@flow(name="full-audit-gpu-pool")
def full_audit_gpu_pool(params_path: str = "params.yaml", root: str = "data",
                        gpu_deployment_suffix: str = "gpu", timeout_s: int = 6 * 3600) -> dict:
    """The whole audit, with the stages declared ``gpu`` run as the deployment
    ``stage/judgeaudit-<stage>-<suffix>`` on the GPU work pool, each finished before the
    next stage starts (they share ``root``), and the rest in this flow."""
    from prefect.deployments import run_deployment

    results = {}
    for s in registry.stages():
        if not s.gpu:
            results[s.name] = stage_flow(s.name, params_path, root)
            continue
        name = f"stage/judgeaudit-{s.name.replace('_', '-')}-{gpu_deployment_suffix}"
        run = run_deployment(name=name, parameters={"name": s.name, "params_path": params_path, "root": root},
                             timeout=timeout_s, as_subflow=True)
        if run.state is None or not run.state.is_completed():
            raise RuntimeError(f"GPU stage {s.name} ({name}) ended {run.state.name if run.state else 'unknown'}")
        results[s.name] = run.state.name
    return results
