"""The report names the machine its figures came from (they are bitwise reproducible on
one machine, not across CPUs)."""

from __future__ import annotations

from judgeaudit.dispatch import cpu_flags
from judgeaudit.report.machine import cpu_model, machine


def test_cpu_model_is_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
                    "model name\t: AMD EPYC\nstepping\t: 1\nflags\t: fpu\n\nprocessor\t: 1\n"
                    "model name\t: other\n")
    assert cpu_model(info) == "AMD EPYC (cpu family 25, model 1, stepping 1)"
    assert cpu_model(tmp_path / "absent")  # falls back to what platform knows, never empty


def test_cpu_flags_are_the_first_processors_sorted(tmp_path):
    x86, arm = tmp_path / "x86", tmp_path / "arm"
    x86.write_text("processor\t: 0\nflags\t\t: sse2 avx512f fpu\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    arm.write_text("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd sve\n\n")
    assert cpu_flags(x86) == "avx512f fpu sse2"
    assert cpu_flags(arm) == "asimd fp sve"
    assert cpu_flags(tmp_path / "absent") == ""


def test_machine_records_the_numeric_stack():
    import torch

    made_on = machine()
    assert made_on["cores"] >= 1 and made_on["cpu"]
    assert made_on["packages"]["torch"] == torch.__version__
    assert made_on["simd"] == torch.backends.cpu.get_cpu_capability()
    assert (made_on["accelerator"] is None) == (not torch.cuda.is_available())
