"""The tests' tiny configuration: the project's params.yaml shrunk so that the whole DAG runs
in about a minute on 2 cores, with the tests' format samples of the real benchmarks. Its own
module, free of conftest.py's session settings, so that bench/warm_stages.py can run it too."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from judgeaudit.params_file import Replace, merge, read_params_file

ROOT = Path(__file__).resolve().parents[1]


def tiny_overlay(processes: int = 1) -> dict:
    """What the tiny configuration changes in the project's params.yaml, as an overlay
    (judgeaudit/params_file.py: mappings merge, ``Replace`` and other values replace): two
    generators, one student base, tiny models; ``processes``: workers for a stage's
    independent tasks."""
    data = ROOT / "tests" / "data"  # format samples of the real benchmarks
    return {
        # just enough for the house styles to be learnt (a model of 1 epoch on 96 items wrote
        # the same string for every prompt, so every verdict was a tie and the audit had
        # nothing to find): the end-to-end tests assert the planted leakage is recovered
        # objective prompts only: 16 eval prompts over ten categories left the tiny leakage too thin to find
        "corpus": {"n_pretrain": 400, "n_train_prompts": 24, "n_eval_prompts": 16, "subjective": []},
        "embedded": {"vocab_size": 320,
                     "sizes": Replace({"tiny": {"layers": 1, "hidden": 64, "heads": 2, "intermediate": 128},
                                       "mini": {"layers": 1, "hidden": 32, "heads": 2, "intermediate": 64}}),
                     "pretrain": {"epochs": 6, "lr": 0.005, "batch_size": 16}},
        "models": Replace({
            "gen-f": {"build": {"corpus_style": "formal", "size": "tiny", "seed": 1}},
            "gen-t": {"build": {"corpus_style": "terse", "size": "tiny", "seed": 2}},
            "inh-f": {"build": {"corpus_style": "mixed", "init_from": "gen-f", "seed": 3, "epochs": 1}},
            "inh-t": {"build": {"corpus_style": "mixed", "init_from": "gen-t", "seed": 6, "epochs": 1}},
            "sib-f": {"build": {"corpus_style": "formal", "size": "tiny", "seed": 7}},
            "sib-t": {"build": {"corpus_style": "terse", "size": "tiny", "seed": 4}},
            "student": {"build": {"corpus_style": "mixed", "size": "tiny", "seed": 5}},
            "student-mini": {"build": {"corpus_style": "mixed", "size": "mini", "seed": 8}},
        }),
        "leakage_studies": Replace({"tier": "same", "mixing_student": "student", "shares": [0.25, 1.0],
                                    "scale_students": ["student-mini", "student"]}),
        "generate": {"max_new_tokens": 12},
        "train": {"sft": {"epochs": 1, "batch_size": 8}, "dpo": {"epochs": 1, "batch_size": 8},
                  "icl_shots": 2},
        "leakage": {"generators": ["gen-f", "gen-t"], "students": ["student"],
                    "judges": Replace({
                        "gen-f": {"same": "gen-f", "inheritance": "inh-f", "same_family": "sib-f"},
                        "gen-t": {"same": "gen-t", "inheritance": "inh-t", "same_family": "sib-t"}}),
                    "unrelated_judges": []},
        "audit": {"n_boot": 200},
        "prefix": {"base": "student", "bases": ["student-mini"], "n_items": 20, "test_share": 0.4,
                   "groups": {"gender": ["", "I am a woman. "], "race": ["", "I am black. "]},
                   "aug_pairs": 1, "train": {"batch_size": 8},
                   "planted_prefix": "I am black. ", "planted_share": 0.5,
                   "hh_rlhf": {"path": str(data / "hh-rlhf"), "n_items": 20}},
        "pu": {"n_pairs": 14, "p_ratio": 0.3, "splits": 2,
               "compare_encoders": [{"name": "gen-f", "path": "gen-f", "pooling": "last"}]},
        "boat": {"model": "student", "n_items": 8, "runs": 2, "shots": 1,
                 "contaminate": {"epochs": 2, "lr": 0.003, "batch_size": 8},
                 "real": {"mmlu": str(data / "mmlu"), "gsm8k": str(data / "gsm8k"), "n_items": 6, "shots": 2,
                          "runs": 1},
                 "probe": {"n_items": 14, "strengths": [0.25, 1.0], "agents": ["gen-f", "gen-t"]}},
        "score_range": {"n_train_items": 14, "n_items": 12, "ranges": [[0, 4], [3, 7]],
                        "judges": [{"main": "gen-f", "assistant": "sib-f", "favourite": 4}],
                        "train": {"epochs": 1, "lr": 0.003}},
        # the real judges' benchmarks' format samples are too small for the PU audit
        "real_judges": {"sources": {"llmbar": str(data / "llmbar"), "pandalm": str(data / "pandalm"),
                                    "judgebench": str(data / "judgebench")},
                        "n_boot": 200, "pu": Replace({"splits": 2, "folds": 2, "max_length": 32}),
                        # PandaLM's sample has five items; LLMBar's four pairs per judge
                        "alt_test": {"min_items": 2}, "selective": {"min_n": 2, "splits": 5}},
        "leaderboard": {"path": str(data / "alpacaeval"), "n_boot": 200, "self_preference": None},
        # in-process: worker processes that import torch cost more than the tiny tasks they
        # share; the end-to-end flow and the kill drill run the default pool of two
        "scale": {"processes": processes},
    }


def tiny_params(processes: int = 1) -> dict:
    """The project's params.yaml with the tiny overlay merged over it."""
    return merge(read_params_file(ROOT / "params.yaml").data, tiny_overlay(processes))


def write_tiny_params(path: Path, processes: int = 1) -> Path:
    path.write_text(yaml.safe_dump(tiny_params(processes), sort_keys=False))
    return path


def tiny_repo(repo: Path, processes: int = 1) -> Path:
    """A git repository at ``repo`` holding the stages (dvc.yaml and the code they run) and
    the tiny params: where a test runs the tiny `dvc repro` (DVC is initialised by the caller,
    with the environment it runs DVC in)."""
    repo.mkdir(parents=True)
    for item in ("dvc.yaml", "judgeaudit", "flows"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, repo / item)
    write_tiny_params(repo / "params.yaml", processes=processes)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo
