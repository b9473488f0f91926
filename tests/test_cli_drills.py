"""Drills for a new user's first mistakes: serving or running a stage before what it
needs exists gives one line that says what to run first, never a hub-id traceback."""

from __future__ import annotations

import pytest

from flows.cli import main


def test_serve_before_the_models_are_built(tmp_path, tiny_params_file, capsys):
    code = main(["serve", "gen-f", "--params", str(tiny_params_file), "--root", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and "Repo id" not in err and "Traceback" not in err
    assert f"{tmp_path / 'data' / 'models' / 'gen-f'}: model 'gen-f' does not exist" in err
    assert "dvc repro bootstrap" in err


@pytest.mark.parametrize("stage,upstream", [("judge", "respond"), ("respond", "bootstrap"), ("train", "generate"), ("audit", "judge")])
def test_a_stage_before_its_upstream_names_the_stage_to_run_first(tmp_path, tiny_params_file, stage, upstream):
    from judgeaudit.runner.execute import execute

    with pytest.raises(FileNotFoundError, match=rf"the '{upstream}' stage writes it: run `dvc repro {upstream}`"):
        execute(stage, tiny_params_file, tmp_path / "data")


def test_run_says_which_stage_to_run_first_before_any_server(tmp_path, tiny_params_file, capsys):
    code = main(["run", "judge", "--params", str(tiny_params_file), "--root", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "Prefect server" not in err
    assert "no responses table" in err and "run `dvc repro respond`" in err
