"""The order a stage hands its units to the worker pool: the longest first, so the two
workers finish together (the tables keep params order either way)."""

from __future__ import annotations

from pathlib import Path

from judgeaudit.config import load_params
from judgeaudit.stages import bootstrap, prefix, score_range
from tests.conftest import ROOT

PARAMS = load_params(ROOT / "params.yaml")


def test_build_cost_ranks_by_size_and_epochs_and_inherits_the_parents_size():
    cost = {name: bootstrap.build_cost(PARAMS, name) for name in PARAMS.models}
    assert cost["student-c"] > cost["student-b"] > cost["student-a"]  # medium > small > tiny
    assert cost["gen-formal"] == cost["unrelated"]  # same size and epochs
    # inh-formal: gen-formal's size, one epoch instead of three
    assert cost["inh-formal"] * 3 == cost["gen-formal"]


def test_prefix_units_cost_by_items_and_weights(tmp_path: Path):
    for name, size in (("student-a", 100), ("student-b", 300), ("student-c", 900)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.safetensors").write_bytes(b"\0" * size)
    units = prefix.prefix_units(PARAMS)
    longest = sorted(units, key=lambda u: -prefix.unit_cost(PARAMS, *u, tmp_path))
    sizes = {"student-a": 100, "student-b": 300, "student-c": 900}
    items = {"synthetic": PARAMS.prefix.n_items, "hh-rlhf": PARAMS.prefix.hh_rlhf.n_items}
    weight = {u: items[u[0]] * sizes[u[1]] for u in units if u[1] in sizes}
    # the costliest unit is the one with the most items times weights, the cheapest the fewest
    assert longest[0] == max(weight, key=weight.get) and longest[-1] == min(weight, key=weight.get)
    hh, syn = (prefix.unit_cost(PARAMS, s, "student-b", tmp_path) for s in ("hh-rlhf", "synthetic"))
    assert hh / syn == PARAMS.prefix.hh_rlhf.n_items / PARAMS.prefix.n_items


def test_the_scorers_to_train_are_each_model_once_mains_first():
    jobs = score_range.scorers_to_train(PARAMS)
    names = [getattr(pair, role) for pair, role in jobs]
    assert len(names) == len(set(names)) == 2 * len(PARAMS.score_range.judges)
    assert [role for _, role in jobs] == ["main"] * len(PARAMS.score_range.judges) + \
        ["assistant"] * len(PARAMS.score_range.judges)
