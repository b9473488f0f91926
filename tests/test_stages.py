"""The stages as declared (judgeaudit/stages/*.py): dvc.yaml is what their declarations
give, each stage's code deps follow its own imports, the params a stage is handed hold only
what it declares, and a stage added as one module is found, ordered, written into dvc.yaml
and run."""

from __future__ import annotations

import textwrap

import pandas as pd
import pytest
import yaml

from judgeaudit.runner import dvcyaml, registry
from judgeaudit.runner.params_view import UndeclaredParam, view
from tests.conftest import ROOT


def test_dvc_yaml_is_what_the_declarations_give():
    assert dvcyaml.check(ROOT / "dvc.yaml") is None, "run `judgeaudit deps --write`"


def test_an_edited_stage_declaration_is_caught(tmp_path):
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    doc["stages"]["boat"]["params"].remove("boat")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    assert dvcyaml.check(tmp_path / "dvc.yaml") == "boat: params"


def test_code_deps_follow_the_stage_not_the_whole_library():
    rel = {name: {str(p.relative_to(ROOT)) for p in dvcyaml.stage_code(name)}
           for name in ("robustness", "bootstrap", "leaderboard", "pu")}
    assert "judgeaudit/audits/length_control.py" in rel["robustness"]
    assert "judgeaudit/audits/length_control.py" not in rel["bootstrap"]
    for name, files in rel.items():  # the shared entry, and of the stages only its own module
        assert {"flows/run.py", "flows/stage_flow.py", "judgeaudit/runner/execute.py",
                f"judgeaudit/stages/{name}.py"} <= files
        assert {f for f in files if f.startswith("judgeaudit/stages/")} == {
            "judgeaudit/stages/__init__.py", f"judgeaudit/stages/{name}.py"}
        assert "flows/cli.py" not in files  # serve & co. rerun no stage


def test_every_data_dep_is_an_earlier_stage_output():
    done: set[str] = set()
    for stage in registry.stages():
        written = {o for s in registry.stages() if s.name in done for o in s.outs}
        assert set(stage.deps) <= written, f"{stage.name} reads {set(stage.deps) - written} before it is written"
        done.add(stage.name)
    assert registry.stages()[0].name == "bootstrap" and registry.stages()[-1].name == "report"


def test_each_table_is_written_where_its_writer_says():
    from judgeaudit.stagekit.declare import TABLES, WRITERS

    assert set(TABLES) == set(WRITERS)
    for table, path in TABLES.items():
        assert path.split("/")[0] in registry.stage(WRITERS[table]).outs, table


def test_the_params_view_hands_only_what_is_declared(tiny_params_file):
    from judgeaudit.config import load_params

    params = load_params(tiny_params_file)
    seen = view(params, "audit", ("seed", "audit.confidence", "leakage"))
    assert seen.seed == params.seed and seen.audit.confidence == params.audit.confidence
    assert seen.leakage == params.leakage
    with pytest.raises(UndeclaredParam, match=r"stage audit reads params\.audit\.n_boot"):
        seen.audit.n_boot
    with pytest.raises(UndeclaredParam, match=r"params\.judge"):
        seen.judge.modes
    with pytest.raises(UndeclaredParam, match=r"params\.boat"):
        bool(seen.boat)
    import pickle

    again = pickle.loads(pickle.dumps(seen))  # as a worker receives it
    assert again.audit.confidence == params.audit.confidence
    with pytest.raises(UndeclaredParam):
        again.judge.modes


STAGE_MODULE = '''
"""Stage ``wordcount``: words per response (an example: one module, its params, its test)."""

import pandas as pd

from judgeaudit.stagekit.declare import Stage
from judgeaudit.stagekit.io import publish

STAGE = Stage("wordcount", params=("seed",), deps=("responses",), outs=("wordcount",), reads=("responses",))


def count(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def run(params, layout, tables, pool):
    responses = tables["responses"]
    with_counts = pool.submit(count, texts=list(responses.response)).result()
    out = layout.root / "wordcount"
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"words": with_counts}).to_parquet(out / "counts.parquet")
    return {"rows": len(with_counts), "seed": params.seed}
'''


@pytest.fixture
def example_stage(tmp_path, monkeypatch):
    """A stage added as its own module, in a folder on the stages package's path."""
    import judgeaudit.stages

    folder = tmp_path / "more_stages"
    folder.mkdir()
    (folder / "wordcount.py").write_text(textwrap.dedent(STAGE_MODULE))
    monkeypatch.setattr(judgeaudit.stages, "__path__", [*judgeaudit.stages.__path__, str(folder)])
    for cached in (registry._found, registry.stages):
        cached.cache_clear()
    yield
    for cached in (registry._found, registry.stages):
        cached.cache_clear()


@pytest.mark.slow
def test_a_stage_added_as_one_module_is_found_ordered_declared_and_run(example_stage, tiny_audit, tmp_path):
    """Its module is all it takes: the registry orders it after the stage it reads from,
    dvc.yaml's entry follows from its declaration, and the runner runs it (uses tiny_audit's
    responses)."""
    import shutil

    from judgeaudit.runner.execute import execute

    params, data = tiny_audit
    order = [s.name for s in registry.stages()]
    assert order.index("wordcount") > order.index("respond")
    entry = dvcyaml.stage_entry(registry.stage("wordcount"))
    assert entry["cmd"] == "python -m flows.run wordcount" and "data/responses" in entry["deps"]
    assert "judgeaudit/runner/execute.py" in entry["deps"] or "judgeaudit/runner" in entry["deps"]
    assert entry["params"] == ["cpu_dispatch", "precision", "seed"] and entry["outs"] == ["data/wordcount"]
    root = tmp_path / "data"
    with pytest.raises(FileNotFoundError, match="the 'respond' stage writes it"):
        execute("wordcount", params, root)
    shutil.copytree(data / "responses", root / "responses")
    summary = execute("wordcount", params, root)
    responses = pd.read_parquet(root / "responses" / "responses.parquet")
    assert summary["rows"] == len(responses) > 0
    counts = pd.read_parquet(root / "wordcount" / "counts.parquet").words
    assert list(counts) == [len(t.split()) for t in responses.response]
