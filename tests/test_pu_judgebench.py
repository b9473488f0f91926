"""The PU audit on real judges' verdicts (JudgeBench in ../shared/data): the pipeline
runs end to end with the packaged MiniLM encoder and reports honest figures, and its
self-check says "do not apply" where the adjustment makes real verdicts worse."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

JUDGEBENCH = ROOT.parent / "shared" / "data" / "judgebench"
O1_MINI = "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model=o1-mini-2024-09-12.jsonl"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not JUDGEBENCH.is_dir(), reason=f"JudgeBench data not present at {JUDGEBENCH} (shared data)")]


def test_judgebench_reader_on_the_real_files():
    from judgeaudit.audits.pu_verdicts import binary_items
    from judgeaudit.sources.judgebench import read_judgebench

    table, report = read_judgebench(JUDGEBENCH)
    assert table.groupby("judge").size().eq(700).all() and table.judge.nunique() == 6  # 350 pairs x 2 orders
    assert set(table.subset) == {"knowledge", "reasoning", "math", "coding"}
    assert report.summary()["rows_rejected"] == 0
    items, excluded = binary_items(table)
    assert items.groupby("judge").size().min() >= 340  # o1-mini's both-orders ties are excluded, counted
    assert excluded.tie_verdict.sum() == 350 - items.groupby("judge").size().min()


def test_a_folder_without_the_gpt4o_pairs_file(tmp_path):
    from judgeaudit.sources.judgebench import read_judgebench

    (tmp_path / O1_MINI).symlink_to(JUDGEBENCH / O1_MINI)
    table, _ = read_judgebench(tmp_path)
    assert len(table) == 700 and set(table.judge) == {"o1-mini-2024-09-12"}


def test_pu_audit_on_judgebench(tmp_path):
    from judgeaudit.audits.pu_audit import PUConfig
    from judgeaudit.audits.pu_verdicts import binary_items
    from judgeaudit.models.encoder import Encoder
    from judgeaudit.audits.pu_judgebench import judgebench_pu_audit
    from judgeaudit.report.pu_report import write_pu_report
    from judgeaudit.sources.judgebench import read_judgebench

    cfg = PUConfig(n_splits=3)
    table, sens, items = judgebench_pu_audit(JUDGEBENCH, Encoder(max_length=128), cfg, n_boot=300,
                                             sensitivity=False)
    overall = table[table.qtype == "all"].set_index("judge")
    # Cons_orig over the unlabelled pairs tracks the judge's plain agreement with ground truth
    pairs, _ = binary_items(read_judgebench(JUDGEBENCH)[0])
    agreement = (pairs.verdict == pairs.human).groupby(pairs.judge).mean()
    assert (overall.cons_orig - agreement.reindex(overall.index)).abs().max() < 0.05
    assert ((overall.cons_adj_ci_low <= overall.cons_adj) & (overall.cons_adj <= overall.cons_adj_ci_high)).all()
    assert overall.flip_rate.between(0, 1).all() and (overall.n_pairs > 300).all()
    paths = write_pu_report(table, sens, items, cfg.eta, tmp_path)
    assert paths["radar_png"].stat().st_size > 1000
    assert paths["projection_png"].stat().st_size > 1000


def test_self_check_refuses_the_adjustment_that_hurts_o1_mini(tmp_path):
    """On JudgeBench the adjustment lowers o1-mini's agreement with the ground truth; the
    self-check, which sees only the verified pairs, must say so."""
    from judgeaudit.audits.pu_audit import PUConfig
    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.stages.real_judges import VerdictAuditSettings, audit_verdicts, make_embedder
    from judgeaudit.sources.judgebench import read_judgebench

    (tmp_path / O1_MINI).symlink_to(JUDGEBENCH / O1_MINI)
    table, _ = read_judgebench(tmp_path)
    settings = VerdictAuditSettings(BootstrapSettings(500, 0.95, 0), PUConfig(n_splits=4, seed=0), pu_folds=3,
                                    cache_dir=tmp_path / "cache")
    result = audit_verdicts(table, settings, embed=make_embedder(settings))
    row = result.pu[result.pu.qtype == "all"].iloc[0]
    assert row.cons_adj < row.cons_orig  # the truth: flipping hurts
    assert row.check_gain_ci_high < 0 and row.recommendation.startswith("do not apply")
