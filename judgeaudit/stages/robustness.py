"""Stage ``robustness``: PLS after removing style / format / wording, presentation-attack
flip rates, leakage mitigations (PLS and Error Bias), length- and style-controlled win rates,
and whether the judges, or a classifier, recognise the leakage. The audits are independent
of each other: one unit each, over the stage's worker processes.

- Spurious-feature ablation: remove style, format or wording from every student
  response, re-judge every pair, and recompute PLS (before vs after, per tier).
- Presentation attacks: for each judge, attack the response it made lose (length,
  sentiment, distraction), re-judge, and count flips per judge and question category.
- Mitigations: PLS and Error Bias under prompting, chain of thought, paraphrased responses,
  automatic and contextual calibration, beside plain judging, on held-out prompts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit import resolve
from judgeaudit.attacks.presentation import ATTACKS
from judgeaudit.attacks.rewriter import attack_texts
from judgeaudit.attacks.transforms import ABLATIONS
from judgeaudit.audits.leakage import CELL, leakage_scores, pair_scores
from judgeaudit.audits.length_control import (controlled_summary, controlled_win_rates, gameability,
                                              with_differences)
from judgeaudit.audits.stats import mean_ci
from judgeaudit.config import Params
from judgeaudit.judging.student_pairs import (attack_losers, binary_verdicts, comparisons, judge_pairs,
                                              load_judge)
from judgeaudit.layout import Layout
from judgeaudit.report.leakage_paper import robustness_paper_rows, setting_of
from judgeaudit.report.paper_rows import write_paper_rows
from judgeaudit.report.robustness_report import plot_mitigations
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish, write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="robustness",
    params=(*MODELS, "leakage", "judge", "audit", "attacks", "recognition", "mitigation"),
    deps=("responses", "judgments", "models"),
    outs=("robustness",),
    reads=("responses", "judgments"),
    pool=True,
)


def _judge_sets(params: Params, sets: dict[str, tuple[pd.DataFrame, dict]],
                layout: Layout) -> dict[str, pd.DataFrame]:
    """{name: every judge's verdicts on that set of pairs}; ``sets``: {name: (pairs,
    judge_pairs keyword arguments)}. Each judge is loaded once for all the sets, so the
    responses they share are scored once."""
    judged: dict[str, list[pd.DataFrame]] = {name: [] for name in sets}
    for entry in resolve.judges(params, layout.models):
        model = load_judge(entry)
        for name, (pairs, extra) in sets.items():
            judged[name].append(judge_pairs(entry, pairs, params.judge, params.seed, model=model,
                                            **extra))
    return {name: pd.concat(tables, ignore_index=True) for name, tables in judged.items()}


def _judge_all(params: Params, pairs: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    return _judge_sets(params, {"all": (pairs, {})}, layout)["all"]


def ablation_pls(params: Params, responses: pd.DataFrame, judgments: pd.DataFrame,
                 layout: Layout) -> pd.DataFrame:
    """PLS per tier (all methods pooled) before and after each ablation."""
    a = params.audit
    kw = dict(n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
    roster = params.judge_roster()
    tables = [leakage_scores(pair_scores(judgments), roster, **kw).assign(condition="original")]
    ablated = {name: (comparisons(responses.assign(response=responses["response"].map(ablate)),
                                  params.leakage.generators), {}) for name, ablate in ABLATIONS.items()}
    for name, judged in _judge_sets(params, ablated, layout).items():
        tables.append(leakage_scores(pair_scores(judged), roster, **kw).assign(condition=f"no-{name}"))
    out = pd.concat(tables, ignore_index=True)
    return out[out.scope == "tier"][["metric", "condition", "tier", "estimate", "ci_low", "ci_high", "n"]]


def attack_flips(params: Params, responses: pd.DataFrame, judgments: pd.DataFrame,
                 layout: Layout) -> pd.DataFrame:
    """Flip rate per (judge, attack, question category) with n and a bootstrap CI."""
    a = params.audit
    pairs = comparisons(responses, params.leakage.generators)
    category = responses.drop_duplicates("prompt_id").set_index("prompt_id")["category"]
    key = ["method", "student_base", "generator_a", "generator_b", "prompt_id"]
    rewriter = resolve.rewriter(params, layout.models)
    rows = []
    for entry in resolve.judges(params, layout.models):
        model = load_judge(entry)  # once: the attacks share the winners' texts
        before = binary_verdicts(judgments[judgments.judge == entry.name], key)
        lose_a = before.reindex(pd.MultiIndex.from_frame(pairs[key])).to_numpy() == "B"
        for name in ATTACKS:
            attacked = attack_losers(pairs, lose_a, name, rewriter)
            after = binary_verdicts(judge_pairs(entry, attacked, params.judge, params.seed, model=model), key)
            flipped = (after.reindex(before.index) != before).astype(float)
            cats = category.reindex(before.index.get_level_values("prompt_id")).to_numpy()
            for cat in ["all", *sorted(set(cats))]:
                values = flipped.to_numpy() if cat == "all" else flipped.to_numpy()[cats == cat]
                est = mean_ci(values, n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
                rows.append({"judge": entry.name, "tier": entry.tier, "attack": name, "category": cat,
                             "flip_rate": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high,
                             "n": est.n})
    return pd.DataFrame(rows)


def _canonical_margin(judgments: pd.DataFrame) -> np.ndarray:
    """Log-odds that the canonical first student (generator_a's) wins, from each row."""
    p = judgments["p_a"].clip(1e-9, 1 - 1e-9).to_numpy()
    logit = np.log(p) - np.log1p(-p)
    return np.where(judgments["order"].to_numpy() == "AB", logit, -logit)


def _from_margin(judgments: pd.DataFrame, margin: np.ndarray, tie_margin: float) -> pd.DataFrame:
    first_wins = np.where(margin > tie_margin, 1, np.where(margin < -tie_margin, -1, 0))
    ab = judgments["order"].to_numpy() == "AB"
    verdict = np.where(first_wins == 0, "tie", np.where((first_wins > 0) == ab, "A", "B"))
    p_first = 1 / (1 + np.exp(-np.clip(margin, -50, 50)))
    return judgments.assign(verdict=verdict, p_a=np.where(ab, p_first, 1 - p_first))


def auto_calibrated(judgments: pd.DataFrame, calib: set[str], tie_margin: float) -> pd.DataFrame:
    """Automatic calibration against leakage, learned from the judges' own verdicts: on the
    calibration prompts ``calib``, each judge's mean log-odds for each head-to-head and the
    judges' consensus; on the other prompts, the judge's own offset is removed and the
    consensus restored (shared quality differences stay, a judge's private preference goes).
    Returns the calibrated judgments of the other prompts."""
    cell = ["method", "student_base", "generator_a", "generator_b"]
    frame = judgments.assign(margin=_canonical_margin(judgments))
    in_calib = frame["prompt_id"].isin(calib)
    own = frame[in_calib].groupby(["judge", *cell])["margin"].mean().rename("own")
    consensus = own.groupby(level=cell).mean().rename("consensus")
    test = frame[~in_calib].join(own, on=["judge", *cell]).join(consensus, on=cell)
    return _from_margin(test, (test["margin"] - test["own"] + test["consensus"]).to_numpy(), tie_margin)


def _paraphrased(params: Params, texts: pd.Series, layout: Layout) -> pd.Series:
    """Every distinct text paraphrased once: by the configured rewriter model, else by rule."""
    from judgeaudit.attacks.rewriter import ModelRewriter
    from judgeaudit.attacks.transforms import paraphrase

    distinct = sorted(set(texts))
    rewriter = resolve.rewriter(params, layout.models)
    if rewriter is None:
        done = [paraphrase(t) for t in distinct]
    else:
        done = ModelRewriter(rewriter.model, {"paraphrase": params.mitigation.paraphrase_template},
                             rewriter.max_new_tokens).rewrite("paraphrase", distinct)
    return texts.map(dict(zip(distinct, done)))


def mitigations(params: Params, responses: pd.DataFrame, judgments: pd.DataFrame,
                layout: Layout) -> pd.DataFrame:
    """The leakage mitigation table: PLS and Error Bias per tier under plain judging,
    prompting, chain of thought, paraphrased responses, automatic and contextual calibration, all on the
    same held-out half of the prompts (the other half is automatic calibration's). Error
    Bias is measured against the unrelated judges' plain verdicts (or, with none, the
    consensus of every judge's), the same reference for every condition."""
    from judgeaudit.audits.error_bias import error_bias, reference_scores
    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.judging.mitigations import contextual_verdicts, cot_verdicts, prompting_verdicts

    a, m = params.audit, params.mitigation
    boot = BootstrapSettings(a.n_boot, a.confidence, params.seed)
    roster = params.judge_roster()
    prompts = sorted(judgments["prompt_id"].unique())
    calib = set(prompts[::2])
    plain = judgments[~judgments["prompt_id"].isin(calib)]
    pairs = comparisons(responses, params.leakage.generators)
    pairs = pairs[~pairs["prompt_id"].isin(calib)].reset_index(drop=True)

    paraphrased = pairs.assign(response_a=_paraphrased(params, pairs["response_a"], layout),
                               response_b=_paraphrased(params, pairs["response_b"], layout))
    variants = {"prompting": (pairs, {"verdicts": prompting_verdicts(m.prompting_notice)}),
                "chain-of-thought": (pairs, {"verdicts": cot_verdicts(m.cot_template, m.cot_tokens)}),
                "paraphrase": (paraphrased, {}),
                "contextual-calibration": (pairs, {"verdicts": contextual_verdicts(m.content_free)})}
    judged_tables = _judge_sets(params, variants, layout)
    conditions = {"plain": plain,
                  "prompting": judged_tables["prompting"],
                  "chain-of-thought": judged_tables["chain-of-thought"],
                  "paraphrase": judged_tables["paraphrase"],
                  "automatic-calibration": auto_calibrated(judgments, calib, params.judge.tie_margin),
                  "contextual-calibration": judged_tables["contextual-calibration"]}
    plain_scores = pair_scores(plain)
    reference = reference_scores(plain_scores, params.leakage.unrelated_judges
                                 or sorted(plain_scores["judge"].unique()))
    rows = []
    for condition, table in conditions.items():
        scores = pair_scores(table)
        pls = leakage_scores(scores, roster, n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
        rows += [pls[pls.scope == "tier"].assign(condition=condition),
                 error_bias(scores, reference, roster, boot).assign(condition=condition)]
    return pd.concat(rows, ignore_index=True)[["metric", "condition", "tier", "estimate", "ci_low", "ci_high", "n"]]


def length_controlled(params: Params, responses: pd.DataFrame, judgments: pd.DataFrame,
                      layout: Layout) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(raw, length- and length+style-controlled win rates per judge and cell, clean and
    with half the second responses lengthened; how much each kind of win rate moved
    under that attack, per judge)."""
    a = params.audit
    kw = dict(n_boot=a.glm_boot, confidence=a.confidence, seed=params.seed, cell_cols=CELL)
    pairs = comparisons(responses, params.leakage.generators)
    clean = controlled_win_rates(with_differences(pair_scores(judgments), pairs, CELL), **kw)
    # the length attack on generator_b's side of a seeded random half of the pairs, the same
    # for every judge (lengthening every pair would leave the GLM no length contrast to fit)
    half = np.random.default_rng(params.seed).random(len(pairs)) < 0.5
    longer = pairs.assign(response_b=np.where(half, attack_texts("length", pairs.response_b.tolist()),
                                              pairs.response_b))
    attacked = controlled_win_rates(with_differences(pair_scores(_judge_all(params, longer, layout)), longer, CELL),
                                    **kw)
    moved = gameability(clean, attacked, n_boot=a.n_boot, confidence=a.confidence, seed=params.seed,
                        cell_cols=CELL)
    table = pd.concat([clean.assign(condition="clean"), attacked.assign(condition="length-attack")],
                      ignore_index=True)
    return table, moved


def recognition(params: Params, responses: pd.DataFrame, layout: Layout) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(a) each related judge asked to pick its student's response; (b) a linear head on the
    frozen encoder telling the students' generators apart on held-out prompts."""
    from judgeaudit.audits.recognition import (
        ClassifierSettings,
        accuracy_ci,
        generator_classifier,
        judge_recognition,
        picks,
        recognition_pairs,
    )
    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.judging.pairwise import prompted_probabilities
    from judgeaudit.models import load_model
    from judgeaudit.models.encoder import Encoder

    section, a = params.recognition, params.audit
    boot = BootstrapSettings(a.n_boot, a.confidence, params.seed)
    rows, pooled = [], []
    for judge in (j for j in resolve.judges(params, layout.models) if j.related_generator):
        pairs = recognition_pairs(responses, judge.related_generator)
        if len(pairs) > section.max_pairs:
            pairs = pairs.sample(section.max_pairs, random_state=params.seed).reset_index(drop=True)
        model = load_model(judge.spec, name=judge.name)
        p = judge_recognition(lambda q, x, y: prompted_probabilities(model, section.template, q, x, y), pairs)
        rows.append({"judge": judge.name, "tier": judge.tier, "related_generator": judge.related_generator,
                     **accuracy_ci(picks(p), pairs.prompt_id.to_numpy(), 0.5, boot),
                     "mean_p_related": float(p.mean())})
        pooled.append(pd.DataFrame({"pick": picks(p), "prompt_id": pairs.prompt_id, "p": p}))
    if pooled:
        every = pd.concat(pooled, ignore_index=True)
        rows.append({"judge": "all related judges", "tier": "all", "related_generator": "",
                     **accuracy_ci(every.pick.to_numpy(), every.prompt_id.to_numpy(), 0.5, boot),
                     "mean_p_related": float(every.p.mean())})
    encoder = Encoder(section.encoder)
    embeddings = encoder.embed(responses.response.tolist())
    classifier, _ = generator_classifier(responses, embeddings, ClassifierSettings(section.test_share, 1.0, boot))
    return pd.DataFrame(rows), classifier.assign(encoder=section.encoder)


PARTS = {  # the robustness audits, independent of each other: one unit each
    "ablation": lambda p, r, j, lay: (ablation_pls(p, r, j, lay),),
    "attacks": lambda p, r, j, lay: (attack_flips(p, r, j, lay),),
    "mitigation": lambda p, r, j, lay: (mitigations(p, r, j, lay) if p.mitigation else None,),
    "length": lambda p, r, j, lay: length_controlled(p, r, j, lay),
    "recognition": lambda p, r, j, lay: recognition(p, r, lay) if p.recognition else (None, None),
}
# the longest parts first (as measured on the default: bench/stage_profile.py), so that two
# workers finish together
ORDER = ("mitigation", "attacks", "length", "recognition", "ablation")


def robustness_part(params: Params, part: str, responses: pd.DataFrame, judgments: pd.DataFrame,
                    layout: Layout) -> tuple[pd.DataFrame | None, ...]:
    """One of the PARTS."""
    return PARTS[part](params, responses, judgments, layout)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    responses, judgments = tables["responses"], tables["judgments"]
    futures = {part: pool.submit(robustness_part, params=params, part=part, responses=responses,
                                 judgments=judgments, layout=layout) for part in ORDER}
    got = {part: f.result() for part, f in futures.items()}
    (ablation,), (flips,), (mitigation,) = got["ablation"], got["attacks"], got["mitigation"]
    (controlled, moved), (recognised, classifier) = got["length"], got["recognition"]
    out = layout.root / "robustness"
    publish(ablation, "pls", "robustness", out / "ablation.parquet", layout)
    write(flips, out / "attack_flips.parquet")
    publish(controlled, "controlled_win_rates", "robustness", out / "controlled_win_rates.parquet", layout)
    summary = {"controlled_win_rates": controlled_summary(controlled[controlled.condition == "clean"]),
               "length_gameability": moved.to_dict("records"), "ablation": ablation.to_dict("records"),
               "attack_flips": flips[flips.category == "all"].to_dict("records")}
    if mitigation is not None:  # configured: PLS and Error Bias under each mitigation
        publish(mitigation, "pls", "robustness", out / "mitigation.parquet", layout)
        summary["mitigation"] = mitigation.to_dict("records")
        summary["plots"] = {"mitigation": plot_mitigations(mitigation, out / "mitigation.png").name}
    if recognised is not None:  # configured: whether the judges, or a classifier, can see the leakage
        write(recognised, out / "recognition.parquet")
        write(classifier, out / "generator_classifier.parquet")
        summary["recognition"] = {"judges": recognised.to_dict("records"),
                                  "classifier": classifier.to_dict("records")}
    write_json(summary, out / "summary.json")
    rows = robustness_paper_rows(summary, setting_of(params), rewriter=params.attacks.rewriter)
    write_paper_rows(rows, out)
    return {"conditions": sorted(set(ablation.condition))}
