"""GSM8K question jitter: a worked solution's calculator annotations read as a program
over the question's numbers, the question given new numbers and the answer re-solved
(checked against the problem solved by hand), ambiguous readings kept fixed, and the
BOAT intervention that moves the numeric options with the answer."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from judgeaudit.audits.boat import apply_bag, sample_bag
from judgeaudit.generation.math_program import NotAProgram, parse_program
from judgeaudit.generation.mcq import MCQ

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k" / "test.jsonl"
# GSM8K test problem 1 (MIT licence), the numbers in words left as the solution reads them
DUCKS = ("Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins for "
         "her friends every day with four. She sells the remainder at the farmers' market daily for $2 per fresh "
         "duck egg. How much in dollars does she make every day at the farmers' market?")
DUCKS_SOLUTION = ("Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
                  "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer's market.\n#### 18")
HOUSE = "He buys a house for $80,000 and puts in $50,000 in repairs. How much did he spend in all?"
HOUSE_SOLUTION = "80,000+50,000=$<<80000+50000=130000>>130,000\n#### 130000"


def test_a_jittered_problem_is_re_solved_as_by_hand():
    program = parse_program(DUCKS, DUCKS_SOLUTION)
    assert program.question(program.slots) == DUCKS and program.answer == 18
    assert program.jitterable == (True, False)  # 16 moves; 2 is also a unit constant, so it stays
    seen = set()
    for seed in range(30):
        question, answer = program.jitter(random.Random(seed))
        eggs = int(re.search(r"lay (\d+) eggs", question).group(1))
        assert answer == (eggs - 3 - 4) * 2 and "$2 per" in question and "three" in question
        seen.add(eggs)
    assert len(seen) > 3 and 16 not in seen


def test_thousands_keep_their_scale_and_separators():
    program = parse_program(HOUSE, HOUSE_SOLUTION)
    question, answer = program.jitter(random.Random(0))
    a, b = (int(x.replace(",", "")) for x in re.findall(r"\$([\d,]+)", question))
    assert answer == a + b and a % 1000 == 0 and b % 1000 == 0 and (a, b) != (80_000, 50_000) and re.search(r"\$\d{2},000", question)


def test_solutions_that_are_not_programs_over_the_question_are_refused():
    with pytest.raises(NotAProgram, match="neither in the question nor an earlier step"):
        parse_program("Tom has 16 apples. He eats some. How many are left?", "16-9=<<16-9=7>>7\n#### 7")
    with pytest.raises(NotAProgram, match="not the final answer"):
        parse_program("Tom has 16 apples and 4 pears.", "16+4=<<16+4=20>>20\n#### 21")
    with pytest.raises(NotAProgram, match="says"):
        parse_program("Tom has 16 apples and 4 pears.", "16+4=<<16+4=21>>21\n#### 21")


def test_numbers_read_more_than_one_way_stay_fixed():
    # 6 is both the first step's result and the number of boxes: whichever the solution
    # meant, the answer holds only while 6 keeps its value, so 2 and 3, which the first
    # step's result depends on, stay fixed; 9 may move, the answer following it
    program = parse_program("Ann has 2 bags of 3 toys and 6 boxes of 9 toys. How many toys in boxes?",
                            "2*3=<<2*3=6>>6\n6*9=<<6*9=54>>54\n#### 54")
    assert program.jitterable == (False, False, False, True)
    question, answer = program.jitter(random.Random(0))
    per_box = int(re.search(r"boxes of (\d+)", question).group(1))
    assert per_box != 9 and answer == 6 * per_box and "2 bags of 3 toys and 6 boxes" in question


def _gsm8k_item(question: str, solution: str, answer: int) -> MCQ:
    return MCQ(question, tuple(str(answer + d) for d in (-2, 0, 3, 10)), 1,
               program=parse_program(question, solution))


def test_question_jitter_asks_true_or_false_of_a_proposed_answer():
    """The paper's: the jittered problem and one proposed answer, the re-solved one or the
    original (now wrong), judged true or false."""
    item = _gsm8k_item(DUCKS, DUCKS_SOLUTION, 18)
    other = MCQ("What is 2 plus 2?", ("4", "5", "6", "7"), 0)
    golds = set()
    for seed in range(20):
        out = apply_bag(item, ("question_jitter",), random.Random(seed), [item, other])
        eggs = int(re.search(r"lay (\d+) eggs", out.question).group(1))
        (prompt, candidates, gold), = out.queries()
        assert candidates == ("True", "False") and len(out.options) == 1
        assert gold == ("True" if out.options[0] == str((eggs - 7) * 2) else "False")
        assert out.options[0] in (str((eggs - 7) * 2), "18")
        golds.add(gold)
    assert golds == {"True", "False"}
    with pytest.raises(ValueError, match="alone"):
        apply_bag(item, ("question_jitter", "option_shuffling"), random.Random(0), [item, other])


def test_question_jitter_resolve_moves_the_options_with_the_answer():
    item = _gsm8k_item(DUCKS, DUCKS_SOLUTION, 18)
    other = MCQ("What is 2 plus 2?", ("4", "5", "6", "7"), 0)
    for seed in range(20):
        out = apply_bag(item, ("question_jitter_resolve",), random.Random(seed), [item, other])
        eggs = int(re.search(r"lay (\d+) eggs", out.question).group(1))
        assert out.options[out.answer] == str((eggs - 7) * 2)
        assert [int(o) - int(out.options[out.answer]) for o in out.options] == [-2, 0, 3, 10]
        binary = apply_bag(item, ("question_jitter_resolve", "binary_transformation"), random.Random(seed),
                           [item, other])
        assert [gold for _, _, gold in binary.queries()] == ["False", "True", "False", "False"]
        assert all(f"lay {eggs} eggs" in q for q, _, _ in binary.queries())
    assert apply_bag(other, ("question_jitter",), random.Random(0), [item, other]) == other  # no program


def test_question_jitter_is_drawn_for_the_items_it_can_change_only():
    plain, math = random.Random(3), random.Random(3)
    bags = [sample_bag(plain) for _ in range(2000)]
    # the other interventions are drawn exactly as for an item without a program
    with_jitter = [sample_bag(math, jitter=True) for _ in range(2000)]
    assert all("question_jitter" not in b for b in bags)
    share = sum("question_jitter" in b for b in with_jitter) / len(with_jitter)
    assert 0.45 < share < 0.55
    # the paper's question jitter comes alone; ours before the others (binary transformation too)
    assert all(b == ("question_jitter",) for b in with_jitter if "question_jitter" in b)
    ours = [sample_bag(random.Random(k), jitter=True, jitter_kind="question_jitter_resolve") for k in range(2000)]
    binary = [b for b in ours if "binary_transformation" in b]
    assert binary and all(set(b) <= {"question_jitter_resolve", "binary_transformation"} for b in binary)
    assert any(len(b) > 2 and b[0] == "question_jitter_resolve" for b in ours)


@pytest.mark.skipif(not SHARED.is_file(), reason="../shared/data/gsm8k absent (see ../shared/data/SOURCES.md)")
def test_the_real_test_set_reads_as_programs_that_give_its_answers():
    parsed = jittered = 0
    rng = random.Random(0)
    rows = [json.loads(line) for line in SHARED.read_text().splitlines()]
    for row in rows:
        try:
            program = parse_program(row["question"], row["answer"])
        except NotAProgram:
            continue
        parsed += 1
        final = int(row["answer"].rsplit("####", 1)[1].replace(",", ""))
        assert program.question(program.slots) == row["question"] and program.answer == final
        jittered += program.jitter(rng) is not None
    # most solutions read as programs; about a third have numbers that can safely move
    assert parsed / len(rows) > 0.7 and 0.25 < jittered / len(rows) < 0.5, (parsed, jittered)


def test_boat_on_gsm8k_items_jitters_only_the_items_it_can(tiny_lm):
    from judgeaudit.audits.boat_eval import boat_runs, single_effects, single_runs
    from judgeaudit.sources.mcq_benchmarks import read_gsm8k

    found = read_gsm8k(Path(__file__).parent / "data" / "gsm8k", n_items=5, seed=0)
    can = {k for k, item in enumerate(found.items) if item.jitterable}
    assert 0 < len(can) < len(found.items) and "question jitter on" in found.note
    runs = boat_runs(tiny_lm, found.items, runs=4, shots=1, shot_pool=found.shot_pools, seed=2)
    jittered = set(runs[runs.bag.str.contains("question_jitter")]["item"])
    assert jittered and jittered <= can
    alone = single_runs(tiny_lm, found.items, runs=1, shots=1, shot_pool=found.shot_pools, seed=2)
    assert set(alone[alone.intervention == "question_jitter"]["item"]) == can
    effects = single_effects(alone, runs, n_boot=200, confidence=0.95, seed=0).set_index("intervention")
    assert effects.loc["question_jitter", "n"] == len(can) and effects.loc["option_shuffling", "n"] == 5
