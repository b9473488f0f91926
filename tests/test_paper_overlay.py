"""params-gpu.yaml's experiments run on CPU through the code path a GPU run takes
(``judgeaudit.runner.execute``): tiny local Llamas under its model names, transformers on CPU
standing in for vLLM on CUDA; score range and prefix with params-gpu.yaml's settings kept
whole, BOAT and the PU audit with fewer items, runs and epochs but every definition the GPU
run uses, and the preference-leakage study from the generators' answers to the mitigations with
fewer prompts and epochs. The papers' rows carry our figures, and their "differs" text names
the overlay's models, not the embedded default's tiny ones."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from judgeaudit.params_file import read_params_file
from judgeaudit.report.paper_rows import read_paper_rows
from tests.tiny import ROOT

pytestmark = pytest.mark.slow
GPU = ROOT / "params-gpu.yaml"


def _smaller_llama(tiny_lm, out: Path) -> Path:
    """A second, smaller tiny Llama on the same tokenizer (the assistants' stand-in)."""
    from transformers import AutoTokenizer

    from judgeaudit.models.scratch import build_llama

    tok = AutoTokenizer.from_pretrained(tiny_lm.spec.path)
    build_llama(tok, layers=1, hidden=16, heads=2, intermediate=32, max_positions=128, seed=1).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _cpu_overlay(tmp_path: Path, tiny_lm, extra: str = "", small: tuple[str, ...] = ("asst-",)) -> Path:
    """params-gpu.yaml with its models replaced by tiny local Llamas (those whose names start
    with one of ``small``, the assistants by default, by a smaller one), on CPU in one process;
    ``extra``: more YAML merged over it."""
    smaller = _smaller_llama(tiny_lm, tmp_path / "small-llama")
    names = list(read_params_file(GPU).data["models"])
    local = {"backend": "transformers", "device": "cpu", "dtype": "float32", "chat_template": "Q: {prompt}\nA:",
             "max_length": 128}
    models = {name: {"spec": {**local, "path": str(smaller if name.startswith(small) else tiny_lm.spec.path)}}
              for name in names}
    overlay = tmp_path / "params-gpu-on-cpu.yaml"
    overlay.write_text(f"extends: {GPU}\nmodel_defaults: {{device: cpu, dtype: float32}}\n"
                       "scale: {runner: local, processes: 1}\nmodels: !replace\n"
                       + "".join(f"  {name}: {json.dumps(entry)}\n" for name, entry in models.items())
                       + extra)
    return overlay


def test_the_gpu_overlay_runs_both_papers_on_cpu_and_writes_our_figures(tmp_path, tiny_lm):
    from judgeaudit.config import load_params
    from judgeaudit.runner.execute import execute

    overlay = _cpu_overlay(tmp_path, tiny_lm)
    gpu, cpu = load_params(GPU), load_params(overlay)
    assert cpu.score_range == gpu.score_range and cpu.prefix == gpu.prefix  # the experiments as the GPU runs them
    assert {gpu.models[j.main].spec.backend for j in gpu.score_range.judges} == {"vllm"}
    assert gpu.prefix.aug_pairs == 3 and gpu.prefix.all_bases == ["student-qwen", "student-llama"]

    root = tmp_path / "data"
    execute("score_range", overlay, root)
    execute("prefix", overlay, root)

    rows = read_paper_rows(root / "score_range")
    assert {r["figure"].rsplit(", ", 1)[-1] for r in rows} == {"gen-qwen + asst-qwen", "gen-llama + asst-llama"}
    gain = [r for r in rows if r["figure"].startswith("CD gain")]
    assert len(gain) == 4 and all(r["paper_value"] and r["n"] == 540 for r in gain)  # 120 items x 5, 10% to dev
    excess = [r for r in rows if "excess" in r["figure"]]
    assert all(r["ours"] is not None and r["ci_low"] <= r["ours"] <= r["ci_high"] for r in excess)
    summary = json.loads((root / "score_range/summary.json").read_text())
    assert {f["assistant_smaller"] for f in summary["families"]} == {True}  # the smaller assistant, measured
    assert all(f["family_items"] == 0 for f in summary["families"])  # real judges: nothing planted, nothing trained

    rows = read_paper_rows(root / "prefix")
    tables = {r["table"] for r in rows}
    assert {"omega before augmentation", "omega after augmentation", "alpha before augmentation",
            "alpha after augmentation", "across architectures", "reward model accuracy"} <= tables
    arch = [r for r in rows if r["table"] == "across architectures"]
    assert {r["figure"].split("base ")[1].split(" ")[0] for r in arch} == {"student-qwen", "student-llama"}
    # 200 items, 30% tested: 60 pairs, 120 unique answers for omega
    assert all(r["n"] == (120 if r["table"].startswith("omega") else 60) for r in rows)
    assert all(r["ours"] is not None and r["ci_low"] <= r["ours"] <= r["ci_high"] for r in rows)
    for path in (root / "score_range", root / "prefix"):
        assert not any("tiny models" in r["differs"] for r in read_paper_rows(path))
        assert all("params-gpu.yaml" in r["overlay"] for r in read_paper_rows(path))
    summary = json.loads((root / "prefix/summary.json").read_text())
    assert summary["aug_pairs"] == 3 and summary["architectures"] == {"student-qwen": "llama", "student-llama": "llama"}


# sizes, and the data's paths
SIZES = {"n_items", "runs", "epochs", "n_pairs", "splits", "max_pairs", "mmlu", "gsm8k"}


def _definitions(section) -> dict:
    """A config section without its sizes: what defines the experiment."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in SIZES}
        return value
    return strip(section.model_dump())


def test_the_gpu_overlay_runs_boat_and_the_pu_audit_on_cpu_with_the_papers_definitions(tmp_path, tiny_lm):
    from judgeaudit.config import load_params
    from judgeaudit.report.pu_report import TABLE5
    from judgeaudit.runner.execute import execute

    data = ROOT / "tests" / "data"  # the benchmarks' format samples, in place of ../shared/data
    overlay = _cpu_overlay(tmp_path, tiny_lm, (
        "boat: {n_items: 16, runs: 2, contaminate: {epochs: 2},\n"
        f"       real: {{mmlu: {data / 'mmlu'}, gsm8k: {data / 'gsm8k'}, n_items: 6, runs: 2}},\n"
        "       probe: {n_items: 12}}\n"
        "pu: {n_pairs: 40, splits: 3}\n"
        "attacks: {max_new_tokens: 8}\n"))
    gpu, cpu = load_params(GPU), load_params(overlay)
    assert _definitions(cpu.boat) == _definitions(gpu.boat) and _definitions(cpu.pu) == _definitions(gpu.pu)
    assert gpu.boat.model == "student-qwen" and gpu.models["student-qwen"].spec.path == "Qwen/Qwen2.5-0.5B"
    assert (gpu.boat.shot_bags, gpu.boat.jitter, gpu.boat.real.gsm8k_vanilla, gpu.boat.probe.rule) == (
        "same", "question_jitter", "generate", "paper")  # the BOAT paper's definitions
    assert (gpu.pu.core_filter, gpu.pu.positives) == ("winner", "all")  # the PU paper's

    root = tmp_path / "data"
    execute("boat", overlay, root)
    execute("pu", overlay, root)

    summary = json.loads((root / "boat/summary.json").read_text())
    assert summary["settings"] == {"gsm8k_vanilla": "generate", "jitter": "question_jitter",
                                   "shot_bags": "same"}
    assert set(summary["real"]) == {"mmlu", "gsm8k"} and summary["probe"]["rule"] == "paper"
    rows = read_paper_rows(root / "boat")
    tables = {r["table"] for r in rows}
    assert {"Main results (vanilla vs BOAT)", "Each intervention alone", "Table 1"} <= tables
    main = {r["figure"] for r in rows if r["table"] == "Main results (vanilla vs BOAT)"}
    assert {f"accuracy drop vanilla - BOAT | {b} | {m}" for b in ("generated", "mmlu", "gsm8k")
            for m in ("clean", "contaminated")} == main
    alone = [r for r in rows if r["table"] == "Each intervention alone"]
    assert {r["figure"].split(" | ")[1] for r in alone} >= {"answer_removal", "distractor_question",
                                                            "label_replacement", "question_jitter"}
    for r in rows:
        assert "tiny embedded model" not in r["differs"] and "small local model" not in r["differs"], r
        assert "params-gpu.yaml" in r["overlay"]
        assert r["ours"] is None or r["ci_low"] is None or r["ci_low"] <= r["ours"] <= r["ci_high"], r
    assert all("student-qwen" in r["differs"] for r in rows if r["table"] != "Table 1"
               and not r["table"].startswith("Probing"))
    probing = [r for r in rows if r["table"].startswith("Probing")]
    assert probing and all("the overlay's agents (none)" in r["differs"] for r in probing)

    rows = read_paper_rows(root / "pu")
    (table5,) = [r for r in rows if r["table"] == "Table 5"]
    judges = {j for group in gpu.leakage.judges.values() for j in group.model_dump().values() if j}
    judges |= set(gpu.leakage.unrelated_judges)
    assert table5["paper_value"] == TABLE5 and table5["n"] == 40 * len(judges)  # pairs x the roster's judges
    assert {r["figure"] for r in rows if r["table"] == "m sweep (sensitivity)"} == {
        f"agreement gain at m = {m}, clean, mean over judges" for m in ("0.01", "0.99")}  # the paper's sweep
    assert all("the overlay's judges" in r["differs"] and "embedded judges" not in r["differs"] for r in rows)
    assert all(r["ci_low"] <= r["ours"] <= r["ci_high"] for r in rows if r["ci_low"] is not None)


LEAKAGE = ("bootstrap", "generate", "train", "respond", "judge", "audit", "robustness", "leakage_studies")


def test_the_gpu_overlay_runs_the_preference_leakage_study_on_cpu_with_its_definitions(tmp_path, tiny_lm):
    from judgeaudit.config import load_params
    from judgeaudit.report.leakage_paper import EMBEDDED, MITIGATIONS
    from judgeaudit.runner.execute import execute

    # the Llama family's models smaller than the others', so that its judges' verdicts differ
    smaller = ("asst-", "gen-llama", "inh-llama", "sib-llama", "student-llama")
    overlay = _cpu_overlay(tmp_path, tiny_lm, small=smaller, extra=(
        "corpus: {n_train_prompts: 12, n_eval_prompts: 6}\n"
        "generate: {max_new_tokens: 8}\n"
        "train: {sft: {epochs: 1, batch_size: 8}, dpo: {epochs: 1, batch_size: 8}, icl_shots: 1}\n"
        "audit: {n_boot: 200}\n"
        "recognition: {max_pairs: 20}\n"
        "mitigation: {cot_tokens: 4}\n"
        "attacks: {max_new_tokens: 8}\n"))
    gpu, cpu = load_params(GPU), load_params(overlay)
    for section in ("leakage", "judge", "leakage_studies", "recognition"):  # the study as the GPU runs it
        assert _definitions(getattr(cpu, section)) == _definitions(getattr(gpu, section)), section
    assert cpu.train.dpo_beta == gpu.train.dpo_beta
    assert cpu.attacks.rewriter == gpu.attacks.rewriter == "unrelated"
    assert gpu.judge.mode == "prompted"
    assert {gpu.models[r["judge"]].spec.backend for r in gpu.judge_roster()} == {"vllm"}
    inheriting = [g for g in gpu.leakage.generators if gpu.leakage.judges[g].inheritance]
    assert len(inheriting) == 3  # every generator: the inheritance tier has a PLS for each pair

    root = tmp_path / "data"
    for stage in LEAKAGE:
        execute(stage, overlay, root)

    rows = {stage: read_paper_rows(root / stage) for stage in ("metrics", "robustness", "leakage_studies")}
    figures = {r["figure"] for r in rows["metrics"]}
    assert {f"PLS, {m} students, {t} judges" for m in ("SFT", "DPO", "ICL")
            for t in ("same model", "inheritance", "same family")} == figures
    assert all(r["n"] == 6 for r in rows["metrics"])  # the held-out prompts
    mitigation = [r for r in rows["robustness"] if r["table"] == "mitigation table"]
    assert [r["figure"].split(" under ")[1].split(",")[0] for r in mitigation] == [
        "plain judging", *MITIGATIONS[1:]] * 2  # PLS, then Error Bias: the paper's six rows
    assert all(r["n"] == 3 for r in mitigation)  # the held-out half; the other half calibrates
    assert all("paraphrased by unrelated" in r["differs"] for r in mitigation if "paraphrase" in r["figure"])
    assert {r["table"] for r in rows["leakage_studies"]} == {"Figure: data mixing"}
    for r in (r for stage_rows in rows.values() for r in stage_rows):
        assert EMBEDDED not in r["differs"] and "the overlay's checkpoints" in r["differs"], r
        assert "params-gpu.yaml" in r["overlay"]
        assert r["ci_low"] <= r["ours"] <= r["ci_high"], r
    judgments = pd.read_parquet(root / "judgments/judgments.parquet")
    assert set(judgments["mode"]) == {"prompted"} and set(judgments["order"]) == {"AB", "BA"}
    # the judges differ: PLS is not 0 by construction
    assert judgments.groupby("judge")["p_a"].mean().nunique() > 1
    summary = json.loads((root / "leakage_studies/summary.json").read_text())
    assert [p["share"] for p in summary["mixing"]["points"]] == gpu.leakage_studies.shares
