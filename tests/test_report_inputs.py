"""The report finds every stage's outputs through Layout (judgeaudit/report/inputs.py): the
folders are the ones dvc.yaml declares, an unconfigured stage leaves its section out, and a
table that fails its suite stops the report with its bad rows quarantined."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from judgeaudit.layout import Layout
from judgeaudit.report.inputs import read_inputs
from judgeaudit.schemas.validate import TableValidationError
from judgeaudit.tables import write_table

ROOT = Path(__file__).resolve().parent.parent
STAGE_DIRS = ("metrics", "boat", "pu", "prefix", "score_range", "robustness", "leakage_studies", "real_judges",
              "leaderboard", "report")


def test_layout_names_the_folders_dvc_yaml_declares():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    outs = {out if isinstance(out, str) else next(iter(out)) for s in stages.values() for out in s.get("outs", [])}
    layout = Layout(Path("data"))
    for name in STAGE_DIRS:
        assert getattr(layout, name).as_posix() in outs, name
    assert (layout.win_rates.parent, layout.pls.parent) == (layout.metrics, layout.metrics)


def _figures(metric: str, ci_high: float = 0.6) -> pd.DataFrame:
    return pd.DataFrame({"metric": [metric, metric], "estimate": [0.5, 0.4], "ci_low": [0.4, 0.3],
                         "ci_high": [ci_high, 0.5], "n": [16, 16]})


def _audit_root(root: Path, pls: pd.DataFrame) -> Layout:
    """A data root holding the audit stage's tables and the responses, nothing else."""
    layout = Layout(root)
    write_table(_figures("win_rate"), layout.win_rates)
    write_table(pls, layout.pls)
    (layout.metrics / "summary.json").write_text(json.dumps({"seed": 1}))
    write_table(pd.DataFrame({"student_id": ["s1"], "student_base": ["b"], "generator": ["g"], "method": ["sft"],
                              "prompt_id": ["p1"], "prompt": ["q"], "response": ["a"]}), layout.responses)
    return layout


def test_the_audit_tables_alone_give_every_other_section_none(tmp_path):
    layout = _audit_root(tmp_path, _figures("pls"))
    for unconfigured in (layout.real_judges, layout.leaderboard):  # an audit left out writes {}
        unconfigured.mkdir()
        (unconfigured / "summary.json").write_text("{}")
    got = read_inputs(layout)
    assert got.win_rates.equals(_figures("win_rate")) and got.pls.equals(_figures("pls"))
    assert got.summary == {"seed": 1} and list(got.responses.student_id) == ["s1"]
    assert [got.boat, got.pu, got.prefix, got.studies, got.robustness, got.score_range, got.judges,
            got.leaderboard] == [None] * 8


def test_a_table_failing_its_suite_stops_the_report_and_is_quarantined(tmp_path):
    layout = _audit_root(tmp_path, _figures("pls", ci_high=0.1))  # ci_high below ci_low
    with pytest.raises(TableValidationError, match="pls"):
        read_inputs(layout)
    assert [p.name.split("--")[0] for p in layout.quarantine.iterdir()] == ["pls"]
