"""The whole audit as one Prefect flow, and every stage's flow by name. Each stage lives in
its own module (flows/stage/<name>.py, declared in flows/registry.py); this module only
chains them, so it is part of no single stage's DVC deps."""

from __future__ import annotations

from prefect import flow

from flows.registry import GPU_STAGES, NAMES, load_flow
from flows.stage.audit import audit_flow
from flows.stage.boat import boat_flow
from flows.stage.bootstrap import bootstrap_flow
from flows.stage.generate import generate_flow
from flows.stage.judge import judge_flow
from flows.stage.leaderboard import leaderboard_flow
from flows.stage.leakage_studies import leakage_studies_flow
from flows.stage.prefix import prefix_flow
from flows.stage.pu import pu_flow
from flows.stage.real_judges import real_judges_flow
from flows.stage.report import report_flow
from flows.stage.respond import respond_flow
from flows.stage.robustness import robustness_flow
from flows.stage.score_range import score_range_flow
from flows.stage.train import train_flow

__all__ = ["GPU_STAGES", "STAGES", "full_audit", "full_audit_gpu_pool", "audit_flow", "boat_flow", "bootstrap_flow",
           "generate_flow", "judge_flow", "leaderboard_flow", "leakage_studies_flow", "prefix_flow", "pu_flow",
           "real_judges_flow", "report_flow", "respond_flow", "robustness_flow", "score_range_flow", "train_flow"]

STAGES = {name: load_flow(name) for name in NAMES}


@flow(name="full-audit")
def full_audit(params_path: str = "params.yaml", root: str = "data") -> str:
    """The whole DAG, stage after stage in the order of flows/registry.py (bootstrap ->
    generate -> train -> respond -> judge -> audit -> ... -> report)."""
    for stage in STAGES.values():
        result = stage(params_path=params_path, root=root)
    return str(result)


@flow(name="full-audit-gpu-pool")
def full_audit_gpu_pool(params_path: str = "params.yaml", root: str = "data",
                        gpu_deployment_suffix: str = "gpu", timeout_s: int = 6 * 3600) -> str:
    """The whole DAG, with the stages declared ``gpu`` (training, responding, judging,
    scoring) run as deployments on the GPU work pool (``<flow>/judgeaudit-<stage>-<suffix>``)
    and the rest in-process. Each GPU stage must finish before the next stage starts (they
    share ``root``)."""
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
