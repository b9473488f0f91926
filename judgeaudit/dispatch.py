"""Which SIMD paths the math libraries take on this CPU (params.yaml's ``cpu_dispatch``).

A model trained on two kinds of CPU differs in its weights' last bits: torch, oneDNN,
OpenBLAS and NumPy pick kernels by the CPU's instruction sets, and MKL picks its own
branch by vendor as well. Every hash in dvc.lock moves with them, so a lock written on one
kind of CPU holds on that kind only. ``compatible`` caps the libraries at AVX2 and pins
MKL's branch meant to give the same results on Intel and AMD (``MKL_CBWR=COMPATIBLE``):
`bench/cpu_dispatch.py` measured the bootstrap stage's 13 models bit-equal on a Xeon
(family 6, model 167) and an AMD EPYC (family 26, model 2) under it, and different under
the other two settings. It costs time: MKL's SSE2 branch does the matrix products.

The libraries read these variables when they load, so ``apply`` runs before NumPy or torch
is imported (``python -m flows.run`` applies the params file's setting first thing)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

_CAPPED = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
           "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
SETTINGS: dict[str, dict[str, str]] = {
    "default": {},                                   # each library picks for this CPU: fastest
    "avx2": {**_CAPPED, "MKL_CBWR": "AVX2"},         # the same kernels on every AVX2 CPU of one vendor
    "compatible": {**_CAPPED, "MKL_CBWR": "COMPATIBLE"},  # the same bits on Intel and AMD
}
VARIABLES: tuple[str, ...] = tuple(sorted(set().union(*SETTINGS.values())))
_LOADED_BY = ("numpy", "torch")  # modules that read the variables on import (MKL, OpenBLAS with them)


def environment(setting: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with ``setting``'s variables; ``default`` leaves
    it as it is (a variable the user set stays set)."""
    if setting not in SETTINGS:
        raise ValueError(f"cpu_dispatch: {setting!r} is not one of {', '.join(SETTINGS)}")
    base = dict(os.environ if env is None else env)
    if setting == "default":
        return base
    return {k: v for k, v in base.items() if k not in VARIABLES} | SETTINGS[setting]


def apply(setting: str) -> None:
    """Set ``setting``'s variables in this process, before the libraries that read them load:
    once NumPy or torch is imported, a change would leave the process on its old paths
    while the tables said otherwise, so that raises."""
    wanted = environment(setting)
    changed = {k for k in VARIABLES if wanted.get(k) != os.environ.get(k)}
    if not changed:
        return
    if loaded := [m for m in _LOADED_BY if m in sys.modules]:
        raise RuntimeError(f"cpu_dispatch {setting!r} must be applied before {' and '.join(loaded)} "
                           f"is imported (it would change {', '.join(sorted(changed))})")
    for key in VARIABLES:
        if key in wanted:
            os.environ[key] = wanted[key]
        else:
            os.environ.pop(key, None)


def current() -> dict[str, str]:
    """The dispatch variables set in this process (what the report and the task cache name)."""
    return {k: os.environ[k] for k in VARIABLES if k in os.environ}


def setting_in(params_path: str) -> str:
    """The ``cpu_dispatch`` a params file names, or the file it extends (``default`` where
    none names one, or the file cannot be read: ``load_params`` reports that file's errors
    with their place)."""
    from judgeaudit.params_file import ConfigError, read_params_file

    try:
        data = read_params_file(params_path).data
    except (OSError, ConfigError):
        return "default"
    return str(data.get("cpu_dispatch", "default"))


def cpuinfo_fields(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """The first processor's fields of a Linux ``/proc/cpuinfo`` (empty elsewhere)."""
    fields: dict[str, str] = {}
    try:
        for line in cpuinfo.read_text().splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
    except OSError:
        pass
    return fields


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The first processor's instruction-set flags, sorted (x86 ``flags``, Arm ``Features``;
    empty elsewhere): what torch's kernel dispatch reads, beyond a name a VM may mask."""
    fields = cpuinfo_fields(cpuinfo)
    return " ".join(sorted((fields.get("flags") or fields.get("features") or "").split()))
