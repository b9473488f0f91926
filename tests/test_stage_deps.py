"""dvc.yaml against the code: every stage's deps cover the files its import closure runs
(so `dvc status` cannot call a stage with edited code up to date), each data dep is what an
earlier stage writes, and the stage lists of dvc.yaml, the CLI and the flows agree."""

from __future__ import annotations

from pathlib import Path

import yaml

from flows.deps import code_deps, covered, rewrite_deps, rewrite_params, stage_deps, stage_files, stage_params
from tests.conftest import ROOT

STAGES_YAML = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]


def test_dvc_yaml_deps_cover_each_stage_import_closure():
    _, missing = stage_deps(ROOT / "dvc.yaml")
    gaps = {stage: files for stage, files in missing.items() if files}
    assert not gaps, f"dvc.yaml's deps miss code the stages run (fix: `judgeaudit deps --write`): {gaps}"


def test_dvc_params_are_what_the_task_cache_keys_and_flows_read():
    """One declaration for both caches: a stage's dvc.yaml params are the sections its
    tasks' cache keys read plus its flow's PARAMS, so DVC and Prefect rerun on the same
    changes (the tiny `dvc repro` test checks them against the sections actually read)."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    wrong = {name: (stage.get("params", []), stage_params(name)) for name, stage in stages.items()
             if stage.get("params", []) != stage_params(name)}
    assert not wrong, f"run `judgeaudit deps --write`: {wrong}"
    assert {"judge", "leakage"} <= set(stage_params("boat"))  # the probe's judges key its cache
    assert "leakage" in stage_params("robustness") and "leakage.judges" not in stage_params("robustness")


def test_rewrite_params_replaces_only_the_params_lists():
    text = (ROOT / "dvc.yaml").read_text()
    changed = rewrite_params(text, {"boat": ["seed", "boat"]})
    assert yaml.safe_load(changed)["stages"]["boat"]["params"] == ["seed", "boat"]
    before, after = yaml.safe_load(text)["stages"], yaml.safe_load(changed)["stages"]
    assert {k: v for k, v in before.items() if k != "boat"} == {k: v for k, v in after.items() if k != "boat"}
    assert {k: v for k, v in before["boat"].items() if k != "params"} == \
        {k: v for k, v in after["boat"].items() if k != "params"}


def test_closure_follows_the_stage_not_the_whole_library():
    rel = {name: {str(p.relative_to(ROOT)) for p in stage_files(name)}
           for name in ("robustness", "bootstrap", "leaderboard", "pu")}
    # the example: robustness runs the length-controlled GLM, bootstrap does not
    assert "judgeaudit/audits/length_control.py" in rel["robustness"]
    assert "judgeaudit/audits/length_control.py" not in rel["bootstrap"]
    assert {"judgeaudit/audits/self_preference.py", "judgeaudit/sources/alpacaeval_boards.py"} <= rel["leaderboard"]
    assert {"judgeaudit/judging/pairwise.py", "judgeaudit/judging/student_pairs.py",
            "judgeaudit/models/encoder.py"} <= rel["pu"]
    for name, files in rel.items():  # the entry every stage shares, and its own module only
        assert {"flows/run.py", "flows/registry.py", "flows/server.py", f"flows/stage/{name}.py", "judgeaudit/config.py",
                "judgeaudit/tables.py"} <= files
        assert "flows/stages.py" not in files and "flows/cli.py" not in files  # serve & co. rerun no stage
        assert {f for f in files if f.startswith("flows/stage/")} == {"flows/stage/__init__.py",
                                                                       f"flows/stage/{name}.py"}


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
    from flows.run import STAGE_NAMES
    from flows.registry import NAMES
    from flows.stages import STAGES

    assert tuple(STAGES_YAML) == STAGE_NAMES == NAMES == tuple(STAGES)
    for name, stage in STAGES_YAML.items():
        assert stage["cmd"] == f"python -m flows.run {name}", f"dvc.yaml stage {name} runs {stage['cmd']!r}"
    written: list[str] = []
    for name, stage in STAGES_YAML.items():
        for dep in stage.get("deps", []):
            if dep.split("/")[0] == "data":
                assert any(dep == out or Path(out) in Path(dep).parents for out in written), \
                    f"stage {name} reads {dep}, which no earlier stage writes"
        written += stage.get("outs", [])


def test_the_declared_reads_and_writes_match_dvc_yaml_and_the_stage_order():
    """A table a stage declares it reads is a DVC dep of it and written (a DVC out) by an
    earlier declared stage; what a stage declares it writes is among its outs."""
    from flows.registry import table_path
    from flows.registry import STAGES, WRITTEN_BY
    from judgeaudit.layout import Layout

    layout = Layout(Path("data"))
    done: set[str] = set()
    for stage in STAGES:
        spec = STAGES_YAML[stage.name]
        for table in stage.reads:
            path = table_path(table, layout)
            assert covered(ROOT / path, spec["deps"]), f"{stage.name} reads {path}, not among its dvc.yaml deps"
            assert WRITTEN_BY[table] in done, f"{stage.name} reads {table}, written by a later stage"
        for table in stage.writes:
            path = table_path(table, layout) if table in ("prompts", "synthetic", "student_index", "responses",
                                                         "judgments", "win_rates", "pls") else None
            if path is not None:
                assert covered(ROOT / path, spec["outs"]), f"{stage.name} writes {path}, not among its outs"
        done.add(stage.name)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; ``from X import Y`` gives X and X.Y)."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_a_stage_declares_a_pool_where_its_flow_runs_one():
    """The fork server starts with a stage (its workers' imports beside the stage's own)
    exactly where the stage's flow runs its tasks over worker processes."""
    from flows.registry import STAGES

    for stage in STAGES:
        source = (ROOT / Path(*stage.module.split("."))).with_suffix(".py").read_text()
        assert ("parallel(" in source) == stage.pool, f"{stage.name}: pool={stage.pool} in flows/registry.py"


def test_layers_stage_modules_import_no_other_stage_module():
    """The library's layers, checked on the source: a stage's library module
    (judgeaudit/pipeline/X.py) imports no other stage's; the lower layers (models,
    generation, training, judging, attacks, audits, sources, schemas) import neither the
    stages nor the report, nor take the whole ``Params``; nothing in judgeaudit imports
    Prefect, flows or tasks."""
    lib = ROOT / "judgeaudit"
    bad = []
    for path in lib.rglob("*.py"):
        rel, imports = path.relative_to(ROOT), _imports(path)
        top = path.relative_to(lib).parts[0]
        bad += [(str(rel), m) for m in imports if m.split(".")[0] in {"prefect", "flows", "tasks"}]
        if top == "pipeline":
            bad += [(str(rel), m) for m in imports if m.startswith("judgeaudit.pipeline")]
        elif top not in {"report", "cli", "__init__.py", "config.py", "tables.py", "layout.py", "resolve.py"}:
            bad += [(str(rel), m) for m in imports if m.startswith(("judgeaudit.pipeline", "judgeaudit.report"))]
        if top in {"models", "generation", "training", "judging", "attacks", "audits", "sources", "schemas"}:
            # typed settings handed down, never the whole params (judgeaudit/resolve.py: the door)
            bad += [(str(rel), m) for m in imports if m in {"judgeaudit.config.Params", "judgeaudit.config.load_params"}]
    assert not bad, f"imports across layers: {bad}"
