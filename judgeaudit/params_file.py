"""A params file read as YAML: strictly (a key given twice is an error), its ``extends``
chain resolved, and each value's file and line kept for the error messages.

An overlay names the file it overlays, relative to itself, and states only what differs::

    extends: params.yaml
    audit: {n_boot: 1000}          # merged: audit.confidence stays the base's
    leaderboard: null              # replaced: any value but a mapping replaces
    models: !replace {...}         # a mapping tagged !replace replaces the base's whole

Mappings merge key by key, recursively; lists, scalars and null replace. An overlay may
extend another overlay. A leaf below the typed settings (judgeaudit/config/), so that
``dispatch.setting_in`` reads ``cpu_dispatch`` through the chain before NumPy loads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

EXTENDS = "extends"
REPLACE_TAG = "!replace"

Key = tuple[str, ...]  # a value's place in the params: ("leakage", "judges", "gen-formal")


class ConfigError(ValueError):
    """params.yaml is wrong; the message names the file and the field."""


class Replace(dict):
    """A mapping that replaces the one it overlays instead of merging into it (``!replace``)."""


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (plain PyYAML keeps
    the last one silently, so a pasted-in second ``judge:`` would replace the first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice (first on line {seen[key] + 1}); "
                    "YAML keeps only the last, so one of them would be ignored", key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def _replace(loader: _StrictLoader, node: yaml.Node) -> Replace:
    if not isinstance(node, yaml.MappingNode):
        raise yaml.constructor.ConstructorError(None, None, f"{REPLACE_TAG} tags a mapping only (any other "
                                                "value replaces the base's anyway)", node.start_mark)
    return Replace(loader.construct_mapping(node, deep=True))


_StrictLoader.add_constructor(REPLACE_TAG, _replace)


def parse_yaml(text: str) -> Any:
    """One YAML document, strictly: a key given twice is an error; ``!replace`` a ``Replace``."""
    return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 -- a SafeLoader subclass


def plain(value: Any) -> Any:
    """``value`` with every ``Replace`` turned into a plain dict (what the settings validate)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _merges(base: Any, value: Any) -> bool:
    return isinstance(value, dict) and not isinstance(value, Replace) and isinstance(base, dict)


def merge(base: Any, overlay: Any) -> Any:
    """``overlay`` over ``base``: a mapping merges into the base's mapping key by key (the
    base's keys keep their order, new keys follow in the overlay's); a ``Replace`` mapping
    and any other value (a list, a scalar, null) replace the base's value."""
    if not _merges(base, overlay):
        return plain(overlay)
    merged = plain(base)
    for key, value in overlay.items():
        merged[key] = merge(base[key], value) if key in base else plain(value)
    return merged


def _replaced(base: dict, overlay: dict, at: Key = ()) -> list[Key]:
    """The places where ``overlay`` replaces a value of ``base`` (or adds one)."""
    found = []
    for key, value in overlay.items():
        here = (*at, str(key))
        if key in base and _merges(base[key], value):
            found += _replaced(base[key], value, here)
        else:
            found.append(here)
    return found


def _lines(node: yaml.Node | None, at: Key = ()) -> dict[Key, int]:
    """Every key's and list item's 1-based line in a composed YAML document."""
    lines: dict[Key, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value in node.value:
            here = (*at, str(key_node.value))
            lines[here] = key_node.start_mark.line + 1
            lines |= _lines(value, here)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            here = (*at, str(i))
            lines[here] = item.start_mark.line + 1
            lines |= _lines(item, here)
    return lines


@dataclass(frozen=True)
class ParamsFile:
    """A params file with its chain merged: ``data`` (plain values), and where each came from."""

    data: dict
    places: dict[Key, tuple[Path, int]]
    chain: tuple[Path, ...]  # the file read first, then the file it extends, and so on

    def place(self, loc: tuple) -> tuple[Path, int | None]:
        """The file and line that set ``loc`` or its deepest enclosing key (the file read
        first and no line where the params hold none of it)."""
        key = tuple(str(part) for part in loc)
        for n in range(len(key), 0, -1):
            if key[:n] in self.places:
                return self.places[key[:n]]
        return self.chain[0], None


def read_params_file(path: str | Path, _within: tuple[Path, ...] = ()) -> ParamsFile:
    """Read ``path`` and the files it extends; raise ConfigError naming the file and line of
    invalid YAML, a missing file, or an ``extends`` that comes back to a file of its chain."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such params file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                          f"{exc.start}); save the params file as UTF-8") from None
    try:
        raw = parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    lines = _lines(yaml.compose(text, Loader=_StrictLoader))
    places = {key: (path, line) for key, line in lines.items() if key[0] != EXTENDS}
    parent = raw.pop(EXTENDS, None)
    if parent is None:
        return ParamsFile(plain(raw), places, (path,))
    where = f"{path}:{lines[(EXTENDS,)]}"
    if not isinstance(parent, str):
        raise ConfigError(f"{where}: {EXTENDS}: give the params file this one overlays, relative to it "
                          f"(got {parent!r})")
    base_path, chain = path.parent / parent, (*_within, path)
    if any(base_path.resolve() == p.resolve() for p in chain):
        cycle = " -> ".join(str(p) for p in (*chain, base_path))
        raise ConfigError(f"{where}: {EXTENDS} makes a cycle ({cycle}): a params file cannot extend itself")
    if not base_path.is_file():
        raise ConfigError(f"{where}: {EXTENDS}: no such params file {base_path}")
    base = read_params_file(base_path, chain)
    replaced = _replaced(base.data, raw)
    kept = {key: place for key, place in base.places.items()
            if not any(key[:len(r)] == r for r in replaced)}
    return ParamsFile(merge(base.data, raw), kept | places, (path, *base.chain))
