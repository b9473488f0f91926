"""A real Prefect flow run (a local test server) of the whole DAG on a tiny config
whose models learn their house styles: every stage's table is written and validated,
the planted preference leakage is recovered (PLS > 0, CI excluding 0, every tier), and
`dvc repro` of the same config in another folder gives identical tables (tests/test_dvc_repro.py).
The run is the session fixture ``tiny_audit`` (tests/conftest.py), which that test and the kill
drill share: each run of the tiny DAG costs minutes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from judgeaudit.attacks.presentation import ATTACKS
from tests.conftest import TINY_TABLES

pytestmark = pytest.mark.slow


def _not_json(constant: str) -> None:
    raise AssertionError(f"{constant} in a JSON file: strict readers (a browser's JSON.parse) reject it")


def test_full_audit_flow(tiny_audit):
    from prefect.client.orchestration import get_client

    _, first = tiny_audit  # the session's one run of full_audit (tests/conftest.py)
    pls = pd.read_parquet(first / "metrics/pls.parquet")
    tiers = pls[pls.scope == "tier"].set_index("tier")
    assert set(tiers.index) == {"same", "inheritance", "same_family"}
    assert (tiers.ci_low <= tiers.estimate).all() and (tiers.estimate <= tiers.ci_high).all()
    assert (tiers.n == 16).all()  # eval prompts
    # the planted leakage (students take their generator's house style, judges of that style
    # prefer it) is found: every tier's PLS is positive with a CI that excludes 0, and SFT,
    # which copies the style most, shows it too
    assert (tiers.ci_low > 0).all(), tiers[["estimate", "ci_low", "ci_high"]]
    sft = pls[(pls.scope == "method") & (pls.method == "sft")]
    assert (sft.ci_low > 0).all()
    pairs = pls[pls.scope == "pair"]
    assert set(pairs.method) == {"sft", "dpo", "icl"}
    judgments = pd.read_parquet(first / "judgments/judgments.parquet")
    # 6 judges x 3 methods x 1 pair x 16 prompts x 2 orders
    assert len(judgments) == 6 * 3 * 16 * 2
    assert (judgments.verdict == "tie").mean() < 0.5  # not the degenerate all-tie data of a toy config
    responses = pd.read_parquet(first / "responses/responses.parquet")
    assert responses.response.nunique() > len(responses) / 4
    for path in [first / "report/report.json", *first.glob("*/summary.json")]:  # strict JSON: a browser reads it
        json.loads(path.read_text(), parse_constant=_not_json)
    report = json.loads((first / "report/report.json").read_text())
    assert report["summary"]["pls_by_tier"].keys() == {"same", "inheritance", "same_family"}
    assert "Preference leakage audit" in (first / "report/report.html").read_text()
    consistency = json.loads((first / "metrics/summary.json").read_text())["position_consistency"]
    assert consistency["n"] == 6 * 3 * 16 and consistency["n_prompts"] == 16  # (judge, pair)s, prompts
    assert consistency["ci_low"] <= consistency["estimate"] <= consistency["ci_high"]
    assert "verdict pairs over 16 prompts" in (first / "report/report.html").read_text()
    assert (first / "report/pls_by_tier.png").stat().st_size > 1000
    # the figure's data, for dvc.yaml's plots: the PLS of each tier and method, as computed
    plotted = (first / "report/plots/pls_by_tier.json").read_text()
    bars = pd.DataFrame(json.loads(plotted, parse_constant=_not_json))
    cells = pls[pls.scope == "method"].merge(bars, on=["tier", "method"], suffixes=("", "_plotted"))
    assert len(cells) == len(bars) == (pls.scope == "method").sum() == 9  # 3 tiers x 3 methods
    assert (cells.estimate == cells.estimate_plotted).all() and (cells.n == cells.n_plotted).all()
    studies = json.loads((first / "leakage_studies/summary.json").read_text())
    mixing = pd.DataFrame(studies["mixing"]["points"])
    assert list(mixing.share) == [0.25, 1.0] and (mixing.n == 16).all()
    assert mixing.ci_low.iloc[-1] > 0  # the full-data SFT students leak, as the main audit's do
    assert {"slope", "slope_ci_low", "slope_ci_high", "r2"} <= set(studies["mixing"]["fit"])
    scale = pd.DataFrame(studies["scale"]["points"])
    assert list(scale.student_base) == ["student-mini", "student"] and scale.n_parameters.is_monotonic_increasing
    assert "Data mixing and model scale" in (first / "report/report.html").read_text()
    # the preference-leakage paper's tables beside ours: 3 tiers x 3 methods, recognition by the
    # judges and by the classifier, plain and five mitigations for PLS and for Error Bias, the
    # mixing figure's two
    leak = {stage: json.loads((first / stage / "paper_rows.json").read_text())
            for stage in ("metrics", "robustness", "leakage_studies")}
    assert len(leak["metrics"]) == 9 and len(leak["leakage_studies"]) == 2
    mitigation = [r for r in leak["robustness"] if r["table"] == "mitigation table"]
    assert [r["figure"].split(" under ")[0] for r in mitigation] == ["PLS"] * 6 + ["Error Bias"] * 6
    assert all(r["ci_low"] <= r["ours"] <= r["ci_high"] for r in mitigation)
    assert [r["table"] for r in leak["robustness"]].count("Table 5 (recognition)") == 2
    table1 = next(r for r in leak["metrics"] if r["table"] == "Table 1 (main)")
    assert table1["ours"] == report["summary"]["pls_by_tier_method"]["same/sft"]["estimate"]
    assert table1["reproduces"] is (table1["ci_low"] > 0)
    # the neutral data in house styles no generator of the run writes (here formal and terse)
    assert studies["neutral"] == "unrelated" and studies["neutral_styles"] == ["casual", "plain"]
    boat = report["boat"]
    assert set(boat) == {"clean", "contaminated", "probe", "real", "settings", "single", "sources"}
    assert boat["clean"]["runs"] == 2
    # the paper's definitions, recorded beside the figures they gave
    assert boat["settings"] == {"shot_bags": "same", "jitter": "question_jitter", "gsm8k_vanilla": "generate"}
    assert sum(boat["clean"]["confusion"].values()) == 2 * 8
    assert set(boat["real"]) == {"mmlu", "gsm8k"} and boat["real"]["mmlu"]["clean"]["n_items"] == 6
    single = pd.DataFrame(boat["single"])
    assert set(single.benchmark) == {"generated", "mmlu", "gsm8k"}
    # models x each intervention alone: six on every benchmark; on GSM8K only, the paper's
    # question jitter and ours (re-solved options) beside it
    assert len(single) == 2 * (6 + 6 + 8)
    for jitter in ("question_jitter", "question_jitter_resolve"):
        assert set(single[single.intervention == jitter].benchmark) == {"gsm8k"}
    boat_rows = pd.read_parquet(first / "boat/results.parquet")
    assert len(boat_rows) == 2 * (2 * 8 + 6 + 6)  # models x (runs x generated + 1 run x real items)
    probe = boat["probe"]
    rewriters = pd.DataFrame(probe["rewriters"]).set_index(["rewriter", "strength"])
    assert set(rewriters.index) == {(r, s) for r in ("rule", "gen-f", "gen-t", "boat") for s in (0.25, 1.0)}
    # the agents' rewrites carry wrong labels, more of them at full strength; BOAT moves
    # labels (shuffling, relabelling, answer removal) and records every one right
    for agent in ("gen-f", "gen-t"):
        assert 0 < rewriters.loc[(agent, 0.25), "label_error"] <= rewriters.loc[(agent, 1.0), "label_error"]
    assert (rewriters.loc["boat", "label_error"] == 0).all() and rewriters.loc[("boat", 1.0), "label_moved"] > 0
    assert rewriters.loc[("rule", 1.0), "label_error"] == 1.0 and (rewriters.label_error_n == 14).all()
    rates = pd.DataFrame(probe["rates"])
    # six judges, their pooled row ("judges") and the consensus, per rewriter and strength
    assert len(rates) == 8 * 8 and set(rates.judge) == {"gen-f", "gen-t", "inh-f", "inh-t", "sib-f", "sib-t",
                                                        "judges", "consensus"}
    shares = [c for c in rates if c.endswith(("confidence", "error"))]
    assert shares and all(rates[c].dropna().between(0, 1).all() for c in shares)
    consensus = rates[rates.judge == "consensus"]
    assert consensus.consensus_error.notna().all() and consensus.over_confidence.isna().all()
    assert rates[rates.judge != "consensus"].over_confidence_n.notna().all()
    gaps = pd.DataFrame(probe["self_preference"])
    assert len(gaps) == 2 * 2 * 2 and set(gaps.reference) == {"consensus", "truth"}  # agents x strengths x refs
    assert (first / "report/boat_probe.png").stat().st_size > 1000
    pu = report["pu"]
    conditions = {(r["judge"], r["condition"]) for r in pu["consistency"]}
    assert len(conditions) == 6 * (1 + len(ATTACKS))  # every judge, clean and under every attack
    assert {r["attack"] for r in pu["attack_flip_rates"]} == set(ATTACKS)
    assert all(0 <= r["n_excluded"] < 14 and r["n_pairs"] <= 14 - r["n_excluded"] for r in pu["consistency"])
    sens = pd.DataFrame(pu["sensitivity"])
    # the paper's two sweeps, the share verified (m estimated) and the transport mass m
    grid = {0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99}
    assert set(sens.sweep) == {"p_ratio", "m"} and set(sens[sens.sweep == "p_ratio"].p_ratio) == grid
    assert set(sens[sens.sweep == "m"].m.round(2)) == grid
    assert len(sens) == 2 * 7 * 6 * (1 + len(ATTACKS))  # the sweeps, per judge and condition, in the stage
    encoders = pd.DataFrame(pu["encoders"])
    # MiniLM under the paper's and our definitions, and gen-f's last hidden state under the paper's
    variants = encoders.groupby(["encoder", "definitions"]).size()
    assert len(encoders) == 3 * len(conditions) and len(variants) == 3 and (variants == len(conditions)).all()
    assert set(encoders.definitions) == {"paper", "ours"} and encoders.suspect_auc.between(0, 1).all()
    for png in ("radar", "sensitivity", "scores_clean"):
        assert (first / f"report/pu_{png}.png").stat().st_size > 1000
    assert "PU audit of the judges" in (first / "report/report.html").read_text()
    robust = report["robustness"]
    assert {r["condition"] for r in robust["ablation"]} == {"original", "no-style", "no-format", "no-wording"}
    assert {r["attack"] for r in robust["attack_flips"]} == set(ATTACKS)
    mitigation = pd.DataFrame(robust["mitigation"])
    assert set(mitigation.condition) == {"plain", "prompting", "chain-of-thought", "paraphrase",
                                         "automatic-calibration", "contextual-calibration"}
    assert set(mitigation.metric) == {"pls", "error_bias"} and (mitigation.n > 0).all()
    assert (first / "report/robustness_mitigation.png").stat().st_size > 1000
    judges = [r for r in robust["recognition"]["judges"] if r["tier"] != "all"]
    assert len(judges) == 6 and all(0.4 < r["mean_p_related"] < 0.6 for r in judges)
    clf = next(r for r in robust["recognition"]["classifier"] if r["scope"] == "all")
    assert clf["ci_low"] > clf["chance"] == 0.5  # the students' generators told apart on held-out prompts
    prefix = report["prefix"]
    rows = pd.DataFrame(prefix["summary"]["rows"])
    assert set(rows.source) == {"synthetic", "hh-rlhf"}
    assert set(rows[rows.source == "synthetic"].base) == {"student", "student-mini"}  # the cross-model table
    assert set(rows[rows.source == "hh-rlhf"].base) == {"student"}  # real preferences: the main base (every_base off)
    assert set(rows.variant) == {"zero-shot", "baseline", "aug", "aug-gen"}
    gen = rows[rows.variant == "aug-gen"]  # both directions: trained on gender audited on race, and back
    assert {(r.trained_group, r.group) for r in gen.itertuples()} == {("gender", "race"), ("race", "gender")}
    assert len(rows) == (2 + 1) * (1 + 1 + 2) * 2  # (source, base) x (zero-shot, baseline, 2 group RMs) x groups
    assert (rows.accuracy_ci_low <= rows.accuracy).all() and (rows.n_test > 0).all()
    assert (first / "report/prefix_models.png").stat().st_size > 1000
    assert (first / "report/prefix_bias.png").stat().st_size > 1000
    controlled = pd.read_parquet(first / "robustness/controlled_win_rates.parquet")
    assert set(controlled.control) == {"raw", "length", "length+style"}
    assert set(controlled.condition) == {"clean", "length-attack"}
    assert len(controlled) == 3 * 6 * 3 * 2  # controls x judges x cells (3 methods, 1 pair) x conditions
    assert {r["control"] for r in report["robustness"]["length_gameability"]} == {"raw", "length", "length+style"}
    corr = pd.read_parquet(first / "score_range/correlations.parquet")
    assert set(corr.score_range) == {"0-4", "3-7"} and set(corr.kind) == {"spearman", "pearson", "kendall"}
    assert set(corr.method) == {"greedy", "expected", "cd_greedy", "cd_expected", "assistant_greedy"}
    assert (corr.n == 54).all()  # 12 items x 5 levels, 10% to dev
    assert set(report["score_range"]["summary"]["chosen"][0]) >= {"lam", "t", "n_dev"}
    grid = pd.read_parquet(first / "score_range/grid.parquet")
    assert len(grid) == 2 * 4 * 3 and set(grid.assistant) == {"sib-f"}  # ranges x lambdas x t: kept whole
    favoured = pd.DataFrame(report["score_range"]["summary"]["favoured"])
    assert len(favoured) == 2 and (favoured.n == 54).all() and set(favoured.assistant) == {"sib-f"}
    assert (favoured.assistant_excess_ci_low <= favoured.assistant_excess).all()
    for png in ("histograms", "grid"):
        assert (first / f"score_range/{png}.png").stat().st_size > 1000
        assert (first / f"report/score_range_{png}.png").exists()
    assert "Does the assistant share the bias?" in (first / "report/report.html").read_text()
    assert "Score-range bias" in (first / "report/report.html").read_text()
    # the real judges' leaderboard opens the main report (here on the benchmarks' format samples)
    html = (first / "report/report.html").read_text()
    assert html.index("Read this first") < html.index("Preference leakage audit") and "JudgeA" in html
    card = pd.read_parquet(first / "real_judges/judge_quality.parquet")
    assert set(card.source) == {"llmbar", "pandalm", "judgebench"}
    compared = pd.read_parquet(first / "real_judges/judge_comparison.parquet")  # judge against judge
    in_report = pd.DataFrame(report["real_judges"]["comparison"])
    assert len(compared) > 0 and in_report[["judge_a", "judge_b"]].equals(compared[["judge_a", "judge_b"]])
    assert np.allclose(in_report.difference, compared.difference)
    strategies = pd.read_parquet(first / "real_judges/strategy_comparison.parquet")  # JudgeA: Swap vs Vanilla
    assert len(strategies) == len(report["real_judges"]["strategies"]) > 0 and set(strategies.base) == {"Vanilla"}
    assert "Which judge is more accurate?" in html
    assert report["real_judges"]["juries"] == [] and "Can a jury" not in html  # no sample has three judges
    # JudgeBench's sample: j1 and the reward model err on the same pair; LLMBar's sample judges make no error in
    # their headline strategies, so they have no correlation
    errors = pd.read_parquet(first / "real_judges/error_correlation.parquet")
    assert errors[["source", "judge_a", "judge_b", "correlation"]].values.tolist() == [["judgebench", "j1", "rm", 1.0]]
    assert len(report["real_judges"]["error_correlation"]) == 1 and "Which judges err together?" in html
    # PandaLM's sample carries three human labels per pair: judge-x agrees with the other two annotators at least
    # as well as the left-out one on 3 of 5 pairs, too few to win against any of them
    alt = pd.read_parquet(first / "real_judges/alt_test.parquet")
    assert alt.annotator.tolist() == ["annotator1", "annotator2", "annotator3"] and set(alt.judge) == {"judge-x"}
    assert not alt.passed.any() and alt.advantage_prob.iloc[0] == pytest.approx(0.6)
    assert len(report["real_judges"]["alt_test"]) == 3 and "Can the judge replace a human annotator?" in html
    # trust or escalate: JudgeB's four LLMBar pairs are too few for any threshold to carry the guarantee
    kept = pd.read_parquet(first / "real_judges/selective.parquet")
    assert set(kept.judge) == {"JudgeB"} and np.isinf(kept.threshold).all() and len(kept) == 7
    assert kept.set_index("metric").loc["coverage", "estimate"] == 0 and "Trust or escalate" in html
    board = pd.read_parquet(first / "leaderboard/win_rates.parquet")
    assert board.loc[board.flagged, "model"].tolist() == ["NullModel"] and "Leaderboard:" in html

    for table in TINY_TABLES:  # tests/test_dvc_repro.py: `dvc repro` elsewhere gives the same tables
        assert (first / table).stat().st_size > 0, table

    async def artifact_keys():
        async with get_client() as client:
            return {a.key for a in await client.read_artifacts()}

    import asyncio

    assert {"preference-leakage", "pls-pairs"} <= asyncio.run(artifact_keys())


def test_each_stage_is_a_flow_run_of_the_full_audit(tiny_audit):
    """On a Prefect server every stage of the full audit is a completed run of the one
    generic flow ``stage``, named for the stage, under the full audit's run."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    from judgeaudit.runner.registry import names

    async def runs():
        async with get_client() as client:
            return await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["stage"])))

    done = {r.name for r in asyncio.run(runs()) if r.state and r.state.is_completed()}
    assert set(names()) <= done, set(names()) - done


