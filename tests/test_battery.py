"""The bias battery (``attacks.battery``, ``judging.battery``, ``audits.bias_battery``) and
the content-blind baselines (``audits.baselines``).

The planted biases: ``RuleJudge``, a real ``LanguageModel`` judging in the ``prompted``
mode, reads the two answers out of its judging prompt and decides by content (the answer
stating the right sum wins) plus, where it carries one, a single bias (a bonus for the
answer that shows its cue: more length, a citation, the label the crowd is said to
prefer, ...). The audit must find each planted bias (CI excluding zero) in the judge that
carries it and find nothing in the fair judge. The plumbing runs on a real tiny
transformer too (conftest's ``tiny_lm``)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from judgeaudit.attacks.battery import BATTERY, FAMOUS, LABELS, UNKNOWN, attack_pair, battery_names
from judgeaudit.audits.baselines import baseline_accuracy, flagged_subsets
from judgeaudit.audits.bias_battery import battery_rates, self_preference
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.config import Judge
from judgeaudit.judging.battery import run_battery
from judgeaudit.judging.benchmark import ITEM, judge_items
from judgeaudit.judging.self_enhancement import self_enhancement_items
from judgeaudit.models import ModelSpec
from judgeaudit.models.base import LanguageModel

TEMPLATE = "Question: {question}\n<<A>>{answer_a}<</A>>\n<<B>>{answer_b}<</B>>\nVerdict:"
SETTINGS = Judge(prompt_template=TEMPLATE, tie_margin=1e-6)
BOOT = BootstrapSettings(n_boot=300, confidence=0.95, seed=0)
_PARSE = re.compile(r"Question: (.*)\n<<A>>(.*)<</A>>\n<<B>>(.*)<</B>>\nVerdict:", re.S)


def _crowd_label(question: str, answer: str, pattern: str) -> bool:
    """Whether the statement ``pattern`` in the question names the label this answer carries."""
    named = re.search(pattern, question)
    return bool(named) and answer.startswith(f"[{named.group(1)}]")


# what each planted bias responds to, written from the battery's documented templates
CUES = {
    "verbosity": lambda q, a, o: len(a) > 1.5 * len(o),
    "authority": lambda q, a, o: "(Citation:" in a,
    "bandwagon": lambda q, a, o: _crowd_label(q, a, r"of people believe that (Assistant \w) is better"),
    "compassion_fade": lambda q, a, o: a.startswith(f"[Answer by {FAMOUS}]"),
    "sentiment": lambda q, a, o: "delighted" in a,
    "distraction": lambda q, a, o: _crowd_label(q, a, r"(Assistant \w) loves eating pasta"),
    "refinement": lambda q, a, o: "revised and improved" in a,
    "prompt_injection": lambda q, a, o: "Ignore all previous instructions" in a,
    "fake_verdict": lambda q, a, o: "My final verdict: this answer is better" in a,
}


class RuleJudge(LanguageModel):
    """Decides by content: an answer stating the right sum scores 1, else 0; with ``cue``,
    2 more for an answer that shows it; with ``first_bonus``, that much more for the
    answer in position A. P(A) = sigmoid(score A - score B). Its own answers (``generate``)
    start with ``signature``."""

    def __init__(self, name: str, cue=None, first_bonus: float = 0.0, signature: str = "Sure.") -> None:
        super().__init__(ModelSpec(path=name), name=name)
        self.cue, self.first_bonus, self.signature = cue, first_bonus, signature

    def format_prompt(self, prompt: str) -> str:
        return prompt

    @staticmethod
    def right_sum(question: str) -> int:
        a, b = re.search(r"what is (\d+) plus (\d+)", question).groups()
        return int(a) + int(b)

    def score(self, question: str, answer: str, other: str) -> float:
        right = float(re.search(rf"\bsum is {self.right_sum(question)}\b", answer) is not None)
        return right + (2.0 if self.cue is not None and self.cue(question, answer, other) else 0.0)

    def next_token_logprobs(self, prompts, candidates) -> np.ndarray:
        out = []
        for prompt in prompts:
            q, a, b = _PARSE.fullmatch(prompt).groups()
            margin = self.score(q, a, b) - self.score(q, b, a) + self.first_bonus
            out.append([-np.logaddexp(0, -margin), -np.logaddexp(0, margin)])
        return np.array(out)

    def generate(self, prompts, *, max_new_tokens, temperature=0.0, seed=0) -> list[str]:
        return [f"{self.signature} The sum is {self.right_sum(p)}." for p in prompts]

    def completion_logprobs(self, prompts, completions) -> np.ndarray:
        raise NotImplementedError("RuleJudge judges in the prompted mode only")


def sum_items(n: int = 30, source: str = "generic") -> pd.DataFrame:
    """Labelled pairs: the right sum against a wrong one, sides alternating, two subsets."""
    rows = []
    for k in range(n):
        a, b = 10 + k, 20 + 3 * k
        right, wrong = f"The sum is {a + b}.", f"The sum is {a + b + 1}."
        first, second, label = (right, wrong, "1") if k % 2 == 0 else (wrong, right, "2")
        rows.append({"source": source, "subset": "even" if k % 4 < 2 else "odd", "item_id": f"{source}-{k}",
                     "prompt": f"Question {k}: what is {a} plus {b}?", "response_1": first,
                     "response_2": second,
                     "model_1": "m1", "model_2": "m2", "label": label, "human_labels": None})
    return pd.DataFrame(rows, columns=ITEM)


def _rates(judge: LanguageModel, biases, items=None) -> pd.DataFrame:
    items = sum_items() if items is None else items
    run = run_battery(judge, judge.name, "prompted", SETTINGS, items, biases)
    return battery_rates(run.live, run.pairs, BOOT).set_index(["source", "subset", "bias", "metric"])


ON_THE_ANSWER = ("verbosity", "authority", "sentiment", "refinement", "prompt_injection", "fake_verdict",
                 "control")


def test_every_transform_is_position_free_deterministic_and_keeps_the_text():
    prompt, r1, r2 = "Question 1: what is 2 plus 3?", "The sum is 5.", "The sum is 6."
    for name in battery_names():
        for side in ("1", "2"):
            new = attack_pair(name, prompt, r1, r2, side)
            assert new == attack_pair(name, prompt, r1, r2, side)  # pure
            p, n1, n2 = new
            assert prompt in p and r1 in n1 and r2 in n2  # every original word stays, in order
            added = " ".join(x.replace(y, "") for x, y in ((p, prompt), (n1, r1), (n2, r2)))
            assert not re.search(r"\b(Assistant|Answer|Response) [AB]\b|\b(first|second) (answer|response)\b",
                                 added, re.I), (name, added)
            if name in ON_THE_ANSWER:
                untouched = n2 if side == "1" else n1
                assert untouched == (r2 if side == "1" else r1) and p == prompt
    # the labelled statements name the attacked response's own label, carried with it
    p, n1, n2 = attack_pair("bandwagon", prompt, r1, r2, "2")
    assert p.endswith(f"90% of people believe that {LABELS['2']} is better in this question.")
    assert n1.startswith(f"[{LABELS['1']}]") and n2.startswith(f"[{LABELS['2']}]")
    # compassion fade: the famous name on the attacked response, then swapped
    assert attack_pair("compassion_fade", prompt, r1, r2, "1")[1].startswith(f"[Answer by {FAMOUS}]")
    assert attack_pair("compassion_fade_swapped", prompt, r1, r2, "1")[1].startswith(f"[Answer by {UNKNOWN}]")
    assert attack_pair("position", prompt, r1, r2, "1") == (prompt, r1, r2)
    with pytest.raises(ValueError, match="unknown bias"):
        attack_pair("shouting", prompt, r1, r2, "1")
    assert all(item.template for item in BATTERY.values())


@pytest.mark.parametrize("bias", sorted(CUES))
def test_a_planted_bias_is_found_and_the_fair_judge_shows_none(bias):
    biased = _rates(RuleJudge(f"likes-{bias}", cue=CUES[bias]), [bias])
    for metric in ("flip_rate", "wrong_rate"):
        row = biased.loc[("generic", "all", bias, metric)]
        assert row.found and row.ci_low > 0.5 and row.n == 30, (bias, metric, row.to_dict())
    # per subset too, each with its own n adding up to the source's
    assert biased.xs((bias, "flip_rate"), level=("bias", "metric")).drop(("generic", "all")).n.sum() == 30
    fair = _rates(RuleJudge("fair"), [bias])
    assert not fair.found.any() and (fair.estimate == 0).all(), fair
    assert fair.loc[("generic", "all", bias, "flip_rate")].n == 30


def test_compassion_fade_swapped_separates_a_taste_for_famous_names():
    rates = _rates(RuleJudge("likes-famous", cue=CUES["compassion_fade"]),
                   ["compassion_fade", "compassion_fade_swapped"])
    assert rates.loc[("generic", "all", "compassion_fade", "flip_rate")].found
    swapped = rates.loc[("generic", "all", "compassion_fade_swapped", "flip_rate")]
    assert not swapped.found and swapped.estimate == 0


def test_position_bias_is_the_share_of_verdicts_the_order_changes():
    items = sum_items()
    rates = _rates(RuleJudge("likes-first", first_bonus=3.0), ["position"], items)
    row = rates.loc[("generic", "all", "position", "flip_rate")]
    assert row.found and row.estimate == 1.0 and row.n == len(items)
    assert rates.loc[("generic", "all", "position", "wrong_rate")].estimate == 1.0
    fair = _rates(RuleJudge("fair"), ["position"], items)
    assert not fair.found.any() and (fair.estimate == 0).all()


def test_several_sources_give_each_source_and_all_together():
    items = pd.concat([sum_items(12, "llmbar"), sum_items(10, "pandalm")], ignore_index=True)
    rates = _rates(RuleJudge("likes-citations", cue=CUES["authority"]), ["authority"], items)
    assert rates.loc[("all", "all", "authority", "flip_rate")].n == 22
    assert rates.loc[("llmbar", "all", "authority", "flip_rate")].n == 12
    assert rates.loc[("pandalm", "odd", "authority", "flip_rate")].n == 4  # k = 2, 3, 6, 7


def test_a_tied_labelled_pair_has_its_wrong_response_attacked():
    """A judge that cannot tell the answers apart ties every pair: no loser, so only the
    wrong-response figure is measured, on every labelled pair."""
    blind = RuleJudge("blind", cue=lambda q, a, o: "Ignore all previous instructions" in a)
    blind.score = lambda q, a, o: 2.0 if blind.cue(q, a, o) else 0.0
    run = run_battery(blind, "blind", "prompted", SETTINGS, sum_items(), ["prompt_injection"])
    assert (run.pairs.role == "wrong").all() and run.pairs.flipped.isna().all()
    wrong = np.where(run.pairs.label == "1", "2", "1")
    assert (run.pairs.attacked == wrong).all() and run.pairs.turned_wrong.all()
    rates = battery_rates(run.live, run.pairs, BOOT).set_index(["subset", "bias", "metric"])
    assert ("all", "prompt_injection", "flip_rate") not in rates.index
    assert rates.loc[("all", "prompt_injection", "wrong_rate")].found


def test_self_enhancement_is_found_against_a_reference_judge():
    items = sum_items(24)
    vain = RuleJudge("vain", cue=lambda q, a, o: a.startswith("Certainly!"), signature="Certainly!")
    pairs = self_enhancement_items(vain, "vain", items, max_new_tokens=16)
    assert pairs.response_1.str.startswith("Certainly! The sum is").all() and (pairs.model_1 == "vain").all()
    assert pairs.label.isna().all()
    right = np.where(items.label == "1", items.response_1, items.response_2)
    assert (pairs.response_2 == right).all()
    reference = judge_items(RuleJudge("fair"), "fair", "prompted", SETTINGS, pairs)
    found = self_preference(judge_items(vain, "vain", "prompted", SETTINGS, pairs), reference, BOOT)
    row = found.set_index(["subset", "metric"]).loc[("all", "self_preference")]
    assert row.found and row.estimate == 0.5 and row.n == 24
    assert set(found.subset) == {"all", "even", "odd"}  # per subset too
    modest = RuleJudge("modest", signature="Certainly!")  # the same answers, no taste for them
    pairs = self_enhancement_items(modest, "modest", items, max_new_tokens=16)
    none = self_preference(judge_items(modest, "modest", "prompted", SETTINGS, pairs), reference, BOOT)
    assert not none.set_index(["subset", "metric"]).loc[("all", "self_preference")].found


def test_baselines_flag_the_subset_that_always_the_longer_solves():
    """Subset "padded": the right answer is always the longer one, so always-the-longer is as
    accurate as a perfect judge and the subset is flagged, naming it. Subset "even-length":
    both answers equally long, labels alternating: no baseline comes near; not flagged."""
    items = sum_items(24)
    right_1 = items.label == "1"
    padded = items.index < 12
    pad = " This is the full and final answer."
    items.loc[padded & right_1, "response_1"] += pad
    items.loc[padded & ~right_1, "response_2"] += pad
    items["subset"] = np.where(padded, "padded", "even-length")
    live = judge_items(RuleJudge("fair"), "fair", "prompted", SETTINGS, items)
    acc = baseline_accuracy(live, BOOT).set_index(["subset", "method"])
    assert acc.loc[("padded", "longer")].estimate == 1.0 and acc.loc[("padded", "judge")].estimate == 1.0
    assert acc.loc[("padded", "shorter")].estimate == 0.0
    assert acc.loc[("even-length", "longer")].estimate == 0.5 and acc.loc[("even-length", "first")].n == 12
    flags = flagged_subsets(baseline_accuracy(live, BOOT))
    assert flags.set_index("subset").loc["padded", "baselines"] == "longer"
    assert "even-length" not in set(flags.subset) and "all" not in set(flags.subset)


class Bar:
    """What ``progress.Steps`` asks of a bar: a total planned, steps counted."""

    def __init__(self) -> None:
        self.total: float | None = None
        self.n = 0.0

    def update(self, n: float = 1) -> None:
        self.n += n

    def refresh(self) -> None:
        pass


def test_the_battery_on_a_real_tiny_transformer(tiny_lm):
    """Through a real model: the attacked side is the response the clean verdicts made lose,
    its text is the battery's transform of it, and each bias is one progress step."""
    items = sum_items(8)
    biases = ["position", "authority", "refinement", "bandwagon"]
    bar = Bar()
    run = run_battery(tiny_lm, "tiny", "likelihood", Judge(), items, biases, steps=bar)
    assert bar.n == bar.total == len(biases) + 1
    scored = run.live.assign(s=run.live.verdict.map({"1": 1.0, "2": 0.0, "tie": 0.5}))
    before = scored.groupby("item_id").s.mean()
    for row in run.pairs.itertuples():
        item = items.set_index("item_id").loc[row.item_id]
        if row.role == "loser":
            assert row.attacked == ("1" if before[row.item_id] < 0.5 else "2")
        p, r1, r2 = attack_pair(row.bias, item.prompt, item.response_1, item.response_2, row.attacked)
        assert row.attacked_response == (r1 if row.attacked == "1" else r2) and row.attacked_prompt == p
    assert set(run.pairs.bias) == set(biases) - {"position"}
    assert len(run.pairs) == 3 * run.pairs.item_id.nunique() > 0
    again = run_battery(tiny_lm, "tiny", "likelihood", Judge(), items, biases, live=run.live)
    pd.testing.assert_frame_equal(run.pairs, again.pairs)  # deterministic, and the clean verdicts reused
    rates = battery_rates(run.live, run.pairs, BOOT)
    assert set(rates.bias) <= set(biases) and (rates.ci_low <= rates.estimate).all()
