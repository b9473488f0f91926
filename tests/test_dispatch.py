"""params.yaml's ``cpu_dispatch``: the math libraries' SIMD paths, set before they load, named
in the task cache's runtime and the report, and declared as a param of every DVC stage."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from judgeaudit import dispatch, precision

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in dispatch.VARIABLES}
    return subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True,
                          env={**clean, "PYTHONPATH": str(ROOT), **env}, timeout=300)


def test_environment_sets_a_settings_variables_and_default_leaves_the_users():
    users = {"MKL_CBWR": "AVX512", "PATH": "/bin"}
    assert dispatch.environment("default", users) == users
    compatible = dispatch.environment("compatible", users)
    assert compatible["MKL_CBWR"] == "COMPATIBLE" and compatible["ATEN_CPU_CAPABILITY"] == "avx2"
    assert compatible["PATH"] == "/bin"
    assert set(compatible) - {"PATH"} == set(dispatch.SETTINGS["compatible"])
    with pytest.raises(ValueError, match="'sse'.*default, avx2, compatible"):
        dispatch.environment("sse", users)


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64",
                    reason="the settings name x86 SIMD levels (torch's ATEN_CPU_CAPABILITY, MKL's branches)")
def test_flows_run_applies_the_params_files_setting_before_torch_loads(tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text()) | {"cpu_dispatch": "compatible"}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    probe = ("import json, os, sys\n"
             "from flows.run import apply_dispatch\n"
             f"assert apply_dispatch({str(path)!r}) is None\n"
             "import torch, numpy\n"
             "from judgeaudit.report.machine import machine\n"
             "print(json.dumps({'simd': torch.backends.cpu.get_cpu_capability(),\n"
             "    'numpy_x86_v4': numpy._core._multiarray_umath.__cpu_features__.get('X86_V4'),\n"
             "    'mkl_cbwr': os.environ.get('MKL_CBWR'), 'report': machine()['cpu_dispatch']}))")
    done = _python(probe)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["simd"] in ("AVX2", "DEFAULT")  # capped: never AVX512, on any x86 CPU
    assert not seen["numpy_x86_v4"]
    assert seen["mkl_cbwr"] == "COMPATIBLE"
    assert seen["report"] == dispatch.SETTINGS["compatible"]


def test_a_setting_applied_after_numpy_loads_is_refused():
    done = _python("import numpy\nfrom judgeaudit import dispatch\ndispatch.apply('compatible')")
    assert done.returncode != 0
    assert "before numpy" in done.stderr
    assert _python("import numpy\nfrom judgeaudit import dispatch\ndispatch.apply('default')").returncode == 0


@pytest.mark.parametrize("key,bad", [("cpu_dispatch", "sse"), ("precision", "fp8")])
def test_a_bad_setting_stops_the_stage_naming_the_params_file(tmp_path, key, bad):
    """Either setting: ``cpu_dispatch``, which every stage's entry applies before torch loads,
    and ``precision``, checked with the rest of the params (judgeaudit/precision.py)."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text()) | {key: bad}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    done = subprocess.run([sys.executable, "-m", "flows.run", "bootstrap", "--params", str(path),
                           "--root", str(tmp_path / "data")], check=False, cwd=ROOT,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 2
    assert str(path) in done.stderr and re.search(rf"{key}: .*{re.escape(repr(bad))}", done.stderr)
    assert not (tmp_path / "data").exists()  # stopped before any work


@pytest.mark.parametrize("key,settings", [("cpu_dispatch", dispatch.SETTINGS), ("precision", precision.SETTINGS)])
def test_every_dvc_stage_declares_the_setting(key, settings):
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert all(key in spec.get("params", []) for spec in stages.values())
    assert yaml.safe_load((ROOT / "params.yaml").read_text())[key] in settings


def test_judgeaudit_run_applies_it_before_its_parser_loads_numpy(tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text()) | {"cpu_dispatch": "compatible"}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    done = subprocess.run([sys.executable, "-m", "flows.cli", "run", "report", "--params", str(path),
                           "--root", str(tmp_path / "empty")], check=False, cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert "must be applied before" not in done.stderr
    assert done.returncode == 2 and "no win_rates table" in done.stderr  # it got as far as the stage's inputs
