"""The effects a run's audits find, and the ones another run loses: every confidence
interval in the stages' summaries (``<root>/<stage>/summary.json``) that excludes zero,
with its sign. A smaller or faster configuration keeps the findings when every effect of
the reference run is still there with the same sign (``lost``): the check to run before
shrinking the default run. An effect that the same configuration loses under another seed
(``reproducible``) is at the noise floor: no smaller run can be held to it.

Intervals are found by their keys: ``ci_low``/``ci_high`` (the estimate beside them as
``estimate``, ``pls``, ``accuracy`` or ``flip_rate``) or ``<name>_ci_low``/``<name>_ci_high`` (the estimate as
``<name>``). A row of a list is named by its text fields (judge, attack, tier...), so the
same row is matched across runs whatever its position.

``write_figures`` writes every interval, and whether it is an effect, to
``<root>/figures.json``: the file dvc.yaml declares as the report stage's metric with
``cache: false``, so git keeps it beside dvc.lock and ``dvc metrics diff`` compares a rerun
with the committed figures on any clone (``judgeaudit agree``, judgeaudit/report/agreement.py,
applies a tolerance to that diff).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from judgeaudit.tables import write_json

FIGURES = "figures.json"  # in the data root, beside the stages' folders (no stage's out)
DIGITS = 6  # significant digits the figures file keeps


@dataclass(frozen=True)
class Effect:
    where: str  # "<stage>: <key path>[<row>].<name>"
    estimate: float | None
    ci_low: float
    ci_high: float
    n: int | None

    @property
    def sign(self) -> int:
        """+1 or -1 when the interval excludes zero on that side, else 0."""
        return 1 if self.ci_low > 0 else -1 if self.ci_high < 0 else 0


def _row_name(row: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(row.items()) if isinstance(v, str))


def _intervals(node: object, path: str) -> Iterator[tuple[str, dict, str]]:
    """(path, the dict holding an interval, the interval's name: "" or "<name>_")."""
    if isinstance(node, dict):
        for key in node:
            if key.endswith("ci_low") and key[:-len("ci_low")] + "ci_high" in node:
                yield path, node, key[:-len("ci_low")]
        for key, value in node.items():
            yield from _intervals(value, f"{path}/{key}" if path else str(key))
    elif isinstance(node, list):
        for k, item in enumerate(node):
            name = _row_name(item) if isinstance(item, dict) else ""
            yield from _intervals(item, f"{path}[{name or k}]")


def find_effects(root: Path) -> dict[str, Effect]:
    """Every interval of every stage summary under ``root``, by where it is (the ones that
    include zero too: ``Effect.sign`` is 0 for them)."""
    effects: dict[str, Effect] = {}
    for summary in sorted(Path(root).glob("*/summary.json")):
        stage = summary.parent.name
        for path, holder, name in _intervals(json.loads(summary.read_text()), ""):
            low, high = holder[f"{name}ci_low"], holder[f"{name}ci_high"]
            if not all(isinstance(x, (int, float)) for x in (low, high)):
                continue
            names = [name[:-1]] if name else ["estimate", "pls", "accuracy", "flip_rate"]
            estimate = next((holder[k] for k in names if isinstance(holder.get(k), (int, float))), None)
            n = holder.get("n", holder.get("n_pairs", holder.get("n_items")))
            where = f"{stage}: {path}" + (f".{name[:-1]}" if name else "")
            effects[where] = Effect(where, estimate, float(low), float(high), n if isinstance(n, int) else None)
    return effects


def lost(reference: dict[str, Effect], other: dict[str, Effect]) -> list[tuple[Effect, Effect | None]]:
    """The reference's effects (intervals excluding zero) that ``other`` does not find with
    the same sign: (the reference's, the other's or None where it is missing)."""
    return [(ref, other.get(where)) for where, ref in sorted(reference.items())
            if ref.sign and (where not in other or other[where].sign != ref.sign)]


def reproducible(reference: dict[str, Effect], reseeded: dict[str, Effect]) -> dict[str, Effect]:
    """The reference's effects that the same configuration, run under another seed, does not
    lose (``lost``): the ones a smaller run can be held to."""
    fragile = {ref.where for ref, _ in lost(reference, reseeded)}
    return {where: ref for where, ref in reference.items() if ref.sign and where not in fragile}


def as_metrics(effects: dict[str, Effect]) -> dict[str, dict[str, dict[str, float | int]]]:
    """Every interval as DVC metrics, ``{stage: {path: {estimate, ci_low, ci_high, n}}}``
    (known fields only), named as ``judgeaudit effects`` names them. Most summaries hold
    their figures in lists of rows, which `dvc metrics` and `dvc exp show` skip: keyed by
    row, a sweep such as ``dvc exp run -S pu.eta=0.3`` shows what it moved."""
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    for where, e in sorted(effects.items()):
        stage, _, path = where.partition(": ")
        fields = {"estimate": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high, "n": e.n}
        out.setdefault(stage, {})[path] = {k: v for k, v in fields.items() if v is not None}
    return out


def _rounded(x: float | int | None) -> float | int | None:
    """``x`` to ``DIGITS`` significant digits (integers kept): a rerun whose floats differ in
    their last bits (another CPU's summation order) writes the same figure, but for one at a
    rounding boundary, so ``dvc metrics diff`` lists the figures that moved, not the noise."""
    return float(f"{x:.{DIGITS}g}") if isinstance(x, float) else x


def as_figures(effects: dict[str, Effect]) -> dict[str, dict[str, dict[str, float | int]]]:
    """``as_metrics`` to ``DIGITS`` significant digits, each interval with ``effect``: its
    ``Effect.sign`` (+1 or -1 when it excludes zero on that side, 0 when it includes zero),
    taken from the unrounded bounds."""
    return {stage: {path: {**{k: _rounded(v) for k, v in fields.items()},
                           "effect": effects[f"{stage}: {path}"].sign}
                    for path, fields in rows.items()}
            for stage, rows in as_metrics(effects).items()}


def write_figures(root: Path, path: Path | None = None) -> Path:
    """Every interval of the stage summaries under ``root`` (``as_figures``) as JSON at
    ``path`` (default ``<root>/figures.json``): keys sorted and floats rounded, so the same
    summaries always give the same bytes."""
    return write_json(as_figures(find_effects(Path(root))), Path(root) / FIGURES if path is None else path)
