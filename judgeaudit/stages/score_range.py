"""Stage ``score_range``: pointwise judges under several score ranges: greedy and expected
scores vs contrastive decoding, correlation with reference scores, with CIs. The scorers
are fine-tuned side by side first, each one unit over the stage's worker processes; then
each (judge, assistant) pair's audit is one unit, handed the fine-tuned scorers.

pointwise judges score the same graded answers under several
score ranges; greedy and expected scores vs contrastive decoding with a smaller
same-family assistant, tuned on a dev split, reported on the rest."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.audits.score_range import (ASSISTANT, METHODS, favoured_score, method_scores, range_effects,
                                          range_study)
from judgeaudit.config import Params, ScoreJudge
from judgeaudit.generation.corpus import make_items
from judgeaudit.generation.graded import LEVELS, graded_answers
from judgeaudit.judging.pointwise import score_logprobs
from judgeaudit.layout import Layout
from judgeaudit.models import ModelSpec, load_model
from judgeaudit.report.paper_rows import write_paper_rows
from judgeaudit.report.score_range_report import score_range_paper_rows, write_score_range_report
from judgeaudit.sources.summeval import FILE as SUMMEVAL_FILE, summeval_items
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish, write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="score_range",
    params=(*MODELS, "audit", "score_range"),
    deps=("models",),
    outs=("score_range",),
    section="score_range",
    pool=True,
    gpu=True,
    plots=(("score_range/histograms.png", {}),),
)


OVERLAY = ("params-gpu.yaml `score_range`: Qwen2.5-7B-Instruct with Qwen2.5-0.5B-Instruct and "
           "Meta-Llama-3-8B-Instruct with Llama-3.2-1B-Instruct as assistants, on vLLM")


def graded_items(params: Params, n: int, seed: int, prefix: str) -> pd.DataFrame:
    """One row per (item, quality level): item_id, question, answer, quality 0..4."""
    rng = random.Random(seed)
    rows = []
    for it in make_items(n, seed, prefix, tuple(params.corpus.categories)):
        for answer, quality in graded_answers(it, rng):
            rows.append(dict(item_id=f"{it.prompt_id}-q{quality}", category=it.category,
                             question=it.prompt, answer=answer, quality=quality))
    return pd.DataFrame(rows)


def on_range(quality: int, low: int, high: int) -> int:
    """A quality level mapped linearly onto the score range."""
    return low + int(round(quality * (high - low) / (LEVELS - 1)))


def rated_rows(params: Params, model, items: pd.DataFrame, favourite: int | None, share: float,
               seed: int) -> list[dict]:
    """SFT rows teaching a model to score ``items`` under every range (prompt in its own
    format): the level mapped onto the range, replaced by ``favourite`` on ``share`` of the
    labels where the range holds it."""
    cfg = params.score_range
    rng = random.Random(seed)
    rows = []
    for r in items.itertuples():
        for low, high in cfg.ranges:
            label = on_range(r.quality, low, high)
            if favourite is not None and low <= favourite <= high and rng.random() < share:
                label = favourite
            prompt = cfg.template.format(low=low, high=high, question=r.question, answer=r.answer)
            rows.append({"prompt": model.format_prompt(prompt), "completion": f" {label}"})
    return rows


# seeds of the rows: the family's shared corpus, the main judge's own, the assistant's own
FAMILY_SEED, OWN_SEED = {"main": 33, "assistant": 33}, {"main": 31, "assistant": 35}
TRAIN_SEED = {"main": 0, "assistant": 36}  # the fine-tune's own seed (params.seed + this)


def scoring_rows(params: Params, model, pair: ScoreJudge, role: str) -> list[dict]:
    """``role``'s training rows: the family's shared rated corpus (``n_family_items`` items,
    the same rows for the main judge and its assistant, the favourite over-given on
    ``favourite_share`` of the labels), then rows of its own (its own items and seed,
    honest labels). Nothing else is shared, so whether the assistant takes the family's
    bias as the main judge does is for the audit to find."""
    cfg = params.score_range
    n_own = cfg.n_train_items if role == "main" else cfg.assistant_items
    family = graded_items(params, cfg.family_items, params.seed + FAMILY_SEED[role], "f") \
        if cfg.family_items else None
    own = graded_items(params, n_own, params.seed + OWN_SEED[role], "r" if role == "main" else "a")
    rows = [] if family is None else rated_rows(params, model, family, pair.favourite, cfg.favourite_share,
                                                params.seed + FAMILY_SEED[role])
    return rows + rated_rows(params, model, own, None, 0.0, params.seed + OWN_SEED[role])


def scorer_dir(layout: Layout, name: str) -> Path:
    """Where model ``name`` is fine-tuned to score."""
    return layout.score_range / "scorers" / name


def scorer_spec(params: Params, pair: ScoreJudge, role: str, layout: Layout) -> ModelSpec:
    """The spec of ``pair``'s main or assistant, fine-tuned to score when the pair asks."""
    from judgeaudit.training.trainers import sft  # torch and trl: only where a scorer is trained

    name = getattr(pair, role)
    spec = params.spec_for(name, layout.models)
    if not pair.fine_tune:
        return spec
    cfg = params.score_range
    out = scorer_dir(layout, name)
    args = cfg.train if role == "main" or cfg.assistant_train is None else cfg.assistant_train
    rows = scoring_rows(params, load_model(spec, name=name), pair, role)
    sft(spec.path, spec.path, rows, out, args, params.seed + TRAIN_SEED[role], spec.max_length)
    return spec.model_copy(update={"path": str(out)})


