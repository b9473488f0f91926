"""Recorded verdicts of real judges: each reader on a small sample in its benchmark's own
format (tests/data), the report card on data with planted effects it must find, the PU
self-check in both directions, and the audit-verdicts / judge-benchmark commands."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.sources import read_source
from judgeaudit.sources.judgment_table import COLUMNS
from judgeaudit.tables import InputError
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"
FAST = BootstrapSettings(n_boot=300, confidence=0.95, seed=0)


def _verdicts(table: pd.DataFrame, **where) -> dict:
    sel = table
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return {(r.item_id, r.order): r.verdict for r in sel.itertuples()}


def test_llmbar_reader_reads_every_strategy_layout():
    table, report = read_source("llmbar", DATA / "llmbar")
    assert list(table.columns) == COLUMNS
    assert set(table.subset) == {"Natural", "Adversarial/Neighbor"}
    # the winner of the swapped order is already in the original labelling
    vanilla = _verdicts(table, subset="Natural", judge="JudgeA", strategy="Vanilla")
    assert vanilla[("Natural/0", "1")] == "1" and vanilla[("Natural/0", "2")] == "2"
    # Swap: the LAST step (the synthesis) is the final verdict, not the first round
    swap = _verdicts(table, judge="JudgeA", strategy="Swap")
    assert swap[("Natural/0", "2")] == "1" and swap[("Natural/3", "1")] == "2"
    # Metrics: the auxiliary step is skipped; Rating: the scores are the raw output
    metrics = table[(table.strategy == "Metrics")]
    assert (metrics.verdict == metrics.label).all()
    rating = table[table.strategy == "Rating"]
    assert rating.raw_output.str.contains("score_1: 7").all()
    # an unparseable winner is kept, counted, never dropped
    assert _verdicts(table, subset="Adversarial/Neighbor")[("Adversarial/Neighbor/2", "2")] == "unparseable"
    assert report.summary()["unparseable"] == 1 and report.summary()["rows_read"] == len(table)


def test_llmbar_malformed_record_names_file_record_and_field(tmp_path):
    import shutil

    shutil.copytree(DATA / "llmbar" / "Natural", tmp_path / "Natural")
    path = tmp_path / "Natural/evaluators/JudgeA/Vanilla/result.json"
    records = json.loads(path.read_text())
    del records[2]["results"][0]["swap = True"]["winner"]
    path.write_text(json.dumps(records))
    with pytest.raises(InputError, match=r"JudgeA/Vanilla/result.json: record 2.*missing field 'winner'"):
        read_source("llmbar", tmp_path)
    path.write_text("[{")
    with pytest.raises(InputError, match="result.json: malformed JSON"):
        read_source("llmbar", tmp_path)


def test_pandalm_reader_majority_ties_garbage_and_duplicates():
    table, report = read_source("pandalm", DATA / "pandalm")
    items = table.set_index("item_id")
    assert items.loc["0", "label"] == "1" and items.loc["2", "label"] == "tie"
    assert items.loc["4", "label"] is None  # three different labels: no majority, kept
    assert items.loc["1", "response_1"] == "True"  # a JSON boolean response read as text
    assert items.loc["2", "verdict"] == "tie" and items.loc["3", "verdict"] == "unparseable"
    assert items.loc["0", "model_1"] == "alpha-7b" and items.loc["0", "model_2"] == "beta-7b"
    files = report.frame().set_index("path")
    judge_file = files.loc[str(DATA / "pandalm" / "judge-x-testset-v1.json")]
    assert judge_file.rows_read == 5 and judge_file.rows_rejected == 1 and judge_file.unparseable == 1
    assert "duplicated idx" in judge_file.rejected_reasons
    assert any("booleans" in n for n in report.notes)


def test_judgebench_reader_flips_the_swapped_game_and_reads_scores():
    table, report = read_source("judgebench", DATA / "judgebench")
    j1 = _verdicts(table, judge="j1")
    # game 2 is in the swapped labelling: "B>A" there means response_1 (A) won
    assert j1[("p1", "1")] == "1" and j1[("p1", "2")] == "1"
    assert j1[("p3", "1")] == "tie" and j1[("p3", "2")] == "2"
    rm = table[table.judge == "rm"].set_index(["item_id", "order"])
    assert rm.loc[("p1", "1"), "p_1"] == pytest.approx(1 / (1 + np.exp(-2.0)))
    assert rm.loc[("p1", "2"), "p_1"] == pytest.approx(rm.loc[("p1", "1"), "p_1"])  # order-free RM
    assert set(table.subset) == {"knowledge", "reasoning", "coding"} and set(table.label) == {"1", "2"}


def test_judgebench_folder_without_judges_is_an_error(tmp_path):
    import shutil

    shutil.copy(DATA / "judgebench" / "dataset=judgebench,response_model=m.jsonl", tmp_path)
    with pytest.raises(InputError, match="no judge verdict read .*no judge file"):  # an audit of nothing
        read_source("judgebench", tmp_path)


def test_generic_reader_and_its_errors(tmp_path):
    table, report = read_source("generic", DATA / "generic" / "verdicts.csv")
    assert len(table) == 5 and table.human_labels.iloc[0] == ["1", "1", "2"]
    assert _verdicts(table, item_id="b") == {("b", "1"): "2", ("b", "2"): "2"}  # "B": shown second
    assert report.summary()["unparseable"] == 1  # "Both are fine, really"
    assert table[table.item_id == "c"].raw_output.iloc[0] == "Both are fine, really"
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,judge,verdict,order\nx,j,1,3\n")
    with pytest.raises(InputError, match=r"bad.csv: row 1: field 'order'"):
        read_source("generic", bad)
    dup = tmp_path / "dup.jsonl"  # an exact copy is counted (tests/test_reader_faults.py); another verdict is not
    dup.write_text('{"item_id": "x", "judge": "j", "verdict": "1"}\n{"item_id": "x", "judge": "j", "verdict": "2"}\n')
    with pytest.raises(InputError, match="dup.jsonl: rows 1 and 2 give item 'x'.* different values of field 'verdict'"):
        read_source("generic", dup)


def test_generic_verdicts_by_position_follow_the_order(tmp_path):
    """A/B forms name the response shown first / second; "1"/"2" stay the item's own."""
    forms = {"A": "first", "[[A]]": "first", "A>B": "first", "[[A>>B]]": "first", "B<A": "first",
             "model_a": "first", "B": "second", "[[B]]": "second", "B>A": "second", "[[B>>A]]": "second",
             "A<<B": "second", "model_b": "second", "A=B": "tie", "[[A=B]]": "tie", "[[C]]": "tie",
             "tie (bothbad)": "tie", "1": "1", "2": "2", "C": None, "A>A": None, "AB": None}
    rows = [{"item_id": f"{form}|{order}", "judge": "j", "verdict": form, "order": order}
            for form in forms for order in ("1", "2")]
    path = tmp_path / "v.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table, report = read_source("generic", path)
    got = dict(zip(table.item_id, table.verdict))
    for form, meant in forms.items():
        for order, other in (("1", "2"), ("2", "1")):
            want = {"first": order, "second": other, None: "unparseable"}.get(meant, meant)
            assert got[f"{form}|{order}"] == want, (form, order)
    assert report.summary()["unparseable"] == 6


