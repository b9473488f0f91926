"""bench/cpu_dispatch.py: its hash of a directory is DVC's (so it can stand beside dvc.lock's),
and the capped settings (judgeaudit/dispatch.py, params.yaml's cpu_dispatch) do cap the
libraries (a misspelt variable would cap nothing, silently)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import cpu_dispatch  # noqa: E402

from judgeaudit.dispatch import SETTINGS, VARIABLES  # noqa: E402
from judgeaudit.dispatch import cpuinfo_fields  # noqa: E402


def test_dir_md5_is_dvcs_hash_of_the_directory(tmp_path):
    data = tmp_path / "models"
    (data / "a").mkdir(parents=True)
    (data / "a" / "model.safetensors").write_bytes(os.urandom(300))
    (data / "_summary.json").write_text('{"loss": 1.5}\n')
    (data / "b.txt").write_text("b\n")
    subprocess.run(["dvc", "init", "-q", "--no-scm"], cwd=tmp_path, check=True)
    subprocess.run(["dvc", "add", "-q", "models"], cwd=tmp_path, check=True)
    dvc = yaml.safe_load((tmp_path / "models.dvc").read_text())["outs"][0]["md5"]
    files = cpu_dispatch.file_md5s(data)
    assert set(files) == {"a/model.safetensors", "_summary.json", "b.txt"}
    assert cpu_dispatch.dir_md5(files) == dvc
    (data / "b.txt").write_text("c\n")
    assert cpu_dispatch.dir_md5(cpu_dispatch.file_md5s(data)) != dvc


def test_capped_settings_take_effect():
    base = {k: v for k, v in os.environ.items() if k not in VARIABLES}

    def run(code: str, setting: str, **extra: str) -> str:
        env = {**base, **SETTINGS[setting], **extra}
        return subprocess.run([sys.executable, "-c", code], check=True, text=True, capture_output=True,
                              env=env).stdout

    for name in ("avx2", "compatible"):
        probe = json.loads(run(cpu_dispatch.PROBE, name))
        # AVX2 or lower, whatever this CPU can do beyond it
        assert probe["torch"] in {"AVX2", "DEFAULT"} and not probe["numpy_avx512"], (name, probe)
        assert probe["openblas"] in ([], ["Haswell"]), (name, probe)
        # MKL says which branch its matrix products took (torch's CPU wheel multiplies with MKL).
        # It takes an ISA branch on Intel processors only; elsewhere it says AUTO for every one
        # (AVX2, AVX512, SSE4_2 on an AMD EPYC, family 26) but COMPATIBLE, the cross-vendor one
        branch = SETTINGS[name]["MKL_CBWR"]
        if branch != "COMPATIBLE" and cpuinfo_fields().get("vendor_id") != "GenuineIntel":
            branch = "AUTO"
        verbose = run("import torch; a = torch.ones(64, 64); a @ a", name, MKL_VERBOSE="1")
        assert f"CNR:{branch} " in verbose, (name, verbose[-500:])
