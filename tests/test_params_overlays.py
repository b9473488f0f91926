"""params-small.yaml and params-gpu.yaml are overlays of params.yaml (judgeaudit/params_file.py),
and the tests' tiny configuration one in code: each states only what differs from the
base, the base holds everywhere it is silent, and an error names the file and line that
set the bad value."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from judgeaudit import dispatch
from judgeaudit.config import ConfigError, Params, load_params
from judgeaudit.params_file import EXTENDS, Replace, merge, parse_yaml, read_params_file
from tests.tiny import ROOT, tiny_overlay

BASE = ROOT / "params.yaml"
OVERLAYS = ("params-small.yaml", "params-gpu.yaml")


def _merges(value, base) -> bool:
    return isinstance(value, dict) and not isinstance(value, Replace) and isinstance(base, dict)


def _stated(overlay: dict, base: dict, at: tuple = ()) -> list[tuple]:
    """The values an overlay states: each key that replaces (or adds) a value of the base."""
    found = []
    for key, value in overlay.items():
        if _merges(value, base.get(key)):
            found += _stated(value, base[key], (*at, key))
        else:
            found.append((*at, key))
    return found


def _without(overlay: dict, key: tuple) -> dict:
    trimmed = copy.deepcopy(overlay)
    parent = trimmed
    for part in key[:-1]:
        parent = parent[part]
    del parent[key[-1]]
    return trimmed


def _params(base: dict, overlay: dict) -> dict | None:
    """The params an overlay gives, dumped (order-sensitive JSON); None where they are invalid."""
    try:
        return json.dumps(Params.model_validate(merge(base, overlay)).model_dump(mode="json"))
    except ValueError:
        return None


def _overlay(name: str) -> dict:
    overlay = parse_yaml((ROOT / name).read_text())
    assert overlay.pop(EXTENDS) == "params.yaml", f"{name} must extend params.yaml"
    return overlay


def _silent_equal(got: dict, base: dict, overlay: dict, raw: dict, at: tuple = ()) -> list[str]:
    """The places where the overlay says nothing and its params differ from the base's."""
    differ = []
    for key, value in got.items():
        if key not in overlay:
            differ += [".".join(map(str, (*at, key)))] if value != base.get(key) else []
        elif _merges(overlay[key], raw.get(key)) and isinstance(value, dict):
            differ += _silent_equal(value, base[key], overlay[key], raw[key], (*at, key))
    return differ


@pytest.mark.parametrize("name", OVERLAYS)
def test_an_overlay_keeps_the_base_where_it_is_silent(name):
    got, base = load_params(ROOT / name), load_params(BASE)
    assert got != base
    raw = read_params_file(BASE).data
    differ = _silent_equal(got.model_dump(), base.model_dump(), _overlay(name), raw)
    assert not differ, f"{name} is silent on {differ} but its params differ from params.yaml's"


@pytest.mark.parametrize("name", [*OVERLAYS, "tiny"])
def test_an_overlay_states_only_what_differs(name):
    """Each value the overlay states changes the params: without it they would differ."""
    base = read_params_file(BASE).data
    overlay = tiny_overlay() if name == "tiny" else _overlay(name)
    whole = _params(base, overlay)
    assert whole is not None
    stated = _stated(overlay, base)
    assert len(stated) >= 10
    redundant = [".".join(key) for key in stated if _params(base, _without(overlay, key)) == whole]
    assert not redundant, f"{name} restates the base's values of {redundant}"


def test_merge_merges_mappings_and_replaces_everything_else():
    base = {"a": {"x": 1, "y": [1, 2], "z": {"p": 1}}, "b": {"k": 1, "l": 2}, "c": 3, "d": {"q": 1}}
    overlay = {"a": {"y": [3], "new": 0, "z": None}, "b": Replace({"l": 5}), "c": {"m": 1},
               "e": Replace({"n": 1})}
    merged = merge(base, overlay)
    assert merged == {"a": {"x": 1, "y": [3], "z": None, "new": 0}, "b": {"l": 5}, "c": {"m": 1},
                      "d": {"q": 1}, "e": {"n": 1}}
    assert list(merged) == ["a", "b", "c", "d", "e"] and list(merged["a"]) == ["x", "y", "z", "new"]
    assert not any(isinstance(v, Replace) for v in merged.values())  # the settings see plain mappings
    assert base["b"] == {"k": 1, "l": 2}  # the base is left as it was


