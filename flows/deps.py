"""The code each pipeline stage runs, computed from the source (ast), for checking
dvc.yaml's ``deps`` and keying Prefect's task cache (tasks/cache.py): a stage's command
``python -m flows.run <stage>`` (what ``judgeaudit run <stage>`` calls) loads the stage's
own module flows/stage/<stage>.py (its tasks and its flow) by name.

flows/run.py serves every stage, so it is followed function by function from its entry (the
names a function uses, the same module's functions it calls); the stage's module counts
whole, and so does every project module it imports, with every project module those
import anywhere in their files (function-local imports included) and their packages'
``__init__``. No stage module imports another, so an edit to one stage's flow reruns
that stage only."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("judgeaudit", "flows", "tasks")
HUBS = ("flows.run",)
ENTRY = ("flows.run", "run")
# hub functions that run other stages (the whole-DAG flows), not part of any one stage
DISPATCH: set[tuple[str, str]] = set()


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
def _tree(module: str) -> ast.Module:
    return ast.parse(module_file(module).read_text(), filename=str(module_file(module)))


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    if module_file(module).name != "__init__.py":
        parts = parts[:-1]
    base = parts[: len(parts) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, nodes: list[ast.AST]) -> dict[str, str]:
    """name bound -> the project module it names (``from a import b``: a.b when a module, else a)."""
    bound = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                bound[alias.asname or alias.name] = sub if module_file(sub) else source
    return {k: v for k, v in bound.items() if module_file(v) is not None}


def _all_imports(module: str) -> set[str]:
    """Every project module a library module imports, anywhere in its file."""
    nodes = [n for n in ast.walk(_tree(module)) if isinstance(n, (ast.Import, ast.ImportFrom))]
    found = set(_imports(module, nodes).values())
    for node in nodes:  # `import judgeaudit.x.y` binds judgeaudit but loads judgeaudit.x.y
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if module_file(a.name)}
    return found


def _with_packages(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1) if module_file(".".join(parts[:i]))}


def library_closure(modules: set[str]) -> set[str]:
    """The modules given, every project module they import (transitively), and their packages."""
    seen: set[str] = set()
    todo = [m for mod in modules for m in _with_packages(mod)]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        todo += [m for imp in _all_imports(mod) for m in _with_packages(imp)]
    return seen


def _functions(module: str) -> dict[str, ast.AST]:
    return {n.name: n for n in _tree(module).body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _module_imports(module: str) -> dict[str, str]:
    return _imports(module, [n for n in _tree(module).body if isinstance(n, (ast.Import, ast.ImportFrom))])


def hub_closure(module: str, function: str) -> set[str]:
    """Library modules reached from a hub function, following hub functions by name."""
    library: set[str] = set()
    seen: set[tuple[str, str]] = set()
    todo = [(module, function)]
    while todo:
        mod, fn = todo.pop()
        if (mod, fn) in seen or (mod, fn) in DISPATCH:
            continue
        seen.add((mod, fn))
        node = _functions(mod)[fn]
        local = _imports(mod, [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))])
        names = {**_module_imports(mod), **local}
        defined = _functions(mod)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in defined and sub.id != fn:
                todo.append((mod, sub.id))
            elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id in names:
                target = names[sub.value.id]
                if target in HUBS and sub.attr in _functions(target):
                    todo.append((target, sub.attr))
                elif target not in HUBS:
                    library.add(target)
            if isinstance(sub, ast.Name) and sub.id in names and names[sub.id] not in HUBS:
                library.add(names[sub.id])
        # a from-import of a function binds the function's module
        for imported in local.values():
            if imported not in HUBS:
                library.add(imported)
    return library


def stage_files(name: str) -> set[Path]:
    """Every project file stage ``name`` runs: the CLI's entry, the stage's module and
    their import closure."""
    mods = library_closure(hub_closure(*ENTRY) | {f"flows.stage.{name}"})
    mods |= {m for hub in HUBS for m in _with_packages(hub)}
    return {module_file(m) for m in mods}


def covered(path: Path, deps: list[str]) -> bool:
    """Whether a dvc.yaml deps list (files and folders, relative to the repo) covers ``path``."""
    rel = path.relative_to(ROOT)
    return any(rel == Path(d) or Path(d) in rel.parents for d in deps)


def _package_data(module_path: Path) -> set[Path]:
    """Data a package ships beside its modules (folders without ``__init__``, e.g. published figures)."""
    return {p for d in module_path.parent.iterdir() if d.is_dir() and not (d / "__init__.py").exists()
            and d.name != "__pycache__" for p in d.rglob("*") if p.is_file() and p.suffix != ".pyc"}


def stage_code(name: str) -> set[Path]:
    """The stage's files with the data its packages ship."""
    files = stage_files(name)
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
        top = None
        for parent in reversed(rel.parents[:-1]):  # the widest folder wholly covered
            if _source_files(ROOT / parent) <= files:
                top = parent
                break
        out.append(str(top if top is not None else rel))
    return sorted(set(out))


