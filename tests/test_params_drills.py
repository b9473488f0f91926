"""Drills: params that would make an audit run differently from what was asked are
refused by `check-params`, with the file, the line and the field named."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli import main

PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"


def _check(tmp_path: Path, text: str, capsys) -> tuple[int, str]:
    path = tmp_path / "params.yaml"
    path.write_text(text)
    code = main(["check-params", "--params", str(path)])
    return code, capsys.readouterr().err


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_misspelt_judge_under_modes_is_refused(tmp_path, capsys):
    text = PARAMS.read_text().replace("  modes: {}", "  modes: {gen-formall: prompted}")
    code, err = _check(tmp_path, text, capsys)
    assert code == 2
    assert f"params.yaml:{_line_of(text, 'gen-formall')}:" in err
    assert "judge.modes.gen-formall names no judge" in err and "'gen-formal'" in err


@pytest.mark.parametrize("template,problem", [
    ("Q {question} A {answer_a} B {answr_b}", "missing {answer_b}; unknown {answr_b}"),
    ("Q {question} A {answer_a}", "missing {answer_b}"),
    ("Q {question} A {answer_a} B {answer_b} {", "not a valid template"),
])
def test_a_judge_template_must_have_exactly_its_placeholders(tmp_path, capsys, template, problem):
    text = PARAMS.read_text().replace("judge:\n  mode: likelihood",
                                      f"judge:\n  prompt_template: {template!r}\n  mode: likelihood")
    code, err = _check(tmp_path, text, capsys)
    assert code == 2 and problem in err
    assert f"params.yaml:{_line_of(text, 'prompt_template')}: judge.prompt_template:" in err


def test_other_templates_are_checked_too(tmp_path, capsys):
    text = PARAMS.read_text().replace("{response}\"\n    sentiment", "{answer}\"\n    sentiment")
    code, err = _check(tmp_path, text, capsys)
    assert code == 2 and "templates.length must have exactly the placeholders {response}" in err
    text = PARAMS.read_text().replace('template: "Q: {prompt}\\nA:"', 'template: "Q: {question}\\nA:"')
    code, err = _check(tmp_path, text, capsys)
    assert code == 2 and "embedded.template" in err and "missing {prompt}" in err


def test_a_duplicated_key_is_refused_with_both_lines(tmp_path, capsys):
    text = PARAMS.read_text() + "\njudge:\n  mode: prompted\n"
    code, err = _check(tmp_path, text, capsys)
    first = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("judge:"))
    second = len(text.splitlines()) - 1
    assert code == 2
    assert f"params.yaml:{second}: not valid YAML: key 'judge' is given twice (first on line {first})" in err


def test_the_shipped_params_pass(capsys):
    for name in ("params.yaml", "params-gpu.yaml", "params-small.yaml"):
        path = PARAMS.parent / name
        if path.exists():
            assert main(["check-params", "--params", str(path)]) == 0, capsys.readouterr().err


def test_a_params_file_that_is_not_utf8_is_refused_naming_the_file(tmp_path, capsys):
    path = tmp_path / "params.yaml"
    path.write_bytes(PARAMS.read_bytes().replace(b"seed: 1234", b"seed: 1234 # caf\xe9", 1))
    code = main(["check-params", "--params", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and "UTF-8" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("old,new,field,problem", [
    ("seed: 1234", 'seed: "1234"', "seed", "valid integer"),
    ("  runs: 5", "  runs: true", "boat.runs", "valid integer"),
    ("  confidence: 0.95", '  confidence: "0.95"', "audit.confidence", "valid number"),
    ("  confidence: 0.95", "  confidence: .nan", "audit.confidence", "finite number"),
    ("  n_boot: 2000", "  n_boot: 2000.0", "audit.n_boot", "valid integer"),
])
def test_a_value_of_the_wrong_type_is_refused_not_converted(tmp_path, capsys, old, new, field, problem):
    """YAML says what type a value is: a quoted number is a string, `true` a bool; the
    settings take neither for a number (pydantic's lax mode would read "1234" as 1234 and
    true as 1), and a NaN is not a number a confidence can be compared with."""
    text = PARAMS.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    code, err = _check(tmp_path, text, capsys)
    assert code == 2, err
    assert f"params.yaml:{_line_of(text, new.strip())}: {field}: " in err and problem in err
    assert "less than" not in err


def test_tiny_params_still_load():
    from judgeaudit.config import Params
    from tests.tiny import tiny_params

    assert Params.model_validate(tiny_params()).seed == 1234
