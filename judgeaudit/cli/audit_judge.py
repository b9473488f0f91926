"""``judgeaudit audit-judge``: the judge a team uses (``openai:MODEL``, ``vllm:PATH``,
``hf:PATH`` or a model of params.yaml) on real benchmark pairs, in both orders, through the
bias battery beside content-blind baselines; every endpoint call recorded in the output
folder, so that a rerun makes no request for what is recorded and ``--replay`` none at all."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_audit_judge(sub: argparse._SubParsersAction) -> None:
    """``audit-judge``: the user's judge through the whole battery."""
    from judgeaudit.models.judge_spec import FORMS
    from judgeaudit.sources import SOURCE_NAMES

    p = sub.add_parser("audit-judge", help="audit your own judge (API, vLLM, local or from params.yaml) on real "
                                           "pairs: both orders, the bias battery, content-blind baselines")
    p.add_argument("--judge", required=True, help=f"the judge: {', '.join(FORMS)}")
    p.add_argument("--base-url", help="openai: the endpoint's base URL (default: api.openai.com)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai: the variable holding the key")
    p.add_argument("--data", action="append", required=True, metavar="SOURCE=PATH",
                   help=f"real pairs to judge, repeatable; SOURCE one of {', '.join(SOURCE_NAMES)}")
    p.add_argument("--limit", type=int, help="judge a seeded sample of this many pairs of each source")
    p.add_argument("--mode", default="generative",
                   help="verdict mode: generative (default; any chat endpoint), prompted or likelihood "
                        "(need log-probabilities)")
    p.add_argument("--biases", default="all", help="comma-separated battery items, or all (default)")
    p.add_argument("--out", required=True, help="output folder: tables, summary.json, report.md, recorded calls")
    p.add_argument("--prompt-format", help="a format string with one {prompt} field: prompts go formatted to the "
                                          "completions endpoint (openai) or the model (hf); default: the chat "
                                          "template")
    p.add_argument("--concurrency", type=int, help="openai: requests in flight at once")
    p.add_argument("--device", help="hf/vllm: cpu, cuda, auto")
    p.add_argument("--params", default="params.yaml", help="judge settings and named models (default: params.yaml)")
    p.add_argument("--root", default="data", help="where params.yaml's embedded models are built (default: data)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per CI (default 1000)")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(handler=_audit_judge)


def _sources(values: list[str]) -> list[tuple[str, str]]:
    from judgeaudit.sources import SOURCE_NAMES

    pairs = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or name not in SOURCE_NAMES or not path:
            raise ValueError(f"--data {value!r}: give SOURCE=PATH with SOURCE one of {', '.join(SOURCE_NAMES)}")
        pairs.append((name, path))
    return pairs


def _audit_judge(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from judgeaudit.attacks.battery import battery_names, check_biases
    from judgeaudit.audits.judge_screen import forest_plot, judge_screen
    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.config import load_params
    from judgeaudit.judging.battery import run_battery
    from judgeaudit.judging.modes import verdict_mode
    from judgeaudit.models import load_model
    from judgeaudit.models.judge_spec import judge_identity, parse_judge
    from judgeaudit.report.judge_screen_report import write_screen_report
    from judgeaudit.judging.live_items import pairs_to_judge
    from judgeaudit.tables import write_json, write_table

    params = load_params(args.params) if Path(args.params).is_file() else None
    named = {n: params.spec_for(n, Path(args.root) / "models") for n in params.models} if params else None
    biases = battery_names() if args.biases.strip() == "all" else check_biases(
        [b.strip() for b in args.biases.split(",") if b.strip()])
    out = Path(args.out)
    spec = parse_judge(args.judge, base_url=args.base_url, api_key_env=args.api_key_env, named=named,
                       concurrency=args.concurrency, device=args.device,
                       chat_template=args.prompt_format)
    if spec.backend == "openai":  # every call kept beside the tables: a rerun resumes, sends nothing twice
        spec = spec.model_copy(update={"response_cache": str(out / "calls")})
    settings = params.judge if params else _default_judge_settings()
    verdict_mode(args.mode, settings)  # an unknown mode fails here, before any pair is read
    items, notes = pairs_to_judge(_sources(args.data), args.limit, args.seed)
    model = load_model(spec, name=args.judge)
    print(f"judgeaudit: {args.judge} judging {len(items)} pairs in both orders ({args.mode}), then under "
          f"{len(biases)} biases of the battery")
    with tqdm(desc="audit-judge", unit="step", delay=1) as bar:
        run = run_battery(model, args.judge, args.mode, settings, items, biases, seed=args.seed, steps=bar)
    screen = judge_screen(run.live, run.pairs, BootstrapSettings(args.n_boot, args.confidence, args.seed))
    screen.summary.update(identity=judge_identity(spec), notes=notes, seed=args.seed, battery_items=biases)
    out.mkdir(parents=True, exist_ok=True)
    write_table(run.live, out / "verdicts.parquet")
    write_table(run.pairs, out / "battery_pairs.parquet")
    write_table(screen.battery, out / "battery.parquet")
    write_table(screen.baselines, out / "baselines.parquet")
    write_json(screen.summary, out / "summary.json")
    forest_plot(screen.battery, out / "battery.png")
    report = write_screen_report(screen, out / "report.md")
    _print_screen(screen.summary)
    print(f"judgeaudit: the judge's screen in {report}")
    return 0


def _default_judge_settings():
    from judgeaudit.config.synthetic import Judge

    return Judge()


def _print_screen(summary: dict) -> None:
    def fig(f: dict | None) -> str:
        return "n/a" if f is None or f["estimate"] is None else \
            f"{f['estimate']:.3f} [{f['ci_low']:.3f}, {f['ci_high']:.3f}] (n={f['n']})"

    print(f"accuracy {fig(summary.get('accuracy'))}; agreement between orders {fig(summary.get('order_agreement'))}; "
          f"unparseable {summary['unparseable']} of {summary['verdicts']} verdicts")
    for bias, metrics in summary["biases"].items():
        flip = metrics.get("flip_rate")
        print(f"  {bias:<24} flip rate {fig(flip)}" + ("  FOUND" if flip and flip["found"] else ""))
    for row in summary["flagged_subsets"]:
        print(f"  flagged: {row['source']}/{row['subset']}: {row['baselines']} as accurate as the judge")