CODE_ROOTS = PACKAGES  # deps under these are code, recomputed; any other dep (data/...) is kept


def _rewrite_lists(text: str, key: str, lists: dict[str, list[str]], keep=lambda item: False) -> str:
    """dvc.yaml's text with each stage's ``key:`` list replaced by ``lists[stage]``, its
    items for which ``keep`` holds kept after them (comments and everything else as written)."""
    out, stage, inside, indent = [], None, False, ""
    for line in text.splitlines():
        stripped = line.strip()
        if inside:
            if stripped.startswith("- ") and line.startswith(indent):
                if keep(stripped[2:]):
                    out.append(line)
                continue
            inside = False
        if line.startswith("  ") and not line.startswith("   ") and stripped.endswith(":"):
            stage = stripped[:-1]
        out.append(line)
        if stripped == f"{key}:" and stage in lists:
            indent = line[: len(line) - len(line.lstrip())] + "  "
            out += [f"{indent}- {item}" for item in lists[stage]]
            inside = True
    return "\n".join(out) + "\n"


def rewrite_deps(text: str, code: dict[str, list[str]]) -> str:
    """dvc.yaml's text with each stage's code deps replaced by ``code[stage]`` (data deps,
    comments and everything else kept as written)."""
    return _rewrite_lists(text, "deps", code, keep=lambda dep: dep.split("/")[0] not in CODE_ROOTS)


def stage_deps(dvc_yaml: Path = ROOT / "dvc.yaml") -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per stage of dvc.yaml: the code deps it needs (computed), and the needed files its deps miss."""
    import yaml

    from flows.registry import NAMES

    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    unknown = sorted(set(stages) - set(NAMES))
    if unknown:
        raise ValueError(f"{dvc_yaml}: stage(s) {unknown} are not declared in flows/registry.py")
    need, missing = {}, {}
    for name, stage in stages.items():
        files = stage_code(name)
        need[name] = code_deps(files)
        missing[name] = sorted(str(f.relative_to(ROOT)) for f in files if not covered(f, stage.get("deps", [])))
    return need, missing


def stage_params(name: str) -> list[str]:
    """The params sections stage ``name`` reads, as dvc.yaml lists them: what its tasks'
    cache keys read (``artifact_cache``) and what its flow reads itself (the module's
    ``PARAMS``, and flows/run.py's: every stage's entry). One declaration for both caches:
    a section is in a task's cache key exactly when DVC reruns the stage for it."""
    import importlib

    from prefect import Task

    from flows.run import PARAMS as ENTRY_PARAMS
    from judgeaudit.config import Params

    module = importlib.import_module(f"flows.stage.{name}")
    sections = set(getattr(module, "PARAMS", ())) | set(ENTRY_PARAMS)
    for obj in vars(module).values():
        if isinstance(obj, Task):
            sections |= set(getattr(obj.cache_policy, "sections", ()))
    whole = {s for s in sections if "." not in s}
    kept = whole | {s for s in sections if s.split(".")[0] not in whole}
    order = list(Params.model_fields)
    return sorted(kept, key=lambda s: (order.index(s.split(".")[0]), s))


def rewrite_params(text: str, params: dict[str, list[str]]) -> str:
    """dvc.yaml's text with each stage's ``params:`` list replaced by ``params[stage]``
    (a stage with no ``params:`` list, which reads none, is left without one)."""
    return _rewrite_lists(text, "params", params)
