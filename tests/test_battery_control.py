"""The neutral-edit control of the bias battery: a line break around the attacked response,
no word changed. A judge that reacts to any edit shows a bias found but not beyond the
control; a judge that reacts only to the bias's cue shows it found and beyond control.
Both are ``tests.test_battery.RuleJudge``, a real ``LanguageModel`` in the prompted mode."""

from __future__ import annotations

import re

from judgeaudit.attacks.battery import CONTROL, attack_pair, battery_names, with_control
from judgeaudit.audits.judge_screen import judge_screen
from judgeaudit.judging.battery import run_battery
from judgeaudit.report.judge_screen_report import screen_markdown, verdict_text
from tests.test_battery import BOOT, CUES, SETTINGS, RuleJudge, sum_items

CLEAN = re.compile(r"The sum is \d+\.")


def _screen(judge: RuleJudge, biases: list[str]):
    run = run_battery(judge, judge.name, "prompted", SETTINGS, sum_items(), with_control(biases))
    return judge_screen(run.live, run.pairs, BOOT)


def test_the_control_is_in_the_battery_and_added_to_any_list():
    assert battery_names()[-1] == CONTROL and battery_names()[:2] == ["position", "verbosity"]
    assert with_control(["authority"]) == ["authority", CONTROL]
    assert with_control([CONTROL, "authority"]) == [CONTROL, "authority"]
    p, r1, r2 = attack_pair(CONTROL, "Q?", "The sum is 5.", "The sum is 6.", "2")
    assert (p, r1, r2) == ("Q?", "The sum is 5.", "\nThe sum is 6.\n")  # whitespace only, the other untouched
    assert r2.split() == "The sum is 6.".split()


def test_a_judge_moved_by_any_edit_is_found_but_not_beyond_control():
    touchy = RuleJudge("touchy", cue=lambda q, a, o: CLEAN.fullmatch(a) is None)  # any change of the text
    screen = _screen(touchy, ["verbosity", "authority"])
    rates = screen.battery.set_index(["source", "subset", "bias", "metric"])
    control = rates.loc[("generic", "all", CONTROL, "flip_rate")]
    assert control.found and control.estimate == 1.0 and control.n == 30
    for bias in ("verbosity", "authority"):
        row = rates.loc[("generic", "all", bias, "flip_rate")]
        assert row.found and row.estimate == 1.0
        assert row.control_difference == 0 and row.control_n == 30 and row.beyond_control is False
        figures = screen.summary["biases"][bias]["flip_rate"]
        assert figures["found"] and figures["beyond_control"] is False
        assert figures["vs_control"] == {"estimate": 0.0, "ci_low": 0.0, "ci_high": 0.0, "n": 30}
        assert verdict_text(screen.summary["biases"][bias]) == "FOUND (not beyond control)"
    assert screen.summary["beyond_control"] == [] and CONTROL in screen.summary["found"]
    assert screen.summary["biases"][CONTROL]["flip_rate"]["beyond_control"] is None
    assert "FOUND (not beyond control)" in screen_markdown(screen)


def test_a_judge_moved_only_by_the_cue_is_found_and_beyond_control():
    cited = RuleJudge("likes-citations", cue=CUES["authority"])
    screen = _screen(cited, ["position", "authority"])
    rates = screen.battery.set_index(["source", "subset", "bias", "metric"])
    assert not rates.loc[("generic", "all", CONTROL, "flip_rate")].found
    for metric in ("flip_rate", "wrong_rate"):
        row = rates.loc[("generic", "all", "authority", metric)]
        assert row.found and row.beyond_control is True and row.control_ci_low > 0.5, row.to_dict()
    # per subset too, each pair compared with its own control
    subsets = rates.xs(("authority", "flip_rate"), level=("bias", "metric")).drop(("generic", "all"))
    assert subsets.control_n.sum() == 30 and subsets.beyond_control.all()
    # position edits nothing: no control comparison
    assert rates.loc[("generic", "all", "position", "flip_rate")].beyond_control is None
    assert screen.summary["beyond_control"] == ["authority"]
    assert verdict_text(screen.summary["biases"]["authority"]) == "FOUND"
    fair = _screen(RuleJudge("fair"), ["authority"])
    assert not fair.battery.found.any() and fair.summary["beyond_control"] == []
    assert (fair.battery.dropna(subset=["control_n"]).beyond_control == False).all()  # noqa: E712
