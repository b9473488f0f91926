"""The import structure, checked on the source: the layers (flows over the runner over the
stages over the library's lower floors), and no import circle anywhere in the project."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT


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


def test_layers_stage_modules_import_no_other_stage_module():
    """The library's layers, checked on the source: a stage (judgeaudit/stages/X.py, its
    declaration and its computations) imports no other stage; the lower layers
    (models, generation, training, judging, attacks, audits, sources, schemas) import neither
    the stages, the runner nor the report, nor take the whole ``Params``; nothing in
    judgeaudit imports Prefect or flows."""
    lib = ROOT / "judgeaudit"
    bad = []
    for path in lib.rglob("*.py"):
        rel, imports = path.relative_to(ROOT), _imports(path)
        top = path.relative_to(lib).parts[0]
        bad += [(str(rel), m) for m in imports if m.split(".")[0] in {"prefect", "flows", "tasks"}]
        if top == "stages":  # a stage's module: no other stage's
            bad += [(str(rel), m) for m in imports if m.startswith("judgeaudit.stages.")
                    and m.split(".")[2] != path.stem and path.stem != "__init__"]
        elif top not in {"report", "cli", "runner", "__init__.py"}:  # above the stages and the report
            bad += [(str(rel), m) for m in imports if m.startswith(
                ("judgeaudit.report", "judgeaudit.stages", "judgeaudit.runner"))]
        if top in {"stages", "stagekit"}:  # the runner runs the stages: it is above them
            bad += [(str(rel), m) for m in imports if m.startswith("judgeaudit.runner")]
        if top in {"models", "generation", "training", "judging", "attacks", "audits", "sources", "schemas"}:
            # typed settings handed down, never the whole params (judgeaudit/resolve.py: the door)
            bad += [(str(rel), m) for m in imports if m in {"judgeaudit.config.Params", "judgeaudit.config.load_params"}]
    assert not bad, f"imports across layers: {bad}"


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def test_no_import_circle():
    """No module reaches itself through the project's imports (function-local ones too)."""
    files = {_module(p): p for top in ("judgeaudit", "flows") for p in (ROOT / top).rglob("*.py")}
    graph = {m: {i if i in files else i.rsplit(".", 1)[0] for i in _imports(p)} & set(files) - {m}
             for m, p in files.items()}
    # a package's __init__ is not an edge back to its own modules
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            raise AssertionError("import circle: " + " -> ".join(path[path.index(node):] + [node]))
        if node in done:
            return
        for dep in sorted(graph[node]):
            visit(dep, path + [node])
        done.add(node)

    for module in sorted(graph):
        visit(module, [])


def test_no_module_over_450_lines_and_the_orchestration_within_600():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines())
             for top in ("judgeaudit", "flows") for p in (ROOT / top).rglob("*.py")}
    assert not {p: n for p, n in sizes.items() if n > 450}
    assert sum(n for p, n in sizes.items() if p.startswith("flows/")) <= 600