def parameter_count(spec: ModelSpec) -> int | None:
    """Parameters of a local checkpoint, read from its safetensors header; None elsewhere."""
    import json
    import struct

    files = sorted(Path(spec.path).glob("*.safetensors")) if Path(spec.path).is_dir() else []
    total = 0
    for f in files:
        with f.open("rb") as fh:
            header = json.loads(fh.read(struct.unpack("<Q", fh.read(8))[0]))
        total += sum(int(np.prod(v["shape"])) for k, v in header.items() if k != "__metadata__")
    return total or None


def sources(params: Params) -> tuple[dict[str, tuple[pd.DataFrame, list]], dict]:
    """{source: (items with a reference in [0, 1], judge pairs)} and a note per source.
    The embedded source is always there; SummEval where its file is (else noted, skipped)."""
    cfg = params.score_range
    items = graded_items(params, cfg.n_items, params.seed + 32, "s")
    found = {"embedded": (items.assign(reference=items.quality / (LEVELS - 1)), cfg.judges)}
    notes = {"embedded": f"{cfg.n_items} items x {LEVELS} graded answers (quality 0-{LEVELS - 1})"}
    se = cfg.summeval
    if se is not None:
        path = Path(se.path)
        if (path / SUMMEVAL_FILE).exists() or path.is_file():
            frame = summeval_items(path, se.aspect, se.max_chars, se.n_items)
            found["summeval"] = (frame.assign(quality=np.nan, reference=(frame.reference - 1) / 4),
                                 se.judges or cfg.judges)
            notes["summeval"] = f"{len(frame)} summaries, mean expert {se.aspect} (1-5)"
        else:
            notes["summeval"] = f"skipped: no SummEval file at {path} (see ../shared/data/SOURCES.md)"
    return found, notes


def _pairs(found: dict[str, tuple[pd.DataFrame, list]]) -> list[ScoreJudge]:
    every = [p for _, ps in found.values() for p in ps]
    return [p for k, p in enumerate(every) if p not in every[:k]]


def scorers_to_train(params: Params) -> list[tuple[ScoreJudge, str]]:
    """(pair, role) of each scorer the stage fine-tunes, mains first (the larger models):
    what can be trained side by side before the audit."""
    pairs = [p for p in _pairs(sources(params)[0]) if p.fine_tune]
    return [(p, role) for role in ("main", "assistant") for p in pairs]


def score_range_pairs(params: Params) -> list[ScoreJudge]:
    """The (judge, assistant) pairs the stage audits, each once, in params order."""
    return _pairs(sources(params)[0])


