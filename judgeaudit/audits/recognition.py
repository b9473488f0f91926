"""Can the leakage be seen? Two recognition tests after the preference-leakage study.

(a) Judge recognition: each related judge is shown a response of the student of its
    related generator beside one of another generator's student (same base, method and
    prompt) and asked which came from a model trained on its own outputs. Accuracy against
    chance (0.5), both presentation orders averaged so position bias cannot pass for it.
(b) Generator classifier: a linear head on a frozen sentence encoder (the MiniLM the project
    ships) learns which generator's data a student was trained on from its responses.
    Train and test prompts are disjoint, so the head cannot memorise a prompt's content;
    accuracy on the test prompts against chance (1 / number of generators).

Every accuracy has its n and a bootstrap CI over prompts (a prompt's pairs or responses
resampled together).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.linear_model import LogisticRegression

from judgeaudit.audits.stats import BootstrapSettings, joint_bootstrap

@dataclass(frozen=True)
class ClassifierSettings:
    test_share: float = 0.5  # of the prompts
    c: float = 1.0  # inverse L2 strength of the logistic head
    bootstrap: BootstrapSettings = BootstrapSettings()


def recognition_pairs(responses: pd.DataFrame, related_generator: str) -> pd.DataFrame:
    """Each response of the related generator's student beside each other generator's
    student on the same prompt (same base and method): response_a is the related one."""
    key = ["student_base", "method", "prompt_id"]
    mine = responses[responses.generator == related_generator]
    other = responses[responses.generator != related_generator]
    pairs = mine.merge(other, on=key, suffixes=("_a", "_b"))
    return pairs.rename(columns={"prompt_a": "prompt"})[
        [*key, "prompt", "category_a", "generator_a", "generator_b", "response_a", "response_b"]
    ].rename(columns={"category_a": "category"})


def picks(p_related: np.ndarray) -> np.ndarray:
    """1 where the judge picked the related response, 0 where the other, 0.5 where it could not tell."""
    return np.where(p_related > 0.5, 1.0, np.where(p_related < 0.5, 0.0, 0.5))


def judge_recognition(pick_a: Callable[[list[str], list[str], list[str]], np.ndarray],
                      pairs: pd.DataFrame) -> np.ndarray:
    """P(the judge picks the related response) per pair, averaged over both orders;
    ``pick_a(questions, answers_a, answers_b)`` is P(the judge answers A)."""
    q, a, b = pairs.prompt.tolist(), pairs.response_a.tolist(), pairs.response_b.tolist()
    return (np.asarray(pick_a(q, a, b)) + 1 - np.asarray(pick_a(q, b, a))) / 2


def accuracy_ci(correct: np.ndarray, groups: np.ndarray, chance: float, settings: BootstrapSettings) -> dict:
    """Accuracy with a CI resampling groups (prompts), and an exact binomial test against chance."""
    frame = pd.DataFrame({"c": np.asarray(correct, float), "g": groups})
    per_group = frame.groupby("g").c.agg(["sum", "count"])
    est = joint_bootstrap({"s": per_group["sum"].to_numpy(), "n": per_group["count"].to_numpy()},
                          {"accuracy": lambda c: c["s"].sum(axis=1) / c["n"].sum(axis=1)}, settings)["accuracy"]
    k, n = int(round(frame.c.sum())), len(frame)  # a half pick counts half
    test = stats.binomtest(k, n, chance) if n else None
    return {"accuracy": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high, "n": n,
            "n_prompts": int(len(per_group)), "chance": chance, "p_value": test.pvalue if test else float("nan"),
            "confidence": settings.confidence}


def split_prompts(prompt_ids: pd.Series, test_share: float, seed: int) -> np.ndarray:
    """True for the test prompts: a seeded share of the distinct prompts."""
    ids = np.array(sorted(prompt_ids.unique()))
    rng = np.random.default_rng(seed)
    test = set(rng.choice(ids, size=max(1, round(test_share * len(ids))), replace=False))
    return prompt_ids.isin(test).to_numpy()


def generator_classifier(responses: pd.DataFrame, embeddings: np.ndarray, settings: ClassifierSettings
                         ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy of a logistic head telling the students' generators apart, on held-out
    prompts: overall and per method and per student base; and the test predictions."""
    test = split_prompts(responses.prompt_id, settings.test_share, settings.bootstrap.seed)
    y = responses.generator.to_numpy()
    head = LogisticRegression(C=settings.c, max_iter=2000)
    head.fit(embeddings[~test], y[~test])
    pred = responses[test].assign(predicted=head.predict(embeddings[test]))
    pred["correct"] = pred.predicted == pred.generator
    chance = 1 / responses.generator.nunique()
    rows = [{"scope": "all", "group": "all", **accuracy_ci(pred.correct.to_numpy(), pred.prompt_id.to_numpy(),
                                                           chance, settings.bootstrap)}]
    for scope in ("method", "student_base"):
        for group, part in pred.groupby(scope):
            rows.append({"scope": scope, "group": group,
                         **accuracy_ci(part.correct.to_numpy(), part.prompt_id.to_numpy(), chance,
                                       settings.bootstrap)})
    table = pd.DataFrame(rows).assign(n_train=int((~test).sum()), n_train_prompts=int(
        responses.prompt_id[~test].nunique()))
    return table, pred[["student_id", "prompt_id", "generator", "predicted", "correct"]]
