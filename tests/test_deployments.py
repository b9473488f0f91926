"""prefect.yaml: every deployment's entrypoint is a real flow, and the re-audit is
on a valid cron schedule."""

from __future__ import annotations

import importlib

import yaml
from cronsim import CronSim
from datetime import datetime

from tests.conftest import ROOT


def test_prefect_yaml_entrypoints_and_schedule():
    from prefect import Flow

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    names = set()
    for dep in spec["deployments"]:
        module, func = dep["entrypoint"].split(":")
        flow = getattr(importlib.import_module(module.removesuffix(".py").replace("/", ".")), func)
        assert isinstance(flow, Flow), dep["name"]
        names.add(dep["name"])
        for schedule in dep.get("schedules", []):
            next(CronSim(schedule["cron"], datetime(2026, 1, 1)))  # raises on a bad cron
    assert {"judgeaudit-full-audit", "judgeaudit-reaudit-nightly"} <= names
    nightly = next(d for d in spec["deployments"] if d["name"] == "judgeaudit-reaudit-nightly")
    assert nightly["schedules"][0]["cron"] == "0 3 * * *"
    from judgeaudit.runner.registry import names

    for dep in spec["deployments"]:  # a stage deployment names a stage that exists
        if dep["entrypoint"].endswith(":stage_flow"):
            assert dep["parameters"]["name"] in names(), dep["name"]


def test_real_checkpoint_spec_loads_unchanged(tiny_lm, tiny_params_file):
    """A params entry naming a local checkpoint (as a hub id would be) loads through
    the same spec -> backend path as the built models."""
    from judgeaudit.config import load_params
    from judgeaudit.models import load_model

    params = yaml.safe_load(tiny_params_file.read_text())
    params["models"]["gen-f"] = {"spec": {"backend": "transformers", "path": tiny_lm.spec.path,
                                          "chat_template": "Q: {prompt}\nA:", "dtype": "float32"}}
    tiny_params_file.write_text(yaml.safe_dump(params))
    loaded = load_params(tiny_params_file)
    spec = loaded.spec_for("gen-f", ROOT / "data/models")
    assert spec.path == tiny_lm.spec.path
    model = load_model(spec, name="gen-f")
    assert model.generate([model.format_prompt("What is 2 plus 2?")], max_new_tokens=5) == \
        tiny_lm.generate([tiny_lm.format_prompt("What is 2 plus 2?")], max_new_tokens=5)


def test_gpu_pool_deployments_cover_the_gpu_stages():
    """prefect.yaml sends training, responding, judging and scoring to the GPU work pool,
    under the names the GPU-pool audit flow runs them by; params-gpu.yaml is valid."""
    from flows.stage_flow import stage_flow
    from judgeaudit.config import load_params
    from judgeaudit.runner.registry import stages

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    gpu = {d["name"]: d for d in spec["deployments"] if d["work_pool"]["name"] == "judgeaudit-gpu"}
    for stage in (s.name for s in stages() if s.gpu):
        dep = gpu[f"judgeaudit-{stage.replace('_', '-')}-gpu"]
        module, func = dep["entrypoint"].split(":")
        flow = getattr(importlib.import_module(module.removesuffix(".py").replace("/", ".")), func)
        assert flow is stage_flow and dep["parameters"]["name"] == stage
        assert dep["parameters"]["params_path"] == "params-gpu.yaml"
    full = next(d for d in spec["deployments"] if d["name"] == "judgeaudit-full-audit-gpu")
    assert full["entrypoint"].endswith(":full_audit_gpu_pool")
    params = load_params(ROOT / "params-gpu.yaml")
    assert {params.models[j.main].spec.backend for j in params.score_range.judges} == {"vllm"}
    assert params.scale.runner == "dask"
