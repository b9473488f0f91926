"""dvc.yaml against the code: every stage's deps cover the files its import closure runs
(so `dvc status` cannot call a stage with edited code up to date), each data dep is what an
earlier stage writes, and the stage lists of dvc.yaml, the CLI and the flows agree."""

from __future__ import annotations

from pathlib import Path

import yaml

from flows.deps import code_deps, covered, rewrite_deps, stage_deps, stage_files
from tests.conftest import ROOT

STAGES_YAML = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]


def test_dvc_yaml_deps_cover_each_stage_import_closure():
    _, missing = stage_deps(ROOT / "dvc.yaml")
    gaps = {stage: files for stage, files in missing.items() if files}
    assert not gaps, f"dvc.yaml's deps miss code the stages run (fix: `judgeaudit deps --write`): {gaps}"


def test_closure_follows_the_stage_not_the_whole_library():
    rel = {name: {str(p.relative_to(ROOT)) for p in stage_files(f"{name}_flow")}
           for name in ("robustness", "bootstrap", "leaderboard", "pu")}
    # the example: robustness runs the length-controlled GLM, bootstrap does not
    assert "judgeaudit/audits/length_control.py" in rel["robustness"]
    assert "judgeaudit/audits/length_control.py" not in rel["bootstrap"]
    assert {"judgeaudit/audits/self_preference.py", "judgeaudit/sources/alpacaeval_boards.py"} <= rel["leaderboard"]
    assert {"judgeaudit/judging/pairwise.py", "judgeaudit/pipeline/judge.py",
            "judgeaudit/models/encoder.py"} <= rel["pu"]
    for files in rel.values():  # the hubs every stage enters through
        assert {"flows/cli.py", "flows/stages.py", "judgeaudit/config.py", "judgeaudit/tables.py"} <= files


def test_an_uncovered_file_is_caught_and_rewrite_restores_coverage(tmp_path):
    text = (ROOT / "dvc.yaml").read_text()
    dropped = text.replace("      - judgeaudit/audits/length_control.py\n", "", 1)
    assert dropped != text
    (tmp_path / "dvc.yaml").write_text(dropped)
    need, missing = stage_deps(tmp_path / "dvc.yaml")
    assert "judgeaudit/audits/length_control.py" in missing["robustness"]
    assert rewrite_deps(dropped, need) == text  # data deps, params, outs and comments kept


def test_code_deps_collapse_only_whole_folders():
    files = {p for p in (ROOT / "judgeaudit" / "attacks").rglob("*.py")} | {ROOT / "judgeaudit" / "config.py"}
    assert code_deps(files) == ["judgeaudit/attacks", "judgeaudit/config.py"]
    some = {ROOT / "judgeaudit" / "attacks" / "transforms.py"}
    assert code_deps(some) == ["judgeaudit/attacks/transforms.py"]
    assert covered(ROOT / "judgeaudit" / "attacks" / "transforms.py", ["judgeaudit/attacks"])
    assert not covered(ROOT / "judgeaudit" / "attacks" / "transforms.py", ["judgeaudit/att"])


def test_every_data_dep_is_an_earlier_stage_output_and_the_stage_lists_agree():
    from flows.cli import STAGE_NAMES
    from flows.stages import STAGES

    assert tuple(STAGES_YAML) == STAGE_NAMES == tuple(STAGES)
    written: list[str] = []
    for name, stage in STAGES_YAML.items():
        for dep in stage.get("deps", []):
            if dep.split("/")[0] == "data":
                assert any(dep == out or Path(out) in Path(dep).parents for out in written), \
                    f"stage {name} reads {dep}, which no earlier stage writes"
        written += stage.get("outs", [])