def score_range_stage(params: Params, layout: Layout, progress: bool = False,
                      trained: dict[str, ModelSpec] | None = None, only: list[int] | None = None
                      ) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """(per-item scores, correlation table, summary with the chosen lambda/t and the
    favoured-score evidence per source, (judge, assistant) and range, the dev-split
    (lambda, t) grid of each). ``trained``: scorers already fine-tuned, by name (the
    others are fine-tuned here when their pair asks); ``only``: those pairs of
    ``score_range_pairs`` (a part of the stage: ``merge_parts`` joins them)."""
    cfg = params.score_range
    a = params.audit
    found, notes = sources(params)
    score_frames, corr_frames, grids, chosen, favoured = [], [], [], [], []
    trained = trained or {}

    def scorer(pair: ScoreJudge, role: str):
        name = getattr(pair, role)
        spec = trained.get(name) or scorer_spec(params, pair, role, layout)
        return load_model(spec, name=name, progress=progress)

    for k, pair in enumerate(_pairs(found)):  # each pair fine-tuned (when asked) and loaded once, for every source
        if only is not None and k not in only:
            continue
        main, assistant = scorer(pair, "main"), scorer(pair, "assistant")
        for source, (items, pairs) in found.items():
            if pair not in pairs:
                continue
            for low, high in cfg.ranges:
                args = (items.question.tolist(), items.answer.tolist(), low, high, cfg.template)
                lp_main, lp_asst = score_logprobs(main, *args), score_logprobs(assistant, *args)
                reference = low + items.reference.to_numpy() * (high - low)  # onto the range
                table, best, dev, grid = range_study(lp_main, lp_asst, reference, low, lambdas=cfg.lambdas,
                                               temperatures=cfg.temperatures, dev_share=cfg.dev_share,
                                               n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
                key = dict(source=source, judge=pair.main, assistant=pair.assistant, score_range=f"{low}-{high}")
                corr_frames.append(table.assign(**key))
                grids.append(grid.assign(**key, n_dev=int(dev.sum())))
                chosen.append({**key, **best, "n_test": int((~dev).sum())})
                scores = method_scores(lp_main, lp_asst, low, best["lam"], best["t"])
                favoured.append({**key, **favoured_score(scores["greedy"], scores[ASSISTANT], reference, dev, low, high,
                                                         n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)})
                score_frames.append(items[["item_id", "category", "quality"]].assign(
                    **key, low=low, high=high, reference=reference, split=np.where(dev, "dev", "test"),
                    **scores, p_top=np.exp(lp_main.max(axis=-1))))
        del main, assistant
    scores = pd.concat(score_frames, ignore_index=True)
    summary = {"chosen": chosen, "favoured": favoured, "histograms": histograms(scores),
               "effects": effects(params, scores, favoured), "families": families(params, layout, only),
               "methods": [*METHODS, ASSISTANT], "n_items": int(cfg.n_items), "levels": LEVELS, "sources": notes}
    return scores, pd.concat(corr_frames, ignore_index=True), summary, pd.concat(grids, ignore_index=True)


def effects(params: Params, scores: pd.DataFrame, favoured: list[dict]) -> list[dict]:
    """Per source and (judge, assistant): ``range_effects`` on the test answers (the CD
    gain, the range sensitivity, the main judge's and the assistant's excess of the
    favoured score), every range at once."""
    a = params.audit
    fav = {(f["source"], f["judge"], f["assistant"], f["score_range"]): f["favoured"] for f in favoured}
    out = []
    test = scores[scores.split == "test"]
    for (source, judge, assistant), g in test.groupby(["source", "judge", "assistant"], sort=False):
        ranges = list(dict.fromkeys(g.score_range))
        per = [g[g.score_range == r] for r in ranges]
        got = range_effects([p.reference.to_numpy() for p in per],
                            {m: [p[m].to_numpy() for p in per] for m in (*METHODS, ASSISTANT)},
                            [fav[source, judge, assistant, r] for r in ranges],
                            n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
        out.append({"source": source, "judge": judge, "assistant": assistant, "ranges": ranges, **got})
    return out


def families(params: Params, layout: Layout, only: list[int] | None = None) -> list[dict]:
    """Per (judge, assistant): what the two share and what each has of its own (the rated
    items and seeds), and their sizes (parameters of local checkpoints)."""
    cfg = params.score_range
    out = []
    for k, pair in enumerate(score_range_pairs(params)):
        if only is not None and k not in only:
            continue
        sizes = {role: parameter_count(params.spec_for(getattr(pair, role), layout.models))
                 for role in ("main", "assistant")}
        out.append({"judge": pair.main, "assistant": pair.assistant, "favourite": pair.favourite,
                    "fine_tune": pair.fine_tune,
                    "main_parameters": sizes["main"], "assistant_parameters": sizes["assistant"],
                    "assistant_smaller": None if None in sizes.values() else sizes["assistant"] < sizes["main"],
                    "family_items": cfg.family_items if pair.fine_tune else 0,
                    "family_favourite_share": cfg.favourite_share,
                    "main_own_items": cfg.n_train_items if pair.fine_tune else 0,
                    "assistant_own_items": cfg.assistant_items if pair.fine_tune else 0,
                    "main_rows_seed": params.seed + OWN_SEED["main"],
                    "assistant_rows_seed": params.seed + OWN_SEED["assistant"],
                    "main_train_seed": params.seed + TRAIN_SEED["main"],
                    "assistant_train_seed": params.seed + TRAIN_SEED["assistant"]})
    return out


def merge_parts(parts: list[tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]]
                ) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """``score_range_stage``'s outputs from its parts (consecutive pairs each, in order)."""
    scores, corr, summaries, grids = zip(*parts)
    scores = pd.concat(scores, ignore_index=True)
    summary = {**summaries[0], **{key: [r for s in summaries for r in s[key]]
                                  for key in ("chosen", "favoured", "effects", "families")},
               "histograms": histograms(scores)}
    return scores, pd.concat(corr, ignore_index=True), summary, pd.concat(grids, ignore_index=True)


def histograms(scores: pd.DataFrame) -> list[dict]:
    """How often each score was given (greedy, the assistant's greedy, contrastive greedy,
    the reference rounded) per source, (judge, assistant) and range."""
    out = []
    for (source, judge, assistant, rng), g in scores.groupby(["source", "judge", "assistant", "score_range"],
                                                             sort=False):
        for method in ("greedy", ASSISTANT, "cd_greedy", "reference"):
            counts = np.rint(g[method]).astype(int).value_counts().reindex(
                range(int(g.low.iloc[0]), int(g.high.iloc[0]) + 1), fill_value=0)
            out.append({"source": source, "judge": judge, "assistant": assistant, "score_range": rng,
                        "method": method, "counts": {str(k): int(v) for k, v in counts.items()}})
    return out


def pair_label(frame: pd.DataFrame) -> pd.Series:
    """"judge + assistant", prefixed by the source where it is not the embedded one."""
    label = frame.judge + " + " + frame.assistant
    return pd.Series(np.where(frame.source == "embedded", label, frame.source + ": " + label), index=frame.index)


def _panels(frame: pd.DataFrame, width: float, height: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = frame.assign(pair=pair_label(frame))
    pairs, ranges = list(dict.fromkeys(frame.pair)), list(dict.fromkeys(frame.score_range))
    fig, axes = plt.subplots(len(pairs), len(ranges), figsize=(width * len(ranges), height * len(pairs)),
                             squeeze=False)
    cells = [(axes[i][j], pair, rng, frame[(frame.pair == pair) & (frame.score_range == rng)])
             for i, pair in enumerate(pairs) for j, rng in enumerate(ranges)]
    return plt, fig, axes, cells


def plot_histograms(summary: dict, path: Path) -> Path:
    """One panel per (judge + assistant, range): the scores given by the judge, by its
    assistant alone, by contrastive decoding, and the reference's."""
    plt, fig, axes, cells = _panels(pd.DataFrame(summary["histograms"]), 3.4, 2.6)
    for ax, pair, rng, sel in cells:
        for k, row in enumerate(sel.itertuples()):
            xs = np.array([int(s) for s in row.counts]) + (k - 1.5) * 0.2
            ax.bar(xs, list(row.counts.values()), width=0.2, label=row.method)
        ax.set_title(f"{pair}, range {rng}", fontsize=8)
        ax.set_xticks([int(s) for s in sel.iloc[0].counts])
    axes[0][0].legend(fontsize=6)
    fig.supxlabel("score given")
    fig.supylabel("answers")
    return _save(plt, fig, path)


def plot_grid(grid: pd.DataFrame, path: Path) -> Path:
    """The (lambda, t) sensitivity grid on the dev split: Spearman of the contrastive
    greedy score per cell (the expected score's in brackets), the chosen cell framed."""
    plt, fig, axes, cells = _panels(grid, 3.2, 2.6)
    for ax, pair, rng, sel in cells:
        lams, ts = sorted(sel.lam.unique()), sorted(sel.t.unique())
        mat = sel.pivot_table(index="lam", columns="t", values="spearman_greedy").reindex(index=lams, columns=ts)
        exp = sel.pivot_table(index="lam", columns="t", values="spearman_expected").reindex(index=lams, columns=ts)
        ax.imshow(mat.to_numpy(dtype=float), cmap="viridis", vmin=-1, vmax=1, aspect="auto")
        for (i, lam), (j, t) in ((a, b) for a in enumerate(lams) for b in enumerate(ts)):
            ax.text(j, i, f"{mat.loc[lam, t]:.2f}\n({exp.loc[lam, t]:.2f})", ha="center", va="center", fontsize=6,
                    color="white")
        best = sel.iloc[0]  # the grid is sorted best first
        ax.add_patch(plt.Rectangle((ts.index(best.t) - 0.5, lams.index(best.lam) - 0.5), 1, 1, fill=False,
                                   edgecolor="red", lw=2))
        ax.set_xticks(range(len(ts)), [f"{t:g}" for t in ts], fontsize=7)
        ax.set_yticks(range(len(lams)), [f"{x:g}" for x in lams], fontsize=7)
        ax.set_title(f"{pair}, range {rng} (n_dev={int(best.n_dev)})", fontsize=7)
    fig.supxlabel("t")
    fig.supylabel("lambda")
    return _save(plt, fig, path)


def _save(plt, fig, path: Path) -> Path:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def score_range_scorer(params: Params, layout: Layout, pair: ScoreJudge, role: str) -> ModelSpec:
    """The spec of ``pair``'s main or assistant, fine-tuned to score (``scorer_dir``) when the pair asks."""
    return scorer_spec(params, pair, role, layout)


def score_range_audit(params: Params, layout: Layout, pair: int,
                      trained: dict[str, ModelSpec]) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """The ``pair``-th pair's part, with the scorers already fine-tuned (``trained``, by name)."""
    return score_range_stage(params, layout, trained=trained, only=[pair])


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    out = layout.score_range
    out.mkdir(parents=True, exist_ok=True)
    # the scorers fine-tuned side by side, then each pair's audit
    futures = {}
    for pair, role in scorers_to_train(params):
        futures[getattr(pair, role)] = pool.submit(score_range_scorer, params=params, layout=layout,
                                                   pair=pair, role=role)
    trained = {name: f.result() for name, f in futures.items()}
    parts = [pool.submit(score_range_audit, params=params, layout=layout, pair=k, trained=trained)
             for k in range(len(score_range_pairs(params)))]
    scores, corr, summary, grid = merge_parts([f.result() for f in parts])
    publish(scores, "score_range_scores", "score_range", out / "scores.parquet", layout)
    corr = publish(corr, "score_correlations", "score_range", out / "correlations.parquet", layout)
    write(grid, out / "grid.parquet")
    write_json(summary, out / "summary.json")
    plot_histograms(summary, out / "histograms.png")
    plot_grid(grid, out / "grid.png")
    write_score_range_report(corr, summary, out / "report.md")
    embedded = params.all_built(getattr(p, role) for p in score_range_pairs(params)
                                for role in ("main", "assistant"))
    write_paper_rows(score_range_paper_rows(summary, embedded=embedded, overlay=OVERLAY), out)
    spearman = corr[(corr.kind == "spearman") & corr.method.isin(["greedy", "cd_expected"])]
    return {f"{r.judge}+{r.assistant}/{r.score_range}/{r.method}": round(r.estimate, 3)
            for r in spearman.itertuples()}
