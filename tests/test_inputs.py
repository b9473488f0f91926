"""Bad input gives a clear error naming what is wrong, a non-zero exit, and nothing
half-written in data/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flows.cli import main
from judgeaudit.config import ConfigError, load_params
from judgeaudit.tables import InputError, read_table


def _with_prompts(tiny_params_file: Path, prompts: Path) -> Path:
    params = yaml.safe_load(tiny_params_file.read_text())
    params["corpus"]["prompts_file"] = str(prompts)
    tiny_params_file.write_text(yaml.safe_dump(params))
    return tiny_params_file


def _run(params: Path, root: Path, capsys) -> tuple[int, str]:
    code = main(["run", "bootstrap", "--params", str(params), "--root", str(root)])
    return code, capsys.readouterr().err


def test_prompts_file_missing_column(tmp_path, tiny_params_file, capsys):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt_id": "1", "prompt": "hi"}) + "\n")
    code, err = _run(_with_prompts(tiny_params_file, prompts), tmp_path / "data", capsys)
    assert code == 2
    assert "prompts.jsonl" in err and "missing required column(s) ['split']" in err
    assert not (tmp_path / "data").exists()


def test_prompts_file_empty(tmp_path, tiny_params_file, capsys):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("")
    code, err = _run(_with_prompts(tiny_params_file, prompts), tmp_path / "data", capsys)
    assert code == 2 and "the file is empty" in err
    assert not (tmp_path / "data").exists()


def test_prompts_file_malformed_jsonl(tmp_path, tiny_params_file, capsys):
    prompts = tmp_path / "prompts.jsonl"
    good = json.dumps({"prompt_id": "1", "split": "train", "prompt": "hi"})
    prompts.write_text(good + "\n" + '{"prompt_id": "2", "split": \n')
    code, err = _run(_with_prompts(tiny_params_file, prompts), tmp_path / "data", capsys)
    assert code == 2 and "line 2: malformed JSON" in err
    assert not (tmp_path / "data").exists()


def test_prompts_file_bad_split_names_row(tmp_path, tiny_params_file, capsys):
    prompts = tmp_path / "prompts.csv"
    prompts.write_text("prompt_id,split,prompt\n1,train,hi\n2,test,there\n")
    code, err = _run(_with_prompts(tiny_params_file, prompts), tmp_path / "data", capsys)
    assert code == 2 and "row 2: field 'split'" in err


def test_read_table_names_empty_field(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": null}\n')
    with pytest.raises(InputError, match=r"row 2: field 'b' is empty"):
        read_table(path, ["a", "b"])


def test_unknown_backend(tmp_path, tiny_params_file, capsys):
    params = yaml.safe_load(tiny_params_file.read_text())
    params["models"]["gen-f"] = {"spec": {"backend": "tensorflow", "path": "x"}}
    tiny_params_file.write_text(yaml.safe_dump(params))
    with pytest.raises(ConfigError, match=r"models\.gen-f\.spec\.backend.*'tensorflow'"):
        load_params(tiny_params_file)
    code, err = _run(tiny_params_file, tmp_path / "data", capsys)
    assert code == 2 and "backend" in err and str(tiny_params_file) in err
    assert not (tmp_path / "data").exists()


def test_dangling_model_reference(tiny_params_file):
    params = yaml.safe_load(tiny_params_file.read_text())
    params["leakage"]["judges"]["gen-f"]["same_family"] = "nope"
    tiny_params_file.write_text(yaml.safe_dump(params))
    with pytest.raises(ConfigError, match="leakage.judges.gen-f.same_family names model 'nope'"):
        load_params(tiny_params_file)


def test_project_params_are_valid():
    params = load_params(Path(__file__).resolve().parents[1] / "params.yaml")
    tiers = {r["tier"] for r in params.judge_roster()}
    assert tiers == {"same", "inheritance", "same_family", "unrelated"}


def test_optional_audits_can_be_left_out(tiny_params_file, tmp_path):
    from judgeaudit.runner.execute import execute

    params = yaml.safe_load(tiny_params_file.read_text())
    for section in ("boat", "pu", "prefix"):
        params.pop(section)
    tiny_params_file.write_text(yaml.safe_dump(params))
    loaded = load_params(tiny_params_file)
    assert loaded.boat is None and loaded.pu is None and loaded.prefix is None
    for stage in ("boat", "pu", "prefix"):  # each writes an empty summary and nothing else, reads nothing
        assert execute(stage, tiny_params_file, tmp_path) == {}
        assert json.loads((tmp_path / stage / "summary.json").read_text()) == {}
