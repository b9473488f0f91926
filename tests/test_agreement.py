"""The committed figures file and `judgeaudit agree`, in a real git + DVC repository: the
report stage's figures (data/figures.json, dvc.yaml's metric with `cache: false`) are the
same bytes for the same summaries, even when their floats differ in the last bits; against
the committed file, unchanged figures agree, a figure moved within tolerance agrees while
`dvc metrics diff` still lists it, one moved beyond it disagrees and is named, and an
effect that vanishes disagrees though its figures moved within tolerance."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgeaudit.cli import agree
from judgeaudit.report.agreement import Tolerance, compare
from judgeaudit.report.effects import find_effects, write_figures

_ENV = {**{f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
           for what, value in (("NAME", "judgeaudit tests"), ("EMAIL", "tests@judgeaudit.invalid"))},
        "DVC_NO_ANALYTICS": "1"}

DVC_YAML = """\
stages:
  report:
    cmd: python -c "from judgeaudit.report.effects import write_figures; write_figures('data')"
    metrics:
      - data/figures.json:
          cache: false
"""


def _summaries(pls_low: float = 0.01, pls: float = 0.2, consistency: float = 0.7) -> dict[str, dict]:
    """Two stages' summaries: a leakage effect (PLS 0.2 [0.01, 0.35]: width 0.34, so 0.034 is
    its default tolerance) and, in a list of rows, an interval that excludes zero (width 0.2:
    tolerance 0.02) and one that does not."""
    return {"metrics": {"overall": {"pls": pls, "ci_low": pls_low, "ci_high": 0.35, "n": 120}},
            "pu": {"consistency": [
                {"judge": "gen-1.5b", "estimate": consistency, "ci_low": 0.6, "ci_high": 0.8, "n": 200},
                {"judge": "gen-casual", "estimate": 0.01, "ci_low": -0.1, "ci_high": 0.12, "n": 200}]}}


def _write(root: Path, summaries: dict[str, dict]) -> Path:
    for stage, summary in summaries.items():
        (root / stage).mkdir(parents=True, exist_ok=True)
        (root / stage / "summary.json").write_text(json.dumps(summary))
    return write_figures(root)


def _sh(*args: str, cwd: Path) -> str:
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + ":" + os.environ["PATH"], **_ENV}
    return subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git + DVC repository whose committed data/figures.json is ``_summaries()``'s; the
    test runs in it, as a user runs `judgeaudit agree` at a clone's root."""
    for key, value in _ENV.items():
        monkeypatch.setenv(key, value)
    _sh("git", "init", "-q", cwd=tmp_path)
    _sh("dvc", "init", "-q", cwd=tmp_path)
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    _write(tmp_path / "data", _summaries())
    (tmp_path / ".gitignore").write_text("/data/*/\n")  # the stages' folders are DVC's (not these tests')
    _sh("git", "add", "-A", cwd=tmp_path)
    _sh("git", "commit", "-qm", "the committed figures", cwd=tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _agree(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="judgeaudit")
    agree.add_parser(parser.add_subparsers(dest="command"))
    return agree.handle(parser.parse_args(["agree", *argv]))


def _dvc_diff(repo: Path) -> dict:
    return json.loads(_sh("dvc", "metrics", "diff", "--json", cwd=repo) or "{}")


def test_the_figures_file_is_the_same_bytes_for_the_same_figures(tmp_path):
    """Every interval with estimate, CI, n and effect sign; written twice, the same bytes; and
    the same bytes again when the floats differ in their last bits, as on another CPU."""
    first = _write(tmp_path / "a", _summaries()).read_bytes()
    assert _write(tmp_path / "a", _summaries()).read_bytes() == first
    last_bits = _summaries(pls_low=0.01 + 1e-15, pls=0.2 * (1 + 1e-12))
    assert _write(tmp_path / "b", last_bits).read_bytes() == first
    assert _write(tmp_path / "c", _summaries(pls=0.2001)).read_bytes() != first  # a figure that moved

    figures = json.loads(first)
    found = find_effects(tmp_path / "a")
    assert sum(len(rows) for rows in figures.values()) == len(found) == 3
    for where, effect in found.items():
        stage, _, path = where.partition(": ")
        assert figures[stage][path] == {"estimate": effect.estimate, "ci_low": effect.ci_low,
                                        "ci_high": effect.ci_high, "n": effect.n, "effect": effect.sign}
    assert figures["metrics"]["overall"]["effect"] == 1
    assert figures["pu"]["consistency[judge=gen-casual]"]["effect"] == 0
    assert list(figures) == sorted(figures)  # sorted keys


def test_unchanged_figures_agree(repo, capsys):
    _write(repo / "data", _summaries())  # a rerun that gives the same figures
    assert _dvc_diff(repo) == {}
    assert _agree() == 0
    out = capsys.readouterr().out
    assert "agrees with HEAD: every figure of 3 intervals within tolerance, all 2 effects kept" in out
    assert "tolerance: a figure" in out and "0.1x the width" in out


def test_a_figure_moved_within_tolerance_agrees_and_dvc_lists_it(repo, capsys):
    _write(repo / "data", _summaries(pls=0.22))  # 0.02 of the 0.034 allowed
    moved = _dvc_diff(repo)["data/figures.json"]
    assert set(moved) == {"metrics.overall.estimate"}
    assert (moved["metrics.overall.estimate"]["old"], moved["metrics.overall.estimate"]["new"]) == (0.2, 0.22)
    assert _agree() == 0
    assert "1 figures moved within it (dvc metrics diff HEAD lists them)" in capsys.readouterr().out


def test_a_figure_moved_beyond_tolerance_disagrees_and_is_named(repo, capsys):
    _write(repo / "data", _summaries(consistency=0.73))  # 0.03 where 0.1 x 0.2 = 0.02 is allowed
    assert _agree() == 1
    out = capsys.readouterr().out
    assert "figures moved beyond tolerance (1):" in out
    line = next(line for line in out.splitlines() if "pu: consistency[judge=gen-1.5b]" in line)
    assert line.split()[:5] == ["estimate", "0.7", "0.73", "+0.03", "0.02"]
    assert out.splitlines()[-1].startswith("disagrees with HEAD: 1 figures of 3 intervals beyond tolerance")
    # a stated looser tolerance for that stage (0.2 x its width, 0.04) lets it agree
    assert _agree("--tol", "pu=0.2") == 0
    assert "pu 0.2x" in capsys.readouterr().out


def test_an_effect_that_vanishes_disagrees(repo, capsys):
    _write(repo / "data", _summaries(pls_low=-0.01))  # 0.02 of the 0.034 allowed, but now includes zero
    assert _agree() == 1
    out = capsys.readouterr().out
    assert "figures moved beyond tolerance" not in out
    assert "vanished  effect +1 -> 0  metrics: overall" in out
    assert "1 of 2 effects appeared, vanished or reversed" in out.splitlines()[-1]


def test_errors_name_the_file(repo, tmp_path_factory, capsys):
    """Exit 2, with a one-line message naming the file: missing here, not committed at the
    revision, an unknown revision, not a git repository."""
    (repo / "data" / "figures.json").rename(repo / "data" / "elsewhere.json")
    assert _agree() == 2
    assert capsys.readouterr().err.startswith("judgeaudit agree: error: data/figures.json: no figures file")
    assert _agree("--figures", "data/elsewhere.json") == 2
    assert "data/elsewhere.json: not committed at HEAD" in capsys.readouterr().err
    (repo / "data" / "elsewhere.json").rename(repo / "data" / "figures.json")
    assert _agree("--against", "no-such-rev") == 2
    assert "data/figures.json: unknown Git revision 'no-such-rev'" in capsys.readouterr().err
    plain = tmp_path_factory.mktemp("plain")  # outside the repository
    _write(plain / "data", _summaries())
    os.chdir(plain)
    assert _agree() == 2
    err = capsys.readouterr().err
    assert err.startswith("judgeaudit agree: error: data/figures.json: ")
    assert "not inside of a DVC repository" in err
    assert err.count("\n") == 1


def test_tolerance_is_a_fraction_of_the_committed_width_with_a_floor():
    """The rule itself, on plain figures: n must be equal, a degenerate interval moves only
    by the floor, an interval on one side only disagrees field by field."""
    old = {"s: a": {"estimate": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 10, "effect": 1},
           "s: flat": {"estimate": 1.0, "ci_low": 1.0, "ci_high": 1.0, "n": 10, "effect": 1}}
    new = {"s: a": {"estimate": 0.52, "ci_low": 0.4, "ci_high": 0.6, "n": 11, "effect": 1},
           "s: flat": {"estimate": 0.99, "ci_low": 0.99, "ci_high": 1.0, "n": 10, "effect": 1},
           "s: new": {"estimate": 0.1, "ci_low": 0.05, "ci_high": 0.2, "effect": 1}}
    result = compare(old, new, Tolerance())
    assert {(m.where, m.field) for m in result.moved} == {
        ("s: a", "n"), ("s: flat", "estimate"), ("s: flat", "ci_low"),
        ("s: new", "estimate"), ("s: new", "ci_low"), ("s: new", "ci_high")}
    assert result.within == 1 and [f.kind for f in result.flipped] == ["appeared"] and not result.agrees
    loose = compare(old, {k: v for k, v in new.items() if k != "s: new"}, Tolerance(floor=0.01))
    assert {(m.where, m.field) for m in loose.moved} == {("s: a", "n")}
