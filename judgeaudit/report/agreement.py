"""Whether a rerun's figures agree with the committed ones, within a stated tolerance: the
question a user asks after ``dvc repro`` on another CPU changed dvc.lock. Bit-identical
outputs are the promise on the machine that wrote the lock; elsewhere a model's float
arithmetic may move a figure a little, and what matters is whether any finding changed.

``judgeaudit agree [--against REV] [--tol X] [--tol STAGE=X] [--floor X] [--figures FILE]``
compares the workspace's figures file (``data/figures.json``, every interval of every stage
with its n and whether it is an effect: judgeaudit/report/effects.py ``write_figures``)
with the one committed at REV (default HEAD). The comparison is DVC's own
(``Repo.metrics.diff``, what ``dvc metrics diff REV`` prints, which lists every figure that
moved and by how much); this module applies the tolerance to it:

- a figure (an interval's ``estimate``, ``ci_low``, ``ci_high``) agrees when
  ``|new - old| <= max(tol * (ci_high - ci_low), floor)``, the width being the interval's
  at REV. Default ``tol`` 0.1: a tenth of the figure's own statistical uncertainty, so one
  verdict flipping in a rate near 0.5 over n >= 26 items (a move of 1/n against a 95%
  interval about 1.96/sqrt(n) wide) agrees, and a move that could change what the interval says
  does not. ``floor`` (default 0, in the figure's units) is what an interval without a
  width (degenerate, or undefined) may move;
- its ``n`` agrees when it is equal (a count moves only when the sample changed);
- an effect agrees when its interval excludes zero on the same side at REV and in the
  workspace, or in neither (``Effect.sign`` unchanged); an interval present on one side
  only disagrees.

It prints the figures that moved beyond tolerance and the effects that appeared,
vanished or reversed, then a one-line verdict; exit 0 when everything agrees, 1 when
something does not, 2 on an error (the figures file missing here or at REV, not a git and
DVC repository), with a one-line message naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

FIELDS = ("estimate", "ci_low", "ci_high")  # the figures the tolerance applies to
Figures = dict[str, dict[str, float | int]]  # "<stage>: <path>" -> {estimate, ci_low, ci_high, n, effect}


class AgreementError(Exception):
    """The comparison cannot be made (a missing file, no repository): its message names the file."""


@dataclass(frozen=True)
class Tolerance:
    """How far a figure may move: ``width`` times its interval's width at the reference
    (``by_stage`` overriding it per stage), at least ``floor``."""

    width: float = 0.1
    floor: float = 0.0
    by_stage: Mapping[str, float] = field(default_factory=dict)

    def allowed(self, where: str, reference: Mapping[str, float | int]) -> float:
        """What the figures of interval ``where`` (its fields at the reference) may move."""
        low, high = reference.get("ci_low"), reference.get("ci_high")
        width = high - low if low is not None and high is not None else 0.0
        return max(self.by_stage.get(where.split(": ")[0], self.width) * width, self.floor)

    def describe(self, rev: str = "the reference") -> str:
        stages = "".join(f", {s} {x:g}x" for s, x in sorted(self.by_stage.items()))
        return (f"a figure (estimate, ci_low, ci_high) agrees when it moved by at most {self.width:g}x "
                f"the width of its interval at {rev}{stages} (at least {self.floor:g}); its n when equal; "
                "an effect when its interval excludes zero on the same side in both, or in neither")


@dataclass(frozen=True)
class Moved:
    """A figure that moved beyond tolerance (``old`` or ``new`` None: missing on that side)."""

    where: str
    field: str
    old: float | int | None
    new: float | int | None
    allowed: float | None  # None for n, which must be equal


@dataclass(frozen=True)
class Flipped:
    """An interval whose effect sign differs: +1/-1 excludes zero on that side, 0 not."""

    where: str
    old: int
    new: int

    @property
    def kind(self) -> str:
        return "appeared" if not self.old else "vanished" if not self.new else "reversed"


@dataclass(frozen=True)
class Agreement:
    intervals: int  # compared, on either side
    effects: int  # intervals that are an effect on either side
    within: int  # figures that moved, within tolerance
    moved: list[Moved]
    flipped: list[Flipped]

    @property
    def agrees(self) -> bool:
        return not self.moved and not self.flipped


def _differs(old: float | int | None, new: float | int | None) -> bool:
    return old != new and not (old != old and new != new)  # NaN equals NaN here


def compare(old: Figures, new: Figures, tolerance: Tolerance) -> Agreement:
    """``new``'s figures and effects against ``old``'s (the reference), under ``tolerance``."""
    moved: list[Moved] = []
    flipped: list[Flipped] = []
    within = effects = 0
    for where in sorted(set(old) | set(new)):
        ref, other = old.get(where), new.get(where)
        if ref is None or other is None:  # an interval on one side only: every figure of it moved
            present = ref or other
            moved += [Moved(where, f, ref and ref.get(f), other and other.get(f), None)
                      for f in (*FIELDS, "n") if f in present]
        else:
            allowed = tolerance.allowed(where, ref)
            for f in FIELDS:
                a, b = ref.get(f), other.get(f)
                if not _differs(a, b):
                    continue
                # the relative slack absorbs the subtraction's own rounding at the boundary
                if a is not None and b is not None and abs(b - a) <= allowed * (1 + 1e-9):
                    within += 1
                else:
                    moved.append(Moved(where, f, a, b, allowed))
            if _differs(ref.get("n"), other.get("n")):
                moved.append(Moved(where, "n", ref.get("n"), other.get("n"), None))
        a_sign, b_sign = int((ref or {}).get("effect", 0)), int((other or {}).get("effect", 0))
        effects += bool(a_sign or b_sign)
        if a_sign != b_sign:
            flipped.append(Flipped(where, a_sign, b_sign))
    return Agreement(len(set(old) | set(new)), effects, within, moved, flipped)


def _unflatten(flat: Mapping[str, object]) -> Figures:
    """DVC's dotted keys (``<stage>.<path>.<field>``) as ``{"<stage>: <path>": {field: value}}``:
    a stage has no dot and a field none, a path may (a model's name in a row's key)."""
    out: Figures = {}
    for key, value in flat.items():
        stage, _, rest = key.partition(".")
        path, _, name = rest.rpartition(".")
        if isinstance(value, (int, float)):  # DVC reads strings too, which no figure is
            out.setdefault(f"{stage}: {path}", {})[name] = value  # type: ignore[assignment]
    return out


def committed_and_workspace(figures: Path, rev: str = "HEAD") -> tuple[Figures, Figures]:
    """The figures file at ``rev`` and in the workspace, read through ``dvc metrics diff``
    (every figure, unchanged ones included). Raises ``AgreementError`` naming the file."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo
    from dvc.scm import NoSCM
    from scmrepo.exceptions import SCMError

    name, figures = figures, Path(figures).absolute()  # the name as given, for the messages
    if not figures.is_file():
        raise AgreementError(f"{name}: no figures file (the report stage writes it: dvc repro report)")
    try:
        with Repo(str(figures.parent)) as repo:
            if isinstance(repo.scm, NoSCM) or repo.scm.no_commits:
                raise AgreementError(f"{name}: not in a git repository with a commit to compare against")
            repo.scm.resolve_rev(rev)
            result = repo.metrics.diff(a_rev=rev, targets=[str(figures)], all=True)
    except (DvcException, SCMError) as exc:
        raise AgreementError(f"{name}: {exc}") from exc
    for side, error in result.get("errors", {}).items():  # {rev: exception} or {rev: {file: exception}}
        exc = next(iter(error.values())) if isinstance(error, dict) else error
        if side == "workspace":
            raise AgreementError(f"{name}: cannot be read ({exc})")
        if isinstance(exc, FileNotFoundError):
            raise AgreementError(f"{name}: not committed at {rev} (commit it beside dvc.lock)")
        raise AgreementError(f"{name}: cannot be read at {rev} ({exc})")
    diff = next(iter(result.get("diff", {}).values()), {})
    old, new = (_unflatten({k: v.get(side) for k, v in diff.items()}) for side in ("old", "new"))
    if not old and not new:
        raise AgreementError(f"{name}: no figures, here or at {rev} (expected "
                             "{stage: {interval: {estimate, ci_low, ci_high, n, effect}}})")
    return old, new
