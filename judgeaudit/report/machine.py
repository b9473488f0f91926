"""The machine a report's figures were computed on. The embedded default's tables are
bitwise reproducible on one machine but not across CPUs (floating-point reductions differ),
so a report says which CPU and library versions made it."""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

_PACKAGES = ("torch", "transformers", "trl", "numpy", "scipy", "scikit-learn", "pot")


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux ``/proc/cpuinfo``; elsewhere what ``platform`` knows)."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    """CPU model, core count, accelerator, OS, Python and the numeric stack's versions."""
    import torch

    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return {"cpu": cpu_model(), "cores": os.cpu_count(),
            "accelerator": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "system": f"{platform.system()} {platform.machine()}", "python": platform.python_version(),
            "packages": versions}