def test_effects_of_the_run_and_a_run_that_loses_some(tiny_audit, tmp_path, capsys):
    """`judgeaudit effects`: the tiny run's findings (the planted leakage among them); the
    same run against itself keeps them all; a run whose metrics intervals all straddle zero,
    and that lacks the prefix stage, loses exactly those (exit 1, each named), unless that
    run is also the reseeded one, which makes them seed-fragile."""
    from flows.cli import main
    from judgeaudit.report.effects import find_effects

    _, root = tiny_audit
    found = find_effects(root)
    metrics = [e for e in found.values() if e.where.startswith("metrics:") and e.sign]
    prefix = [e for e in found.values() if e.where.startswith("prefix:") and e.sign]
    assert metrics and prefix and any(e.sign > 0 and "pls" in e.where for e in metrics)
    # the report's metrics.json (dvc.yaml's metrics): every interval, the ones in summaries'
    # lists of rows included, by stage and the name `judgeaudit effects` gives it
    written = json.loads((root / "report" / "metrics.json").read_text())
    assert sum(len(rows) for rows in written.values()) == len(found)
    for where, effect in found.items():
        stage, _, path = where.partition(": ")
        entry = written[stage][path]
        for field in ("ci_low", "ci_high", "n"):  # JSON writes an undefined (NaN) bound as null
            ours = getattr(effect, field)
            assert entry.get(field) == ours or (entry.get(field) is None and ours != ours), (where, field)
    assert any("[" in path for path in written["prefix"])  # rows of a list, keyed by their text fields
    assert main(["effects", str(root), "--against", str(root)]) == 0
    assert "keeps every effect" in capsys.readouterr().out

    def straddle(node):
        if isinstance(node, dict):
            return {k: -1.0 if k.endswith("ci_low") else 1.0 if k.endswith("ci_high") else straddle(v)
                    for k, v in node.items()}
        return [straddle(v) for v in node] if isinstance(node, list) else node

    for summary in root.glob("*/summary.json"):
        if summary.parent.name != "prefix":
            (tmp_path / summary.parent.name).mkdir()
            content = json.loads(summary.read_text())
            if summary.parent.name == "metrics":
                content = straddle(content)
            (tmp_path / summary.parent.name / "summary.json").write_text(json.dumps(content))
    assert main(["effects", str(root), "--against", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.count("lost: metrics:") == len(metrics) and out.count("lost: prefix:") == len(prefix)
    assert out.count("lost: ") == len(metrics) + len(prefix)
    assert out.count("(n=") >= 2 * sum(e.n is not None for e in metrics)  # every figure with its n, both runs

    # held to the effects a reseeded run repeats: the ones the straddling run lacks are
    # seed-fragile, so the same run keeps every effect that is left
    assert main(["effects", str(root), "--reseeded", str(tmp_path), "--against", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("seed-fragile: ") == len(metrics) + len(prefix) and "keeps every effect" in out
    assert f"{sum(bool(e.sign) for e in found.values()) - len(metrics) - len(prefix)} of " in out

    # a cut held under both seeds: it keeps every effect under ROOT's seed (itself) but loses
    # the straddled ones under the other, so they count as lost, named apart from the rest
    assert main(["effects", str(root), "--against", str(root), "--against-reseeded", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.count("lost under the other seed: ") == len(metrics) + len(prefix)
    assert out.count("lost: ") == 0 and f"loses {len(metrics) + len(prefix)} effects" in out
    assert main(["effects", str(root), "--against", str(root), "--against-reseeded", str(root)]) == 0
    assert "keeps every effect" in capsys.readouterr().out
