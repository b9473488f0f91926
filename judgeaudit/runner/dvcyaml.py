"""dvc.yaml, written from the stages' declarations: each stage's command, the code it runs
(its module's import closure, computed from the source, with the shared entry's), the data
it reads and writes, the params it declares, and the metrics and plots. `judgeaudit deps`
checks the committed file against this; `judgeaudit deps --write` rewrites it."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import yaml

from judgeaudit.stagekit.declare import RUNTIME, Stage
from judgeaudit.runner.registry import stages

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("judgeaudit", "flows", "tasks")
# every stage's command runs these whole (and what they import); each stage adds its own module
ENTRY = ("flows.run", "flows.stage_flow")
HEADER = """\
# Written by `judgeaudit deps --write` from the stages' declarations (judgeaudit/stages/*.py):
# edit those, not this file. Each cmd runs one stage (python -m flows.run STAGE): on its own,
# or as a Prefect flow run when PREFECT_API_URL names a server.
"""


def module_file(module: str) -> Path | None:
    """The file of a project module (a package's ``__init__.py``); None outside the project."""
    if module.split(".")[0] not in PACKAGES:
        return None
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@cache
def _imports(module: str) -> frozenset[str]:
    """Every project module ``module`` imports, anywhere in its file (function-local too)."""
    path = module_file(module)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # followed by name only: a relative one would drop out of the deps
                raise ValueError(f"{path}:{node.lineno}: write the import absolute (judgeaudit deps follows names)")
            base = node.module or ""
            found |= {f"{base}.{a.name}" if module_file(f"{base}.{a.name}") else base for a in node.names}
    return frozenset(m for m in found if module_file(m))


def _with_packages(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1) if module_file(".".join(parts[:i]))}


def closure(modules: set[str]) -> set[str]:
    """The modules given, every project module they import (transitively), and their packages."""
    seen: set[str] = set()
    todo = [m for mod in modules for m in _with_packages(mod)]
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            todo += [m for imp in _imports(mod) for m in _with_packages(imp)]
    return seen


def _package_data(init: Path) -> set[Path]:
    """Data a package ships beside its modules (folders without ``__init__``, e.g. published figures)."""
    return {p for d in init.parent.iterdir() if d.is_dir() and not (d / "__init__.py").exists()
            and d.name != "__pycache__" for p in d.rglob("*") if p.is_file() and p.suffix != ".pyc"}


def stage_code(name: str) -> set[Path]:
    """Every project file stage ``name`` runs, with the data its packages ship."""
    files = {module_file(m) for m in closure({*ENTRY, f"judgeaudit.stages.{name}"})}
    return files | {p for f in files if f.name == "__init__.py" for p in _package_data(f)}


def _source_files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def code_deps(files: set[Path]) -> list[str]:
    """``files`` as dvc.yaml deps: a folder where every file under it is among them."""
    out: list[str] = []
    for path in sorted(files):
        rel = path.relative_to(ROOT)
        if any(Path(d) in rel.parents for d in out):
            continue
        top = next((parent for parent in reversed(rel.parents[:-1])
                    if _source_files(ROOT / parent) <= files), None)
        out.append(str(top if top is not None else rel))
    return sorted(set(out))


def stage_entry(s: Stage, data: str = "data") -> dict:
    entry: dict = {"cmd": f"python -m flows.run {s.name}",
                   "deps": code_deps(stage_code(s.name)) + [f"{data}/{d}" for d in s.deps],
                   "params": list(dict.fromkeys((*RUNTIME, *s.params))),
                   "outs": [{f"{data}/{o}": {"persist": True}} if o in s.persist else f"{data}/{o}"
                            for o in s.outs]}
    if s.committed:  # beside dvc.lock in git, so `dvc metrics diff` on a fresh clone has the committed figures
        entry["metrics"] = [{f"{data}/{o}": {"cache": False}} for o in s.committed]
    return entry


def render(data: str = "data") -> str:
    """The whole dvc.yaml."""
    declared = stages()
    doc = {"stages": {s.name: stage_entry(s, data) for s in declared},
           "metrics": [f"{data}/{m}" for s in declared for m in s.metrics],
           "plots": [{f"{data}/{path}": props} if props else f"{data}/{path}"
                     for s in declared for path, props in s.plots]}
    return HEADER + yaml.safe_dump(doc, sort_keys=False, width=110)


def check(path: Path = ROOT / "dvc.yaml") -> str | None:
    """None when ``path`` is what the declarations give, else what differs (by stage)."""
    want = yaml.safe_load(render())
    have = yaml.safe_load(path.read_text()) if path.is_file() else {}
    if want == have:
        return None
    lines = []
    for name in sorted(set(want["stages"]) | set(have.get("stages", {}))):
        w, h = want["stages"].get(name), have.get("stages", {}).get(name)
        if w != h:
            keys = sorted(k for k in set(w or {}) | set(h or {}) if (w or {}).get(k) != (h or {}).get(k))
            lines.append(f"{name}: {'not declared' if w is None else 'missing' if h is None else ', '.join(keys)}")
    for key in ("metrics", "plots"):
        if want.get(key) != have.get(key):
            lines.append(f"{key} differ")
    return "; ".join(lines)
