"""The sources' own published figures, recomputed from the judgment table by each source's
own definitions, side by side with what they published (``sources/published/``).

- LLMBar publishes ``statistics.json`` per (set, judge, strategy): correct counts per
  order, both, ``equal`` (positional agreement), the average accuracy, and four kappas.
  Its scorer maps a verdict to 1 if it is "1" and to 0 otherwise, while the label stays
  1 or 2, so a "2" verdict never agrees with a "2" label: its published kappa_False /
  kappa_True / kappa_average are not Cohen's kappa of verdict and label (GPT-4 Vanilla on
  Natural: 95.5% accurate, published kappa 0.27, Cohen's kappa 0.91). We recompute them
  with that mapping, to show they reproduce, and report the real kappa in the card.
- PandaLM's README publishes the inter-annotator kappas (two decimals), the majority
  label counts, each judge's accuracy / macro precision / recall / F1 against the
  majority (an unparseable "garbage" verdict read as a tie), and (win, lose, tie) counts
  per pair of response models for the humans and each judge.
- AlpacaEval publishes its leaderboard (raw and length-controlled win rates, SEs, counts);
  ``alpacaeval_figures`` sets a leaderboard's figures beside it.
- JudgeBench's paper (Tan et al., ICLR 2025, arXiv 2410.12784; its repository holds no
  figure) publishes, per judge, the score of its scorer (``utils/metrics.py``: a pair
  scores when more of its two orders agree with the label than against it, so a tie
  beside a right verdict counts) per category and overall, in percent to two decimals:
  Table 2 for the Arena-Hard judge by model (o1-mini's verdicts are in the files), Table 3
  for the five reward models, all on the GPT-4o response pairs
  (``judgebench_paper.csv``). Categories are the ``source`` prefixes its scorer filters
  on: mmlu-pro (knowledge), livebench-reasoning, livebench-math, livecodebench (coding).
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from judgeaudit.audits.judge_quality import CODE, MISSING, item_frame, macro_scores

COLUMNS = ["source", "subset", "judge", "strategy", "figure", "published", "ours", "match"]


def _published(name: str):
    return resources.files("judgeaudit.sources").joinpath("published", name)


def _row(source, subset, judge, strategy, figure, published, ours, tol=1e-9) -> dict:
    match = None if published is None or (isinstance(published, float) and np.isnan(published)) else \
        bool(abs(float(ours) - float(published)) <= tol)
    return dict(source=source, subset=subset, judge=judge, strategy=strategy, figure=figure,
                published=np.nan if published is None else float(published), ours=float(ours), match=match)


def llmbar_figures(items: pd.DataFrame) -> list[dict]:
    """LLMBar's statistics.json figures, recomputed, against the published ones."""
    published = pd.read_csv(_published("llmbar_statistics.csv").open())
    groups = {k: g for k, g in items[items.source == "llmbar"].groupby(["subset", "judge", "strategy"])}
    rows = []
    for pub in published.itertuples():
        g = groups.get((pub.subset, pub.judge, pub.strategy))
        if g is None:
            continue
        v1, v2, label = g.v1.to_numpy(), g.v2.to_numpy(), g.label.to_numpy()
        c1, c2 = int((v1 == label).sum()), int((v2 == label).sum())
        ours = {"n": len(g), "correct_order1": c1, "correct_order2": c2,
                "correct_both": int(((v1 == label) & (v2 == label)).sum()), "equal": int((v1 == v2).sum()),
                "correct_average_pct": (c1 + c2) / 2 / len(g) * 100}
        as_llmbar = [np.where(v == 1, 1, 0) for v in (v1, v2)]  # LLMBar's scorer: "1" -> 1, else 0
        with np.errstate(invalid="ignore", divide="ignore"):
            k1, k2 = (cohen_kappa_score(v, label) for v in as_llmbar)
            ours |= {"kappa_order1": k1, "kappa_order2": k2, "kappa_average": (k1 + k2) / 2,
                     "kappa_agreement": cohen_kappa_score(*as_llmbar)}
        for figure, value in ours.items():
            rows.append(_row("llmbar", pub.subset, pub.judge, pub.strategy, figure, getattr(pub, figure), value))
    return rows


