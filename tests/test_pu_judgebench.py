"""The PU audit on real judges' verdicts (JudgeBench in ../shared/data): the pipeline
runs end to end with the packaged MiniLM encoder and reports honest figures."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

JUDGEBENCH = ROOT.parent / "shared" / "data" / "judgebench"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not JUDGEBENCH.is_dir(), reason=f"JudgeBench data not present at {JUDGEBENCH} (shared data)")]


def test_judgebench_loaders():
    from judgeaudit.sources.judgebench import load_judges, load_pairs

    pairs, judges = load_pairs(JUDGEBENCH), load_judges(JUDGEBENCH)
    assert len(pairs) == 350 and set(pairs.human) == {"A", "B"}
    assert set(pairs.qtype) == {"knowledge", "reasoning", "math", "coding"}
    assert judges.groupby("judge").size().eq(350).all() and judges.judge.nunique() == 6


def test_pu_audit_on_judgebench(tmp_path):
    from judgeaudit.audits.pu_audit import PUConfig
    from judgeaudit.models.encoder import Encoder
    from judgeaudit.pipeline.pu import judgebench_pu_audit
    from judgeaudit.report.pu_report import write_pu_report
    from judgeaudit.sources.judgebench import load_judges, load_pairs

    cfg = PUConfig(n_splits=3)
    table, sens, items = judgebench_pu_audit(JUDGEBENCH, Encoder(), cfg, n_boot=300, sensitivity=False)
    overall = table[table.qtype == "all"].set_index("judge")
    # Cons_orig over the unlabelled pairs tracks the judge's plain agreement with ground truth
    merged = load_judges(JUDGEBENCH).merge(load_pairs(JUDGEBENCH), on="pair_id")
    agreement = (merged.verdict == merged.human).groupby(merged.judge).mean()
    assert (overall.cons_orig - agreement.reindex(overall.index)).abs().max() < 0.05
    assert ((overall.cons_adj_ci_low <= overall.cons_adj) & (overall.cons_adj <= overall.cons_adj_ci_high)).all()
    assert overall.flip_rate.between(0, 1).all() and (overall.n_pairs > 300).all()
    paths = write_pu_report(table, sens, items, cfg.eta, tmp_path)
    assert paths["radar_png"].stat().st_size > 1000
    assert paths["projection_png"].stat().st_size > 1000
