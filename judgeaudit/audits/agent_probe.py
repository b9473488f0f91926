"""The agents-as-evaluator probe of the unbiased-evaluation paper, over a sweep of
rewriting strengths, and the same probe applied to BOAT itself.

A minimal agents-as-evaluator pipeline rewrites benchmark items and keeps their label.
Three kinds of rewriter, each with a strength s in (0, 1]:

- ``rule``: a meaning-keeping frame around the question; with probability s the key
  entity or number is also swapped (a planted break);
- a configured model (an *agent*): in ``resample`` mode it re-writes a share s of the
  question's words, each sampled from the model given the rewritten words before it
  (any local causal LM); in ``prompt`` mode it is asked to rephrase changing about s of
  the wording (chat and API models);
- ``boat``: a bag of atomic interventions with the paper's probabilities times s
  (binary transformation left out: its true/false queries carry no option label).

Whether the original label still answers a rewritten template item is decided by its
answer-determining words (the entity, every number, the relation word such as
"capital" or "minus", the units): ``label_holds``. BOAT moves its label with every
change, so for BOAT the label it *records* is checked separately, from the option texts.

Every judge states a 1-10 confidence that the original label still holds ("holds" when
>= ``high``). With no ground truth in a real agents pipeline, the reference is the other
judges' majority (leave-one-out consensus): over-confidence = P(judge says holds |
consensus says broken), under-confidence = P(judge says broken | consensus says holds).
Consensus error = P(all judges' majority != truth), where the truth is known. An agent
that is also a judge is tested for self-preference: its over-confidence on its own
rewrites minus on another agent's, over the same items.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from judgeaudit.audits.boat import apply_bag, sample_bag
from judgeaudit.audits.stats import BootstrapSettings, joint_bootstrap, mean_ci
from judgeaudit.generation.corpus import ANIMALS, ANTONYMS, CAPITALS, COLOURS, UNITS, Item
from judgeaudit.generation.mcq import MCQ
from judgeaudit.judging.modes import mode_type
from judgeaudit.models.base import LanguageModel

_POOLS = {"capital": sorted(CAPITALS), "antonym": sorted(ANTONYMS), "colour": sorted(COLOURS),
          "animal": sorted(ANIMALS)}
_RELATIONS = {"arithmetic": ("plus", "minus", "add", "subtract", "+", "-"), "capital": ("capital",),
              "antonym": ("opposite", "antonym"), "colour": ("colour",), "compare": ("larger", "bigger"),
              "animal": ("sound", "noise"), "units": tuple({w for s, b, _ in UNITS for w in (s, b)})}
_FRAMES = ("Could you tell me: {q}", "{q} Please answer briefly.", "Quick question - {q}",
           "I was wondering. {q}")
_TOKEN = re.compile(r"[A-Za-z]+|\d+|[+-]")
PROMPT_TEMPLATE = ("Rewrite the question below in your own words, changing about {percent}% of its wording. "
                   "Reply with the rewritten question only.\nQuestion: {question}\nRewritten question:")


@dataclass(frozen=True)
class ProbeItem:
    item_id: str
    question: str  # the rewritten question
    label: str  # the original item's label
    holds: bool  # does the original label still answer the rewritten question?
    rewriter: str = "rule"
    strength: float = 1.0
    recorded_ok: bool | None = None  # is the label the rewriter records right (default: ``holds``)
    category: str = ""  # the item's subject (the per-subject correlation, the paper's Table 1)


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def _key_words(item: Item) -> list[list[str]]:
    """The answer-determining words of a template item, each as a token sequence."""
    toks = _tokens(item.prompt)
    keys = [_tokens(e) for e in _POOLS.get(item.category, ()) if _contains(toks, _tokens(e))]
    return keys + [[w] for w in _RELATIONS.get(item.category, ()) if w in toks]


def _contains(tokens: list[str], seq: list[str]) -> bool:
    return any(tokens[k:k + len(seq)] == seq for k in range(len(tokens) - len(seq) + 1))


def label_holds(item: Item, question: str) -> bool:
    """Whether ``item``'s label still answers ``question``: every answer-determining word
    of the original survives, and the numbers are the same, in the same order."""
    toks = _tokens(question)
    numbers = [t for t in toks if t.isdigit()]
    return (numbers == [t for t in _tokens(item.prompt) if t.isdigit()]
            and all(_contains(toks, key) for key in _key_words(item)))


def _swap_entity(item: Item, rng: random.Random) -> str | None:
    """The question with its key entity (or first number) replaced by another."""
    if item.category in _POOLS:
        for entity in sorted(_POOLS[item.category], key=len, reverse=True):
            if entity in item.prompt:
                other = rng.choice([e for e in _POOLS[item.category] if e != entity])
                return item.prompt.replace(entity, other, 1)
        return None
    number = re.search(r"\d+", item.prompt)
    if number is None:
        return None
    return item.prompt[:number.start()] + str(int(number.group()) + rng.choice([5, 7, 11])) + \
        item.prompt[number.end():]


def rule_rephrase(items: Sequence[Item], seed: int, strength: float = 0.5) -> list[ProbeItem]:
    """A meaning-keeping frame for every item; the key entity swapped with probability
    ``strength`` (the truth is the planted swap)."""
    rng = random.Random(seed)
    out = []
    for item in items:
        frame, swap = rng.choice(_FRAMES), rng.random() < strength
        swapped = _swap_entity(item, rng) if swap else None
        question = frame.format(q=swapped if swapped else item.prompt)
        out.append(ProbeItem(item.prompt_id, question, item.fact, swapped is None, "rule", strength,
                             category=item.category))
    return out


def _prefix_head(model: LanguageModel) -> str:
    """What the model's prompt format puts before the user's words (for continuation)."""
    marker = "\x00"
    return model.format_prompt(marker).split(marker)[0]


def model_rephrase(agent: LanguageModel, items: Sequence[Item], strength: float, seed: int, *,
                   mode: str = "resample", template: str = PROMPT_TEMPLATE,
                   max_new_tokens: int = 48, strength_as: str = "share", share: float = 0.5) -> list[ProbeItem]:
    """Items rewritten by ``agent``. ``strength_as="probability"`` (the paper's): each item
    rephrased with probability ``strength``, a rephrased one at ``share``, the others kept;
    ``"share"`` (ours): every item rewritten at ``strength``. ``resample``: a share of the
    words (drawn per item) re-sampled left to right, each from the agent given the
    rewritten words before it, in one batched generate call per position; ``prompt``: the
    agent asked to rephrase (an empty reply keeps the question)."""
    if strength_as == "probability":
        rng = random.Random(seed + 7919)
        picked = [k for k in range(len(items)) if rng.random() < strength]
        done = dict(zip(picked, model_rephrase(agent, [items[k] for k in picked], share, seed, mode=mode,
                                               template=template, max_new_tokens=max_new_tokens)))
        return [replace(done[k], strength=strength) if k in done
                else ProbeItem(it.prompt_id, it.prompt, it.fact, True, agent.name, strength, category=it.category)
                for k, it in enumerate(items)]
    if strength_as != "share":
        raise ValueError(f"unknown strength_as {strength_as!r}: probability or share")
    if mode == "prompt":
        prompts = [agent.format_prompt(template.format(question=it.prompt, percent=round(100 * strength)))
                   for it in items]
        replies = agent.generate(prompts, max_new_tokens=max_new_tokens, seed=seed)
        questions = [next((ln.strip() for ln in r.splitlines() if ln.strip()), it.prompt)
                     for r, it in zip(replies, items)]
    elif mode == "resample":
        rng = random.Random(seed)
        words = [it.prompt.split(" ") for it in items]
        chosen = [sorted(rng.sample(range(len(w)), round(strength * len(w)))) for w in words]
        head = _prefix_head(agent)
        for step in range(max((len(c) for c in chosen), default=0)):
            rows = [k for k, c in enumerate(chosen) if len(c) > step]
            prompts = [(head + " ".join(words[k][:chosen[k][step]])).rstrip() for k in rows]
            outs = agent.generate(prompts, max_new_tokens=4, temperature=1.0, seed=seed + step)
            for k, out in zip(rows, outs):
                if out.split():
                    words[k][chosen[k][step]] = out.split()[0]
        questions = [" ".join(w) for w in words]
    else:
        raise ValueError(f"unknown rephrasing mode {mode!r}: resample or prompt")
    return [ProbeItem(it.prompt_id, q, it.fact, label_holds(it, q), agent.name, strength, category=it.category)
            for it, q in zip(items, questions)]


def _recorded_ok(before: MCQ, after: MCQ) -> bool:
    """BOAT's recorded label checked from the option texts: the originally correct text
    is where the label points, or (answer removal) it is gone and the label is N."""
    right = before.options[before.answer]
    if after.answer is None:
        return right not in after.options
    return after.options[after.answer] == right


def boat_rephrase(mcqs: Sequence[MCQ], strength: float, seed: int, strength_as: str = "share") -> list[ProbeItem]:
    """Items under a bag (binary transformation dropped), probed with their original
    label: ``"share"`` (ours) every item under the paper's probabilities times
    ``strength``; ``"probability"`` (the paper's strength) each item intervened on with
    probability ``strength``, under the paper's probabilities."""
    rng = random.Random(seed)
    out = []
    for k, item in enumerate(mcqs):
        if strength_as == "probability":
            bag = sample_bag(rng, jitter=item.jitterable) if rng.random() < strength else ()
        else:
            bag = sample_bag(rng, strength=strength, jitter=item.jitterable)
        bag = tuple(b for b in bag if b not in ("binary_transformation", "question_jitter"))
        after = apply_bag(item, bag, rng, mcqs)
        out.append(ProbeItem(f"m{k:05d}", after.render(), item.gold, after.gold == item.gold, "boat", strength,
                             _recorded_ok(item, after)))
    return out


def confidences(judge: LanguageModel, probes: Sequence[ProbeItem], mode: str = "prompted") -> np.ndarray:
    """1-10 confidence that each label holds, read the way the judge's verdict mode (a
    registered one) reads verdicts: from next-token log-probs, the expected value over the
    score tokens after a rating prompt (``rated_confidences``); otherwise from likelihoods
    (``likelihood_confidences``, for models that cannot follow the prompt)."""
    if mode_type(mode).rates_in_tokens:
        return rated_confidences(judge, probes)
    return likelihood_confidences(judge, probes)


def rated_confidences(judge: LanguageModel, probes: Sequence[ProbeItem]) -> np.ndarray:
    """The expected 1-10 rating over the score tokens after a rating prompt."""
    prompts = [judge.format_prompt(f"Question: {p.question}\nProposed answer: {p.label}\n"
                                   "How confident are you, from 1 to 10, that the proposed answer "
                                   "is correct? Confidence:") for p in probes]
    scores = [str(s) for s in range(1, 11)]
    logp = judge.next_token_logprobs(prompts, [" " + s for s in scores])
    prob = np.exp(logp - logp.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    return prob @ np.arange(1, 11)


def rated_scores(judge: LanguageModel, probes: Sequence[ProbeItem]) -> np.ndarray:
    """The paper's reading: the 1-10 score the judge gives (its most likely score token
    after the rating prompt, as a greedy reply would)."""
    prompts = [judge.format_prompt(f"Question: {p.question}\nProposed answer: {p.label}\n"
                                   "How confident are you, from 1 to 10, that the proposed answer "
                                   "is correct? Confidence:") for p in probes]
    logp = judge.next_token_logprobs(prompts, [f" {s}" for s in range(1, 11)])
    return (np.argmax(logp, axis=1) + 1).astype(float)


def likelihood_confidences(judge: LanguageModel, probes: Sequence[ProbeItem]) -> np.ndarray:
    """1 + 9 x the label's likelihood share against a fixed refusal."""
    prompts = [judge.format_prompt(p.question) for p in probes]
    lp = judge.completion_logprobs(prompts, [p.label for p in probes])
    alt = judge.completion_logprobs(prompts, ["I do not know."] * len(probes))
    mean_lp, mean_alt = lp[:, 0] / lp[:, 1], alt[:, 0] / alt[:, 1]
    return 1 + 9 / (1 + np.exp(mean_alt - mean_lp))


def probe_table(probes: Sequence[ProbeItem], conf: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per (judge, probe): rewriter, strength, item_id, holds, recorded_ok, confidence."""
    base = pd.DataFrame({"rewriter": [p.rewriter for p in probes], "strength": [p.strength for p in probes],
                         "item_id": [p.item_id for p in probes], "holds": [p.holds for p in probes],
                         "recorded_ok": [p.holds if p.recorded_ok is None else p.recorded_ok for p in probes]})
    base["category"] = [p.category for p in probes]
    return pd.concat([base.assign(judge=j, confidence=c) for j, c in conf.items()], ignore_index=True)


def _rate(indicator: np.ndarray, name: str, stats: dict) -> dict:
    if len(indicator) == 0:
        return {}
    est = mean_ci(indicator.astype(float), **stats)
    return {name: est.estimate, f"{name}_ci_low": est.ci_low, f"{name}_ci_high": est.ci_high, f"{name}_n": est.n}


def _verdicts(group: pd.DataFrame, high: float) -> tuple[pd.DataFrame, pd.Series]:
    """(item x judge "says holds", truth per item) of one (rewriter, strength)."""
    says = group.assign(says=group.confidence >= high).pivot(index="item_id", columns="judge", values="says")
    return says.astype(bool), group.groupby("item_id").holds.first().reindex(says.index).astype(bool)


def probe_rates(table: pd.DataFrame, *, n_boot: int, confidence: float, seed: int,
                high: float = 6) -> pd.DataFrame:
    """Per (rewriter, strength) and judge: over- and under-confidence against the other
    judges' majority, and the error against the truth; for "consensus" (all judges'
    majority) the same three against the truth (its error is the consensus error)."""
    stats = dict(n_boot=n_boot, confidence=confidence, seed=seed)
    rows = []
    for (rewriter, strength), group in table.groupby(["rewriter", "strength"], sort=False):
        says, truth = _verdicts(group, high)
        verdicts = {j: (says[j], says.drop(columns=j).mean(axis=1) > 0.5 if says.shape[1] > 1 else truth)
                    for j in says.columns}
        verdicts["consensus"] = (says.mean(axis=1) > 0.5, truth)
        for judge, (said, ref) in verdicts.items():
            rows.append({"rewriter": rewriter, "strength": strength, "judge": judge}
                        | _rate(said[~ref].to_numpy(), "over_confidence", stats)
                        | _rate(~said[ref].to_numpy(), "under_confidence", stats)
                        | _rate((said != truth).to_numpy(), "error", stats))
    return pd.DataFrame(rows)


def rewriter_errors(table: pd.DataFrame, *, n_boot: int, confidence: float, seed: int) -> pd.DataFrame:
    """Per (rewriter, strength): the share of items whose original label no longer holds
    (label_moved), and the share whose recorded label is wrong (label_error: the data
    bias a benchmark built by that rewriter carries), each with n and a CI."""
    stats = dict(n_boot=n_boot, confidence=confidence, seed=seed)
    items = table.drop_duplicates(["rewriter", "strength", "item_id"])
    rows = []
    for (rewriter, strength), g in items.groupby(["rewriter", "strength"], sort=False):
        rows.append({"rewriter": rewriter, "strength": strength}
                    | _rate(~g.holds.to_numpy(bool), "label_moved", stats)
                    | _rate(~g.recorded_ok.to_numpy(bool), "label_error", stats))
    return pd.DataFrame(rows)


def _nan_mean(x: np.ndarray) -> np.ndarray:
    """Row means over the finite entries (nan where a row has none)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nansum(x, axis=1) / np.isfinite(x).sum(axis=1)


def self_preference(table: pd.DataFrame, *, settings: BootstrapSettings, high: float = 6) -> pd.DataFrame:
    """For each agent that is also a judge, at each strength and against each other
    agent: its over-confidence on its own broken rewrites minus on the other's, items
    resampled jointly; broken by the other judges' majority (reference "consensus") and
    by the truth (reference "truth"). Positive: it waves its own broken rewrites through
    more often."""
    judges = set(table.judge)
    agents = [r for r in table.rewriter.unique() if r in judges]
    rows = []
    for strength, group in table.groupby("strength", sort=False):
        verdicts = {r: _verdicts(g, high) for r, g in group.groupby("rewriter") if r in agents}
        for agent in verdicts:
            for other in (o for o in verdicts if o != agent):
                for reference in ("consensus", "truth"):
                    cols = {}
                    for key, rewriter in (("own", agent), ("other", other)):
                        says, truth = verdicts[rewriter]
                        broken = ~(says.drop(columns=agent).mean(axis=1) > 0.5) if reference == "consensus" else ~truth
                        cols[key] = np.where(broken, says[agent].astype(float), np.nan)
                    est = joint_bootstrap(cols, {"gap": lambda c: _nan_mean(c["own"]) - _nan_mean(c["other"])},
                                          settings)["gap"]
                    rows.append({"agent": agent, "other": other, "strength": strength, "reference": reference,
                                 "gap": est.estimate, "gap_ci_low": est.ci_low, "gap_ci_high": est.ci_high,
                                 "n_items": est.n, "n_own_broken": int(np.isfinite(cols["own"]).sum()),
                                 "n_other_broken": int(np.isfinite(cols["other"]).sum())})
    return pd.DataFrame(rows)