def pandalm_figures(table: pd.DataFrame, items: pd.DataFrame) -> list[dict]:
    """PandaLM README's figures, recomputed, against the published ones (two decimals)."""
    pub = json.loads(_published("pandalm_readme.json").read_text())
    table = table[table.source == "pandalm"]
    if table.empty:
        return []
    first = table.drop_duplicates("item_id")
    humans = np.array([[CODE[v] for v in row] for row in first["human_labels"]])
    rows = []
    for pair, value in pub["kappa_humans"].items():
        a, b = (int(x[-1]) - 1 for x in pair.split("/"))
        rows.append(_row("pandalm", "test", *pair.split("/"), "kappa_humans", value,
                         round(cohen_kappa_score(humans[:, a], humans[:, b]), 2)))
    counts = first["label"].value_counts()
    for label, value in pub["label_counts"].items():
        rows.append(_row("pandalm", "test", "label", "human majority", f"label_count_{label}", value,
                         int(counts.get(label, 0))))
    items = items[items.source == "pandalm"]
    for judge, figures in pub["judges"].items():
        g = items[items.judge == judge]
        if g.empty:
            continue
        valid = g.label.to_numpy() != MISSING
        scores = macro_scores(g.label.to_numpy()[None], g.v1.to_numpy()[None], valid[None], (1, 2, 0))
        ours = {"accuracy": float((g.v1 == g.label)[valid].mean()),
                **{k: float(v[0]) for k, v in scores.items()}}
        for figure, value in figures.items():
            rows.append(_row("pandalm", "test", judge, "default", figure, value, round(ours[figure] * 100, 2)))
    for who, cells in pub["win_lose_tie"].items():
        verdicts = (first.set_index("item_id")["label"] if who == "human" else
                    table[table.judge == who].set_index("item_id")["verdict"].replace({"unparseable": "tie"}))
        for pair, (win, lose, tie) in cells.items():
            ours = _win_lose_tie(first.set_index("item_id"), verdicts, *pair.split("/"))
            for figure, value, got in zip(("wins", "losses", "ties"), (win, lose, tie), ours):
                rows.append(_row("pandalm", "test", who, pair, figure, value, got))
    return rows


def _win_lose_tie(items: pd.DataFrame, verdicts: pd.Series, a: str, b: str) -> tuple[int, int, int]:
    """(wins, losses, ties) of model ``a`` against model ``b``."""
    sel = items[((items.model_1 == a) & (items.model_2 == b)) | ((items.model_1 == b) & (items.model_2 == a))]
    v = verdicts.reindex(sel.index)
    winner = np.where(v == "1", sel.model_1, np.where(v == "2", sel.model_2, None))
    return int((winner == a).sum()), int((winner == b).sum()), int((v == "tie").sum())


def judgebench_figures(items: pd.DataFrame) -> list[dict]:
    """JudgeBench's score per judge, response model and category (subset
    "<response model>/<category>", "all" overall), against its paper's figures."""
    jb = items[items.source == "judgebench"]
    if jb.empty:
        return []
    published = pd.read_csv(_published("judgebench_paper.csv").open()).set_index(
        ["response_model", "strategy", "judge"])
    jb = jb.assign(response_model=jb.model_1.fillna("unknown"))
    rows = []
    for (model, judge, strategy), g in jb.groupby(["response_model", "judge", "strategy"]):
        counter = sum(np.where(g[v] == g.label, 1, np.where((g[v] > 0) & (g[v] != g.label), -1, 0))
                      for v in ("v1", "v2"))
        scored = pd.Series(counter > 0, index=g.index)
        paper = published.loc[(model, strategy, judge)] if (model, strategy, judge) in published.index else None
        for category, hit in [*scored.groupby(g.subset), ("all", scored)]:
            value = None if paper is None else paper.get("overall" if category == "all" else category)
            rows.append(_row("judgebench", f"{model}/{category}", judge, strategy, "score_pct", value,
                             float(hit.mean() * 100), tol=0.005))  # the paper rounds to 2 decimals
    return rows


def alpacaeval_figures(board: pd.DataFrame) -> pd.DataFrame:
    """AlpacaEval 2.0's own leaderboard figures (GPT-4 Turbo judge) beside ours."""
    pub = pd.read_csv(_published("alpacaeval_gpt4_turbo_leaderboard.csv").open()).set_index("model")
    ours = board.set_index("model")
    rows = []
    pairs = {"win_rate": "win_rate", "win_rate_se": "standard_error", "n_wins": "n_wins",
             "n_wins_base": "n_wins_base", "n_draws": "n_draws", "n": "n_total",
             "discrete_win_rate": "discrete_win_rate", "lc_win_rate": "length_controlled_winrate",
             "lc_se": "lc_standard_error"}
    for model in sorted(set(ours.index) & set(pub.index)):
        for mine, theirs in pairs.items():
            value = pub.loc[model, theirs]
            if pd.isna(value):
                continue
            rows.append({"model": model, "figure": mine, "published": float(value),
                         "ours": float(ours.loc[model, mine]), "diff": float(ours.loc[model, mine] - value)})
    return pd.DataFrame(rows)


def published_summary(published: pd.DataFrame) -> dict:
    if published.empty:
        return {}
    out = {}
    for figure, g in published.groupby("figure"):
        exact = (g["diff"].abs() <= 1e-6 * np.maximum(1, g["published"].abs())).sum()
        out[figure] = {"models": int(len(g)), "exact": int(exact), "max_abs_diff": float(g["diff"].abs().max()),
                       "within_1_point": int((g["diff"].abs() <= 1).sum())}
    return out


def reproduce_published(table: pd.DataFrame) -> pd.DataFrame:
    """Every published figure we can recompute, for the sources present in ``table``."""
    items = item_frame(table)
    rows = llmbar_figures(items) + pandalm_figures(table, items) + judgebench_figures(items)
    return pd.DataFrame(rows, columns=COLUMNS)
