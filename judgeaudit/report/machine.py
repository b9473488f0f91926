"""The machine a report's figures were computed on. The embedded default's tables are
bitwise reproducible on one machine but not across CPUs (floating-point reductions differ),
so a report says which CPU and library versions made it."""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from judgeaudit import dispatch, precision
from judgeaudit.dispatch import cpuinfo_fields

_PACKAGES = ("torch", "transformers", "trl", "numpy", "scipy", "scikit-learn", "pot")


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name with its family/model/stepping where known: virtual machines
    often mask the name ("AMD EPYC"), and the numbers still tell two generations apart."""
    fields = cpuinfo_fields(cpuinfo)
    name = fields.get("model name") or platform.processor() or platform.machine()
    ids = [f"{k} {fields[k]}" for k in ("cpu family", "model", "stepping") if k in fields]
    return f"{name} ({', '.join(ids)})" if ids else name


def machine() -> dict:
    """CPU model, core count, the SIMD level torch dispatches to, accelerator, OS, Python and the numeric stack's versions."""
    import torch

    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return {"cpu": cpu_model(), "cores": os.cpu_count(),
            "simd": torch.backends.cpu.get_cpu_capability(), "cpu_dispatch": dispatch.current(),
            "precision": precision.current(),
            "accelerator": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "system": f"{platform.system()} {platform.machine()}", "python": platform.python_version(),
            "packages": versions}
