"""Students distilled from each generator's data by SFT, DPO or in-context learning, and
their answers to the held-out eval prompts (stages ``train`` and ``respond``, and the
leakage studies' own students)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import pandas as pd

from judgeaudit.config import Train
from judgeaudit.layout import Layout
from judgeaudit.models import load_model
from judgeaudit.models.spec import ModelSpec


@dataclass(frozen=True)
class StudentSettings:
    """What training a student takes from params.yaml: ``train``, the chat template of a
    base whose own is "auto" (the embedded one), and the seed."""
    train: Train
    template: str
    seed: int


def student_id(base: str, generator: str, method: str) -> str:
    return f"{base}--{generator}--{method}"


def _own(synthetic: pd.DataFrame, generator: str) -> pd.DataFrame:
    return synthetic[synthetic["generator"] == generator].sort_values("prompt_id")


def dpo_pairs(synthetic: pd.DataFrame, generator: str, template: str) -> list[dict]:
    """chosen = the generator's own answer; rejected = another generator's answer to the
    same prompt, the other generators taken in turn."""
    others = sorted(set(synthetic["generator"]) - {generator})
    table = synthetic.pivot(index="prompt_id", columns="generator", values="answer")
    prompts = _own(synthetic, generator).set_index("prompt_id")["prompt"]
    rows = []
    for k, (pid, prompt) in enumerate(prompts.items()):
        rows.append({"prompt": template.format(prompt=prompt), "chosen": " " + table.loc[pid, generator],
                     "rejected": " " + table.loc[pid, others[k % len(others)]]})
    return rows


def icl_shots(synthetic: pd.DataFrame, generator: str, shots: int, seed: int) -> list[str]:
    """The ``shots`` few-shot examples (prompt ids) an ICL student sees, fixed by the seed."""
    ids = sorted(_own(synthetic, generator)["prompt_id"])
    return sorted(random.Random(seed).sample(ids, min(shots, len(ids))))


def train_student(base: str, spec: ModelSpec, generator: str, method: str, synthetic: pd.DataFrame,
                  layout: Layout, settings: StudentSettings) -> dict:
    """Train (or, for ICL, assemble) one student of base ``base`` (loaded with ``spec``);
    return its index row."""
    from judgeaudit.training.trainers import dpo, sft  # torch and trl: only where a student is trained

    sid = student_id(base, generator, method)
    out = layout.students / sid
    template = spec.chat_template if spec.chat_template != "auto" else settings.template
    train, seed = settings.train, settings.seed
    student_seed = seed + sum(map(ord, sid))
    row = {"student_id": sid, "student_base": base, "generator": generator, "method": method,
           "path": "", "shots": "[]", "train_loss": float("nan"), "steps": 0}
    if method == "icl":
        return {**row, "path": layout.to_stored(spec.path),
                "shots": json.dumps(icl_shots(synthetic, generator, train.icl_shots, seed))}
    if method == "sft":
        rows = [{"prompt": template.format(prompt=p), "completion": " " + a}
                for p, a in _own(synthetic, generator)[["prompt", "answer"]].itertuples(index=False)]
        summary = sft(spec.path, spec.path, rows, out, train.sft, student_seed, spec.max_length)
    elif method == "dpo":
        summary = dpo(spec.path, dpo_pairs(synthetic, generator, template), out, train.dpo,
                      train.dpo_beta, student_seed, spec.max_length)
    else:
        raise ValueError(f"unknown training method {method!r}")
    return {**row, "path": layout.to_stored(out), "train_loss": float(summary["train_loss"] or float("nan")),
            "steps": int(summary["steps"])}


def respond(student: dict, base_spec: ModelSpec, prompts: pd.DataFrame, synthetic: pd.DataFrame,
            layout: Layout, max_new_tokens: int, seed: int, progress: bool = False) -> pd.DataFrame:
    """One student's greedy answers (``max_new_tokens`` at most) to the eval prompts (ICL:
    few-shot context first); ``base_spec``: the spec its base loads with."""
    spec = base_spec.model_copy(update={"path": layout.from_stored(student["path"])})
    model = load_model(spec, name=student["student_id"], progress=progress)
    evals = prompts[prompts["split"] == "eval"].reset_index(drop=True)
    context = ""
    if student["method"] == "icl":
        shots = _own(synthetic, student["generator"]).set_index("prompt_id").loc[json.loads(student["shots"])]
        context = "".join(f"{model.format_prompt(p)} {a}\n\n" for p, a in
                          shots[["prompt", "answer"]].itertuples(index=False))
    formatted = [context + model.format_prompt(p) for p in evals["prompt"]]
    answers = model.generate(formatted, max_new_tokens=max_new_tokens, seed=seed)
    return evals.assign(**{k: student[k] for k in ("student_id", "student_base", "generator", "method")},
                        response=answers)[["student_id", "student_base", "generator", "method",
                                           "prompt_id", "prompt", "category", "fact", "response"]]
