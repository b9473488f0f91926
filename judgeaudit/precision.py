"""Mixed precision for the forward passes that score and embed (params.yaml's ``precision``).

``bfloat16`` runs every forward pass that scores (log-probs, verdicts, rewards) or embeds
under ``torch.autocast`` in bfloat16: the matrix products and attention; norms, softmaxes
and log-probs stay in float32, and so do the weights. On a CPU with bfloat16 instructions
(AVX512_BF16, AMX) such a pass of the embedded models takes about half the time
(`python bench/precision.py`). Two kinds of work stay float32:

- generation, where a sampled token follows the logits' last bits: in bfloat16 the
  generators' and students' texts change, and with them every table after them;
- training, so that every trained model stays what it was: on the embedded models' short
  sequences the Trainer's bf16 mode takes a step 0.9 to 1.6x as fast by model size
  (bench/precision.py); with every training (and generation) in bfloat16 the default lost 13
  of its 1111 effects, and with BOAT's contamination alone, its one training on long prompts
  (7 s of the stage), one.

``auto`` picks ``bfloat16`` on a CPU with bfloat16 instructions under ``cpu_dispatch:
default``, and ``float32`` elsewhere: where bfloat16 is emulated it is slower (with oneDNN held
to AVX-512 without bfloat16, 0.9x float32's speed; held to AVX2, as ``cpu_dispatch``'s other
settings hold it, 0.2x). Like ``cpu_dispatch``, the setting is one for the
process and its workers: the stage's runner applies the params file's setting
(judgeaudit/runner/execute.py) and hands it to each worker it starts; a library call outside
a run is float32."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SETTINGS = ("float32", "bfloat16", "auto")
_NATIVE_BF16 = ("avx512_bf16", "amx_bf16")  # x86 flags of CPUs whose kernels compute in bfloat16


def native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU has bfloat16 instructions (x86 Linux's /proc/cpuinfo; False elsewhere)."""
    from judgeaudit.dispatch import cpu_flags

    return any(flag in cpu_flags(cpuinfo).split() for flag in _NATIVE_BF16)


def resolve(setting: str, cpu_dispatch: str = "default") -> str:
    """``float32`` or ``bfloat16``: ``auto`` by this CPU and the run's ``cpu_dispatch``."""
    if setting not in SETTINGS:
        raise ValueError(f"precision: {setting!r} is not one of {', '.join(SETTINGS)}")
    if setting == "auto":
        return "bfloat16" if cpu_dispatch == "default" and native_bf16() else "float32"
    return setting


_current = "float32"


def apply(setting: str, cpu_dispatch: str = "default") -> None:
    """Set this process's precision from the params' settings."""
    set_current(resolve(setting, cpu_dispatch))


def set_current(value: str) -> None:
    """Set this process's precision, resolved (a stage's worker takes its stage's)."""
    global _current
    if value not in ("float32", "bfloat16"):
        raise ValueError(f"precision {value!r}: expected float32 or bfloat16")
    _current = value


def current() -> str:
    """The precision this process runs in: what ``apply`` set, float32 where nothing did."""
    return _current


def mixed() -> bool:
    """Whether scoring and embedding passes run in bfloat16 mixed precision."""
    return current() == "bfloat16"


def scoring(device: Any) -> Any:
    """A context for a forward pass that scores or embeds on ``device``: bfloat16 autocast
    when the precision is mixed, else nothing. Generation is left out on purpose: a sampled
    token follows the logits' last bits, so a bfloat16 pass would change the texts
    themselves, and every table made from them, where a score moves by about 1e-2."""
    import torch

    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16, enabled=mixed())
