"""What every report section writes its figures with: the judge pages' style sheet, a figure
with its CI as text, an HTML table, and a stage's plots copied beside the report."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

STYLE = ("body{font-family:sans-serif;max-width:1150px;margin:2em auto;color:#222} "
         "table.t{border-collapse:collapse;font-size:12px} table.t td,table.t th{padding:3px 7px;"
         "border-bottom:1px solid #ddd;text-align:left} .ok{color:#17662a;font-weight:bold} "
         ".care{color:#8a5a00;font-weight:bold} .bad{color:#a11;font-weight:bold} img{max-width:100%}")


def html_table(frame: pd.DataFrame) -> str:
    """The audit report's table: floats to 3 decimals, a missing figure shown as NaN."""
    return frame.to_html(index=False, float_format=lambda x: f"{x:.3f}", border=0, classes="t")


def judge_table(frame: pd.DataFrame) -> str:
    """The judge pages' table: floats to 3 decimals, a missing figure left blank."""
    return frame.to_html(index=False, float_format=lambda x: f"{x:.3f}", border=0, classes="t", na_rep="")


def ci_cells(frame: pd.DataFrame, with_n: bool = False) -> list[str]:
    """Per row of ``frame`` (estimate, ci_low, ci_high, n): "estimate [low, high]", with " (n=...)"
    if asked; "" where there is no estimate."""
    return ["" if np.isnan(e) else f"{e:.3f} [{lo:.3f}, {hi:.3f}]" + (f" (n={n})" if with_n else "")
            for e, lo, hi, n in zip(frame.estimate, frame.ci_low, frame.ci_high, frame.n)]


def with_ci(values: pd.Series, frame: pd.DataFrame, spec: str) -> list[str]:
    """"estimate [ci_low, ci_high] (n=...)" per row of ``frame``."""
    return [f"{e:{spec}} [{lo:{spec}}, {hi:{spec}}] (n={n})"
            for e, lo, hi, n in zip(values, frame.ci_low, frame.ci_high, frame.n)]


def ci_text(est: float, lo: float, hi: float, pct: bool = True, missing: str = "n/a") -> str:
    """"estimate [low, high]" as percentages (or signed to 3 decimals); ``missing`` without one."""
    if est is None or np.isnan(est):
        return missing
    f = (lambda v: f"{v:.1%}") if pct else (lambda v: f"{v:+.3f}")
    return f"{f(est)} [{f(lo)}, {f(hi)}]"


def points_text(value: float) -> str:
    """A difference of shares in signed percentage points."""
    return f"{100 * value:+.1f}"


def r2_text(value: float | None) -> str:
    """A fit's R², or why there is none."""
    return "n/a (every point equal)" if value is None else f"{value:.2f}"


def copy_images(names: dict[str, str], src: Path, out_dir: Path, prefix: str) -> str:
    """Copy a stage's plots next to the report; their <img> tags."""
    tags = []
    for key, name in names.items():
        if (src / name).exists():
            shutil.copy(src / name, out_dir / f"{prefix}{name}")
            tags.append(f'<img src="{prefix}{name}" alt="{key}">')
    return "".join(tags)
