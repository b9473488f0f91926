"""The user's judge as a pointwise scorer: both responses of every labelled pair scored on
several score ranges (1-5, 1-10, 0-100 by default) from the log-probabilities of the score
tokens, the distribution of its scores per range, and how well each range's scores follow the
label (the better response's reference is 1, the other's 0), with contrastive decoding
against an assistant judge where one is given (``audits.score_range.range_study``: lambda and
t chosen on a dev split, every method reported on the rest).

A score of several tokens ("10", "100") needs the probability of the whole sequence: local
backends give it; an endpoint's top log-probs give only the first token's, so a range with
scores above 9 is scored there by echo (the completions endpoint's log-probs of the prompt
followed by each score, as a local backend scores candidates that tokenize unevenly): one
request per score and response, 101 for 0-100. A chat endpoint gives no prompt log-probs:
there only ranges within 0-9 are taken."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgeaudit.audits.correlation import correlation_table
from judgeaudit.audits.score_range import range_study
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.judging.pointwise import expected, greedy, score_logprobs, score_tokens
from judgeaudit.models.base import LanguageModel
from judgeaudit.templates import SCORE_TEMPLATE

RANGES = ((1, 5), (1, 10), (0, 100))
LAMBDAS, TEMPERATURES, DEV_SHARE = (0.01, 0.1, 0.5, 1.0), (0.5, 1.0, 2.0), 0.2


def parse_ranges(text: str) -> list[tuple[int, int]]:
    """"1-5,1-10,0-100" as [(1, 5), (1, 10), (0, 100)]; a ValueError naming a bad one."""
    ranges = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        low, sep, high = part.partition("-")
        if not sep or not low.isdigit() or not high.isdigit() or int(high) <= int(low):
            raise ValueError(f"--ranges {part!r}: give LOW-HIGH with LOW < HIGH, e.g. 1-5,1-10,0-100")
        ranges.append((int(low), int(high)))
    return ranges


def _by_echo(model: LanguageModel, high: int) -> bool:
    """Whether ``model`` scores a range up to ``high`` by echo: an endpoint judge's several-token scores."""
    return getattr(model.spec, "backend", "") == "openai" and high > 9


def check_ranges(model: LanguageModel, ranges: Sequence[tuple[int, int]]) -> None:
    """Refuse, before any call, a range of several-token scores on a chat endpoint judge."""
    if getattr(model.spec, "chat_template", None) == "auto":
        wide = [f"{lo}-{hi}" for lo, hi in ranges if _by_echo(model, hi)]
        if wide:
            raise ValueError(f"--ranges {', '.join(wide)}: a chat endpoint's top log-probs give one token, so "
                             "scores above 9 cannot be read from them; give --prompt-format for the completions "
                             "endpoint (scored by echo) or use ranges within 0-9")


def range_logprobs(model: LanguageModel, rows: pd.DataFrame, low: int, high: int) -> np.ndarray:
    """[n, high-low+1]: log-probs of each score of the range for ``rows``' answers,
    renormalised over the range; an endpoint's several-token scores by echo, one call each."""
    if not _by_echo(model, high):
        return score_logprobs(model, rows["prompt"].tolist(), rows["answer"].tolist(), low, high)
    prompts = [model.format_prompt(SCORE_TEMPLATE.format(low=low, high=high, question=q, answer=a))
               for q, a in zip(rows["prompt"], rows["answer"])]
    scores = score_tokens(low, high)
    summed = model.completion_logprobs([p for p in prompts for _ in scores], scores * len(prompts))[:, 0]
    logp = summed.reshape(len(prompts), len(scores))
    return logp - np.logaddexp.reduce(logp, axis=-1, keepdims=True)


def score_requests(model: LanguageModel, items: pd.DataFrame, ranges: Sequence[tuple[int, int]]) -> None:
    """Ask ``model`` every score the pointwise audit of ``items`` asks (a dry run's planner
    counts them)."""
    check_ranges(model, ranges)
    rows, _ = _reference(items)
    for low, high in ranges:
        range_logprobs(model, rows, low, high)


def _reference(items: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    labelled = items[items["label"].isin(["1", "2"])].reset_index(drop=True)
    rows = pd.concat([labelled.assign(side="1", answer=labelled["response_1"]),
                      labelled.assign(side="2", answer=labelled["response_2"])], ignore_index=True)
    return rows, (rows["side"] == rows["label"]).to_numpy(float)


def pointwise_audit(judge: LanguageModel, items: pd.DataFrame, ranges: Sequence[tuple[int, int]],
                    boot: BootstrapSettings, assistant: LanguageModel | None = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame, list[dict]]:
    """(correlations: one row per range, method and kind with its CI; scores: every scored
    response's greedy and expected score per range; chosen: the contrastive decoding's
    lambda and t per range, where an assistant is given)."""
    check_ranges(judge, ranges)
    if assistant is not None:
        check_ranges(assistant, ranges)
    rows, reference = _reference(items)
    if len(rows) < 8:
        raise ValueError(f"the pointwise audit needs at least 4 labelled pairs (got {len(rows) // 2})")
    tables, scores, chosen = [], [], []
    for low, high in ranges:
        logp = range_logprobs(judge, rows, low, high)
        scores.append(rows[["source", "subset", "item_id", "side", "label"]].assign(
            score_range=f"{low}-{high}", greedy=greedy(logp, low), expected=expected(logp, low)))
        if assistant is None:
            table = correlation_table(reference, {"greedy": greedy(logp, low).astype(float),
                                                  "expected": expected(logp, low)}, "greedy",
                                      n_boot=boot.n_boot, confidence=boot.confidence, seed=boot.seed)
        else:
            logp_a = range_logprobs(assistant, rows, low, high)
            table, best, _, _ = range_study(logp, logp_a, reference, low, lambdas=LAMBDAS, temperatures=TEMPERATURES,
                                            dev_share=DEV_SHARE, n_boot=boot.n_boot, confidence=boot.confidence,
                                            seed=boot.seed)
            chosen.append({"score_range": f"{low}-{high}", **best})
        tables.append(table.assign(score_range=f"{low}-{high}"))
    return pd.concat(tables, ignore_index=True), pd.concat(scores, ignore_index=True), chosen


def score_histograms(scores: pd.DataFrame, path) -> None:
    """The distribution of the judge's greedy scores, one panel per range."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranges = list(dict.fromkeys(scores["score_range"]))
    fig, axes = plt.subplots(1, len(ranges), figsize=(4 * len(ranges), 3), squeeze=False)
    for ax, name in zip(axes[0], ranges):
        low, high = (int(x) for x in name.split("-"))
        part = scores[scores["score_range"] == name]
        ax.hist(part["greedy"], bins=np.arange(low, high + 2) - 0.5, color="tab:blue")
        ax.set_title(f"{name} (n={len(part)})")
        ax.set_xlabel("greedy score")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