def _synthetic(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """Two judges on n labelled pairs, both orders: 'fair' is right 85% of the time in either
    order; 'first' picks the response shown first 80% of the time, whatever the label."""
    rng = np.random.default_rng(seed)
    label = rng.choice(["1", "2"], n)
    rows = []
    for i in range(n):
        long1 = rng.random() < 0.5
        item = {"source": "synthetic", "subset": "all", "item_id": str(i), "prompt": "q",
                "response_1": "x" * (40 if long1 else 10), "response_2": "x" * (10 if long1 else 40),
                "model_1": None, "model_2": None, "strategy": "default", "p_1": None, "label": label[i],
                "human_labels": None, "raw_output": None}
        for order in ("1", "2"):
            fair = label[i] if rng.random() < 0.85 else {"1": "2", "2": "1"}[label[i]]
            first = order if rng.random() < 0.8 else {"1": "2", "2": "1"}[order]
            rows += [{**item, "judge": "fair", "order": order, "verdict": fair},
                     {**item, "judge": "first", "order": order, "verdict": first}]
    return pd.DataFrame(rows, columns=COLUMNS)


def test_report_card_finds_a_planted_position_bias():
    from judgeaudit.audits.judge_quality import report_card

    card = report_card(_synthetic(), FAST).set_index(["judge", "metric"])
    first, fair = card.loc["first"], card.loc["fair"]
    assert first.loc["position_bias", "ci_low"] > 0.2  # planted: +0.30
    assert fair.loc["position_bias", "ci_low"] < 0 < fair.loc["position_bias", "ci_high"]
    assert fair.loc["accuracy", "ci_low"] > 0.8 and first.loc["accuracy", "ci_high"] < 0.6
    assert first.loc["positional_agreement", "estimate"] < 0.45  # flips with the order
    assert fair.loc["kappa_label", "estimate"] == pytest.approx(2 * fair.loc["accuracy", "estimate"] - 1, abs=0.05)
    assert (card.ci_low <= card.estimate + 1e-12).all() and (card.estimate <= card.ci_high + 1e-12).all()
    assert card.loc[("first", "accuracy"), "n"] == 300 and card.loc[("first", "position_bias"), "n"] == 600


@pytest.mark.parametrize("seed", range(5))
def test_kappa_and_macro_scores_match_scikit_learn(seed):
    from judgeaudit.audits.judge_quality import kappa, macro_scores

    rng = np.random.default_rng(seed)
    y, p = rng.choice([0, 1, 2], 200), rng.choice([-1, 0, 1, 2], 200, p=[0.05, 0.2, 0.4, 0.35])
    valid = np.ones(200, bool)
    assert kappa(y[None], p[None], valid[None])[0] == pytest.approx(cohen_kappa_score(y, p))
    ours = macro_scores(y[None], p[None], valid[None], (1, 2, 0))
    ref = precision_recall_fscore_support(y, p, labels=[1, 2, 0], average="macro", zero_division=0)
    assert [ours[k][0] for k in ("macro_precision", "macro_recall", "macro_f1")] == pytest.approx(ref[:3])


def _pu_table(wrong_cluster: bool, n: int = 200, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """Pairs whose responses embed on a known axis: the better response points one way.
    With ``wrong_cluster`` the judge's verdicts are wrong on a distinct cluster (the PU
    adjustment can find them); without, wrong at random on embeddings that carry no trace
    of quality (as a sentence encoder sees a maths answer), so the pairs it flips are no
    likelier wrong than right, and flipping them does harm."""
    rng = np.random.default_rng(seed)
    rows, vectors = [], {}
    for i in range(n):
        cluster = i % 4 == 0
        good, bad = f"good {i}", f"bad {i}"
        shift = np.zeros(8)
        shift[2 + cluster] = 3.0  # the wrong cluster sits off the main axis
        axis = np.r_[1.0, np.zeros(7)] if wrong_cluster else np.zeros(8)
        vectors[good] = axis + shift + rng.normal(0, 0.15 if wrong_cluster else 1.0, 8)
        vectors[bad] = -axis + shift + rng.normal(0, 0.15 if wrong_cluster else 1.0, 8)
        first_good = rng.random() < 0.5
        r1, r2 = (good, bad) if first_good else (bad, good)
        label = "1" if first_good else "2"
        wrong = cluster if wrong_cluster else rng.random() < 0.25
        verdict = {"1": "2", "2": "1"}[label] if wrong else label
        rows += [{"source": "s", "subset": "all", "item_id": str(i), "prompt": "", "response_1": r1,
                  "response_2": r2, "model_1": None, "model_2": None, "judge": "j", "strategy": "d",
                  "order": o, "verdict": verdict, "p_1": None, "label": label, "human_labels": None,
                  "raw_output": None} for o in ("1", "2")]
    return pd.DataFrame(rows, columns=COLUMNS), vectors


@pytest.mark.parametrize("wrong_cluster,advice", [(True, "apply"), (False, "do not apply")])
def test_pu_self_check_says_whether_to_apply(wrong_cluster, advice):
    from judgeaudit.audits.pu_audit import PUConfig
    from judgeaudit.audits.pu_verdicts import pu_audit_verdicts, texts_for

    table, vectors = _pu_table(wrong_cluster)
    items = table.drop_duplicates("item_id")
    lookup = {}
    for col in ("response_1", "response_2"):
        lookup.update(dict(zip(texts_for(items.rename(columns={col: "r"}), "r"), items[col].map(vectors))))
    cons, _ = pu_audit_verdicts(table, lambda texts: np.stack([lookup[t] for t in texts]),
                                PUConfig(n_splits=4, p_ratio=0.3, seed=0), FAST, folds=3)
    overall = cons[cons.qtype == "all"].iloc[0]
    assert overall.recommendation.startswith(advice)
    # the self-check (verified pairs only) agrees with the truth on the pairs it never saw
    truth_gain = overall.cons_adj - overall.cons_orig
    assert np.sign(overall.check_gain) == np.sign(truth_gain) and abs(truth_gain) > 0.02


def test_audit_verdicts_command_writes_the_report_card(tmp_path):
    from flows.cli import main

    out = tmp_path / "out"
    assert main(["audit-verdicts", "--source", "llmbar", "--path", str(DATA / "llmbar"), "--out", str(out),
                 "--n-boot", "200", "--no-pu"]) == 0
    card = pd.read_parquet(out / "judge_quality.parquet")
    assert list(card.columns) == ["source", "subset", "judge", "strategy", "metric", "estimate", "ci_low",
                                  "ci_high", "n"]
    judge_a = card[(card.judge == "JudgeA") & (card.strategy == "Vanilla") & (card.subset == "all")]
    bias = judge_a.set_index("metric").loc["position_bias"]
    assert bias.estimate > 0.4 and bias.n == 13  # always the first shown; one unparseable verdict
    assert set(card.subset) == {"Natural", "Adversarial/Neighbor", "all"}
    judgments = pd.read_parquet(out / "judgments.parquet")
    assert len(judgments) == 2 * (4 + 3 + 4 + 4 + 4)
    html = (out / "report.html").read_text()
    assert "Read this first" in html and "JudgeA" in html
    assert "too few labelled pairs to tell" in html  # n = 7 at most: no verdict on a sample
    assert (out / "judges_accuracy_agreement.png").stat().st_size > 1000
    acc = judge_a.set_index("metric").loc["accuracy"]  # the report card's grid: estimate [CI] and n
    assert f"{acc.estimate:.3f} [{acc.ci_low:.3f}, {acc.ci_high:.3f}]" in html
    info = json.loads((out / "summary.json").read_text())
    assert info["published_figures"] == {}  # a sample: LLMBar published nothing for it
    swap = pd.read_parquet(out / "strategy_comparison.parquet")  # JudgeA's Swap against its Vanilla
    assert swap[["judge", "strategy", "base"]].values.tolist() == [["JudgeA", "Swap", "Vanilla"]]
    assert main(["audit-verdicts", "--source", "llmbar", "--path", str(DATA / "llmbar"), "--out", str(out),
                 "--n-boot", "200", "--no-pu", "--base-strategy", "Swap"]) == 0
    swap = pd.read_parquet(out / "strategy_comparison.parquet")
    assert swap[["judge", "strategy", "base"]].values.tolist() == [["JudgeA", "Vanilla", "Swap"]]


def test_the_stage_bar_counts_the_audits_steps(tmp_path):
    """The stage's one bar advances through the library's steps (``judgeaudit.progress``):
    each source read, the report card, the published figures, each encoder batch, each PU
    group; a rerun finds the embeddings cached and plans no batch."""
    import io

    from tqdm import tqdm

    from judgeaudit.audits.pu_audit import PUConfig
    from judgeaudit.stages.real_judges import VerdictAuditSettings, audit_verdicts, read_sources

    settings = VerdictAuditSettings(FAST, PUConfig(n_splits=2, seed=0), cache_dir=tmp_path / "embeddings")
    totals = []
    for _ in range(2):
        with tqdm(file=io.StringIO()) as bar:
            table, files, notes = read_sources({"llmbar": str(DATA / "llmbar"), "pandalm": str(DATA / "pandalm")},
                                               bar)
            audit_verdicts(table, settings, files=files, notes=notes, steps=bar)
            assert bar.n == bar.total
            totals.append(bar.total)
    labelled = table[table.label.isin(["1", "2"])]
    groups = labelled.groupby(["source", "judge", "strategy"]).ngroups
    texts = {f"{p[:400]}\n\n{r[-1500:]}" for col in ("response_1", "response_2")
             for p, r in zip(labelled.prompt, labelled[col])}
    batches = -(-len(texts) // 32)  # the encoder's batch size
    assert batches >= 1 and groups >= 2 and totals == [2 + 3 + batches + groups, 2 + 3 + groups]


def test_absent_source_is_a_note_not_an_error(tmp_path):
    from judgeaudit.stages.real_judges import read_sources

    table, files, notes = read_sources({"llmbar": str(tmp_path / "nowhere"),
                                        "pandalm": str(DATA / "pandalm")})
    assert set(table.source) == {"pandalm"} and any("llmbar: skipped" in n for n in notes)


def test_judge_benchmark_with_a_live_embedded_judge(tiny_lm, tmp_path):
    """A real (tiny) transformer judges LLMBar-format pairs in both orders, beside the
    recorded judges; then the same judge through `judgeaudit serve`'s API on loopback."""
    from judgeaudit.config import Judge
    from judgeaudit.judging.benchmark import benchmark_items, judge_items

    recorded, _ = read_source("llmbar", DATA / "llmbar")
    items = benchmark_items(recorded)
    assert len(items) == 7
    for mode in ("likelihood", "prompted"):
        live = judge_items(tiny_lm, "tiny", mode, Judge(), items)
        assert len(live) == 14 and set(live.order) == {"1", "2"}
        wide = live.pivot(index="item_id", columns="order", values="p_1")
        if mode == "likelihood":  # order-free: the same probability for response 1 in both orders
            assert np.allclose(wide["1"], wide["2"])
        assert live.p_1.between(0, 1).all() and set(live.verdict) <= {"1", "2", "tie"}
        # p_1 and the verdict agree, in the original labelling, in both orders
        decisive = live[live.verdict != "tie"]
        assert ((decisive.p_1 > 0.5) == (decisive.verdict == "1")).all()


def test_judge_benchmark_command(tiny_lm, tmp_path):
    """`judgeaudit judge-benchmark`: a judge params.yaml names judges the pairs, and the
    report card holds it beside the judges the benchmark recorded."""
    import yaml

    from flows.cli import main
    from tests.conftest import tiny_params

    params = tiny_params()
    params["models"]["tiny-judge"] = {"spec": {"path": tiny_lm.spec.path, "chat_template": "Q: {prompt}\nA:"}}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    out = tmp_path / "out"
    assert main(["judge-benchmark", "--judge", "tiny-judge", "--mode", "likelihood", "--params", str(path),
                 "--source", "llmbar", "--path", str(DATA / "llmbar"), "--out", str(out), "--n-boot", "200",
                 "--no-pu"]) == 0
    card = pd.read_parquet(out / "judge_quality.parquet")
    assert {"tiny-judge", "JudgeA", "JudgeB"} <= set(card.judge)
    live = card[(card.judge == "tiny-judge") & (card.subset == "all")].set_index("metric")
    assert live.loc["positional_agreement", "estimate"] == 1.0  # likelihood verdicts are order-free
    assert live.loc["accuracy", "n"] == 7
    compared = pd.read_parquet(out / "judge_comparison.parquet")  # the live judge against each recorded one
    assert {"JudgeA", "JudgeB"} <= {j for r in compared.itertuples() if "tiny-judge" in (r.judge_a, r.judge_b)
                                    for j in (r.judge_a, r.judge_b)}
    juries = {j["jury"]: j["members"] for j in json.loads((out / "summary.json").read_text())["juries"]}
    assert sorted(juries.pop("jury: all 3")) == ["JudgeA", "JudgeB", "tiny-judge"]  # and all but the best:
    [(name, members)] = juries.items()
    assert len(members) == 2 and name == "jury: all but " + ({"JudgeA", "JudgeB", "tiny-judge"} - set(members)).pop()
    assert set(pd.read_parquet(out / "juries.parquet").judge) == {"jury: all 3", name}
    assert set(pd.read_parquet(out / "jury_verdicts.parquet").strategy) == {"majority"}
    assert len(pd.read_parquet(out / "jury_comparison.parquet")) >= 2
    assert "Can a jury replace the best judge?" in (out / "report.html").read_text()
    assert main(["judge-benchmark", "--judge", "nobody", "--params", str(path), "--source", "llmbar",
                 "--path", str(DATA / "llmbar"), "--out", str(out)]) == 2


def test_an_encoder_rebuilt_in_place_is_not_served_its_old_vectors(tmp_path):
    """The embeddings' cache is keyed on the weights as they are now: the same folder
    rebuilt with other weights (a checkpoint retrained in place) gets its own vectors, not
    the old ones from the cache; unchanged weights are served from it."""
    import shutil

    import torch
    from transformers import AutoModel

    from judgeaudit.models.encoder import DEFAULT_ENCODER, Encoder, resolve_path
    from judgeaudit.stages.real_judges import VerdictAuditSettings, make_embedder

    folder, cache = tmp_path / "encoder", tmp_path / "cache"
    shutil.copytree(resolve_path(DEFAULT_ENCODER), folder)
    settings = VerdictAuditSettings(encoder=str(folder), cache_dir=cache, pu=None)
    texts = ["The answer is 4.", "Paris is the capital of France, as every atlas says."]
    first = make_embedder(settings)(texts)
    assert np.array_equal(make_embedder(settings)(texts), first) and len(list(cache.iterdir())) == 1

    model = AutoModel.from_pretrained(folder)
    torch.manual_seed(0)
    with torch.no_grad():
        for weights in model.parameters():
            weights.add_(0.05 * torch.randn_like(weights))
    model.save_pretrained(folder)
    rebuilt = make_embedder(settings)(texts)
    assert not np.allclose(rebuilt, first, atol=1e-3)
    assert np.array_equal(rebuilt, Encoder(str(folder), max_length=settings.max_length).embed(texts))
    assert len(list(cache.iterdir())) == 2