def _line(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_an_unknown_key_of_an_overlay_names_the_overlay_and_its_line(tmp_path):
    overlay = tmp_path / "params-mine.yaml"
    overlay.write_text(f"extends: {BASE}\naudit:\n  n_bot: 500\n")
    with pytest.raises(ConfigError) as err:
        load_params(overlay)
    assert f"{overlay}:3: audit.n_bot: Extra inputs are not permitted" in str(err.value)


def test_an_error_where_the_overlay_is_silent_names_the_base_and_its_line(tmp_path):
    base = tmp_path / "params.yaml"
    base.write_text(BASE.read_text().replace("audit:\n  n_boot: 2000\n", "audit:\n  n_boot: 20\n"))
    overlay = tmp_path / "params-mine.yaml"
    overlay.write_text("extends: params.yaml\naudit:\n  confidence: 0.9\n")
    with pytest.raises(ConfigError) as err:
        load_params(overlay)
    assert f"{base}:{_line(base, 'n_boot: 20')}: audit.n_boot: Input should be greater" in str(err.value)
    # a cross-check of the whole params names the line of the value the overlay set
    overlay.write_text(f"extends: {BASE}\nleakage:\n  students: [nobody]\n")
    with pytest.raises(ConfigError) as err:
        load_params(overlay)
    assert f"{overlay}:3: (top level): Value error, leakage.students names model 'nobody'" in str(err.value)


def test_an_overlay_may_extend_an_overlay(tmp_path):
    overlay = tmp_path / "params-smaller.yaml"
    overlay.write_text(f"extends: {ROOT / 'params-small.yaml'}\naudit: {{n_boot: 300}}\n")
    got, small = load_params(overlay), load_params(ROOT / "params-small.yaml")
    assert got.audit.n_boot == 300 and got.model_copy(update={"audit": small.audit}) == small
    assert read_params_file(overlay).chain == (overlay, ROOT / "params-small.yaml", ROOT / "params.yaml")


def test_an_extends_cycle_is_refused(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b.yaml\nseed: 1\n")
    (tmp_path / "b.yaml").write_text("seed: 2\nextends: a.yaml\n")
    cycle = r"b.yaml:2: extends makes a cycle \(.*a.yaml -> .*b.yaml -> .*a.yaml\)"
    with pytest.raises(ConfigError, match=cycle):
        load_params(tmp_path / "a.yaml")
    (tmp_path / "self.yaml").write_text("extends: ./self.yaml\n")
    with pytest.raises(ConfigError, match="self.yaml:1: extends makes a cycle"):
        load_params(tmp_path / "self.yaml")


def test_extends_names_a_file_that_exists(tmp_path):
    overlay = tmp_path / "params-mine.yaml"
    overlay.write_text("seed: 3\nextends: nowhere.yaml\n")
    with pytest.raises(ConfigError, match=f"{overlay}:2: extends: no such params file"):
        load_params(overlay)
    overlay.write_text("extends: [params.yaml]\n")
    with pytest.raises(ConfigError, match=f"{overlay}:1: extends: give the params file"):
        load_params(overlay)
    overlay.write_text(f"extends: {BASE}\nmodels: !replace [gen-formal]\n")
    with pytest.raises(ConfigError, match=f"{overlay}:2: not valid YAML: !replace tags a mapping only"):
        load_params(overlay)


def test_cpu_dispatch_is_read_through_the_chain(tmp_path):
    """`python -m flows.run` sets the dispatch before NumPy loads, from the raw chain."""
    base = tmp_path / "params.yaml"
    base.write_text(BASE.read_text().replace("cpu_dispatch: default", "cpu_dispatch: compatible"))
    overlay = tmp_path / "params-mine.yaml"
    overlay.write_text("extends: params.yaml\nseed: 7\n")
    assert dispatch.setting_in(str(overlay)) == "compatible" == load_params(overlay).cpu_dispatch
    overlay.write_text("extends: params.yaml\ncpu_dispatch: avx2\n")
    assert dispatch.setting_in(str(overlay)) == "avx2"


def test_the_house_styles_are_the_vocabularys_in_its_order():
    from judgeaudit.generation import styles
    from judgeaudit.vocabulary import STYLES

    assert tuple(styles._STYLES) == STYLES  # a seeded rng.choice(STYLES) draws by position
