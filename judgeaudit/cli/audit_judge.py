"""``judgeaudit audit-judge``: the judge a team uses (``openai:MODEL``, ``vllm:PATH``,
``hf:PATH`` or a model of params.yaml) on real benchmark pairs, in both orders, through the
bias battery beside content-blind baselines; every endpoint call recorded in the output
folder, so that a rerun makes no request for what is recorded and ``--replay`` none at all."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from judgeaudit.models.call_record import CHARS_PER_TOKEN


def add_audit_judge(sub: argparse._SubParsersAction) -> None:
    """``audit-judge``: the user's judge through the whole battery."""
    from judgeaudit.judging.live_items import DATA_SOURCES
    from judgeaudit.models.judge_spec import FORMS

    p = sub.add_parser("audit-judge", help="audit your own judge (API, vLLM, local or from params.yaml) on real "
                                           "pairs: both orders, the bias battery, content-blind baselines")
    p.add_argument("--judge", required=True, help=f"the judge: {', '.join(FORMS)}")
    p.add_argument("--base-url", help="openai: the endpoint's base URL (default: api.openai.com)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai: the variable holding the key")
    p.add_argument("--data", action="append", required=True, metavar="SOURCE=PATH",
                   help=f"real pairs to judge, repeatable; SOURCE one of {', '.join(DATA_SOURCES)} "
                        "(pairs: labelled pairs with no recorded verdict)")
    p.add_argument("--limit", type=int, help="judge a seeded sample of this many pairs of each source")
    p.add_argument("--mode", default="generative",
                   help="verdict mode: generative (default; any chat endpoint), prompted or likelihood "
                        "(need log-probabilities)")
    p.add_argument("--biases", default="all", help="comma-separated battery items, or all (default); the "
                                                   "neutral-edit control is always added, to compare each with")
    p.add_argument("--out", required=True, help="output folder: tables, summary.json, report.md, recorded calls")
    p.add_argument("--prompt-format", help="a format string with one {prompt} field: prompts go formatted to the "
                                          "completions endpoint (openai) or the model (hf); default: the chat "
                                          "template")
    p.add_argument("--concurrency", type=int, help="openai: requests in flight at once")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="openai: how long to wait for one response before retrying it (default 120)")
    p.add_argument("--max-retries", type=int, help="openai: retries of a failed request, with backoff (default 4)")
    p.add_argument("--device", help="hf/vllm: cpu, cuda, auto")
    p.add_argument("--params", default="params.yaml", help="judge settings and named models (default: params.yaml)")
    p.add_argument("--root", default="data", help="where params.yaml's embedded models are built (default: data)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per CI (default 1000)")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ranges", help="also score both responses pointwise on these score ranges, e.g. 1-5,1-10,0-100 "
                                    "(needs log-probs): each range's score distribution and its correlation with the label")
    p.add_argument("--assistant", metavar="SPEC", help="with --ranges: a second judge (same forms as --judge) whose "
                                                       "log-probs contrastive decoding subtracts (its calls "
                                                       "recorded too)")
    p.add_argument("--self-enhancement", metavar="REF",
                   help="self-enhancement: the judge writes its own answer to each prompt (through its endpoint, "
                        "recorded), paired against another answer; the judge and the reference judge REF (same "
                        "forms as --judge) judge those pairs in both orders: the judge's preference for its own "
                        "answers beyond REF's, with n and a CI")
    p.add_argument("--answer-tokens", type=int, default=256, help="--self-enhancement: the most tokens of the "
                                                                  "judge's own answers (default 256)")
    p.add_argument("--drift-against", metavar="DIR", help="an earlier audit of this judge on the same pairs: every "
                                                          "figure compared with it, drifted ones flagged")
    p.add_argument("--replay", action="store_true",
                   help="openai: never call the endpoint; answer every call from the calls recorded in --out "
                        "(a call not recorded is an error)")
    p.add_argument("--dry-run", action="store_true",
                   help="call nothing: print the requests and prompt tokens the audit would send (an upper "
                        "bound: every pair decided, so every pair attacked) and their cost")
    p.add_argument("--tokenizer", metavar="PATH",
                   help="a local Hugging Face tokenizer folder to count tokens with (--dry-run, --budget); "
                        f"default: an hf: judge's own, else about {CHARS_PER_TOKEN:g} characters a token")
    p.add_argument("--price-per-mtok", metavar="IN,OUT", type=_prices,
                   help="dollars per million prompt (IN) and completion (OUT) tokens, for --dry-run's cost "
                        "(of every model the audit asks that live_judge.prices does not name)")
    p.add_argument("--budget", type=int, metavar="TOKENS",
                   help="openai: stop before this run's requests could spend more than TOKENS tokens "
                        "(prompt + completion, as the endpoint's usage reports them, else counted); what was "
                        "done is recorded, and a rerun resumes from it")
    p.set_defaults(handler=_audit_judge)


def _prices(text: str) -> tuple[float, float]:
    try:
        p_in, p_out = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give IN,OUT, dollars per million tokens, e.g. 2.5,10") from None
    if p_in < 0 or p_out < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: prices cannot be negative")
    return p_in, p_out


def price_per_mtok(args: argparse.Namespace, params) -> tuple[float, float] | None:
    """The judge's prices: ``--price-per-mtok``, else params.yaml's price table for the
    judge (``live_judge.prices``: model name -> [IN, OUT] dollars per million tokens), else
    None (no cost printed)."""
    return args.price_per_mtok if args.price_per_mtok is not None else _price_of(args.judge, params)


def _sources(values: list[str]) -> list[tuple[str, str]]:
    from judgeaudit.judging.live_items import DATA_SOURCES

    pairs = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or name not in DATA_SOURCES or not path:
            raise ValueError(f"--data {value!r}: give SOURCE=PATH with SOURCE one of {', '.join(DATA_SOURCES)}")
        pairs.append((name, path))
    return pairs


def _audit_judge(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from judgeaudit.attacks.battery import battery_names, check_biases, with_control
    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.config import load_params
    from judgeaudit.judging.live_items import pairs_to_judge
    from judgeaudit.judging.live_pointwise import parse_ranges, pointwise_audit
    from judgeaudit.judging.modes import verdict_mode
    from judgeaudit.models import load_model
    from judgeaudit.models.call_record import BudgetExhausted
    from judgeaudit.models.judge_spec import judge_identity
    from judgeaudit.stages.live_judge import (audit_live, compare_with, journals_of, previous, recorded_spec,
                                              self_enhancement, write_calls, write_live)

    params = load_params(args.params) if Path(args.params).is_file() else None
    named = {n: params.spec_for(n, Path(args.root) / "models") for n in params.models} if params else None
    biases = battery_names() if args.biases.strip() == "all" else with_control(check_biases(
        [b.strip() for b in args.biases.split(",") if b.strip()]))
    out = Path(args.out)
    # every role's endpoint calls recorded beside the tables (<out>/calls, calls_reference,
    # calls_assistant): a rerun resumes and sends nothing twice, --replay sends nothing
    roles = {"reference": args.self_enhancement, "assistant": args.assistant if args.ranges else None}
    common = dict(named=named, base_url=args.base_url, api_key_env=args.api_key_env, chat_template=args.prompt_format,
                  shared_url=any(t is not None for t in roles.values()), timeout_s=args.timeout,
                  max_retries=args.max_retries)
    spec = recorded_spec(args.judge, "judge", out / "calls", concurrency=args.concurrency, device=args.device,
                         **common)
    specs = {"judge": spec, **{role: recorded_spec(text, role, out / "calls", **common)
                               for role, text in roles.items() if text is not None}}
    if (args.replay or args.budget is not None) and all(s.backend != "openai" for s in specs.values()):
        raise ValueError(f"--replay and --budget apply to openai: judges (endpoint calls); {args.judge!r} runs here")
    settings = params.judge if params else _default_judge_settings()
    verdict_mode(args.mode, settings)  # an unknown mode fails here, before any pair is read
    items, notes = pairs_to_judge(_sources(args.data), args.limit, args.seed)
    tokenizer = args.tokenizer or (spec.path if spec.backend == "transformers" else None)
    if args.dry_run:
        return _dry_run(args, specs, settings, items, biases, tokenizer, price_per_mtok(args, params), params)
    models = {role: load_model(s, name={"judge": args.judge, **roles}[role]) for role, s in specs.items()}
    model = models["judge"]
    journals = journals_of(models)
    _govern(models, args, tokenizer)
    print(f"judgeaudit: {args.judge} judging {len(items)} pairs in both orders ({args.mode}), then under "
          f"{len(biases)} biases of the battery")
    boot = BootstrapSettings(args.n_boot, args.confidence, args.seed)
    before = previous(Path(args.drift_against)) if args.drift_against else None
    if args.drift_against and before is None:
        raise FileNotFoundError(f"--drift-against {args.drift_against}: no earlier audit there (verdicts.parquet, "
                                "battery_pairs.parquet)")
    try:
        with tqdm(desc="audit-judge", unit="step", delay=1) as bar:
            audit = audit_live(model, args.judge, args.mode, settings, items, biases, boot, args.seed, bar)
        if "reference" in models:
            audit.self_enhancement = self_enhancement(model, args.judge, models["reference"], args.self_enhancement,
                                                      args.mode, settings, items, boot, args.seed, args.answer_tokens)
            audit.reference = judge_identity(specs["reference"])
        if args.ranges:
            audit.pointwise = pointwise_audit(model, items, parse_ranges(args.ranges), boot, models.get("assistant"))
    except BudgetExhausted as exc:
        write_calls(journals, out)
        print(f"judgeaudit: stopped: {exc}", file=sys.stderr)
        return 3
    except RuntimeError:
        write_calls(journals, out)  # an endpoint that failed for good: what it answered is kept
        raise
    audit.screen.summary.update(identity=judge_identity(spec), notes=notes)
    if before is not None:
        compare_with(audit, before, boot, str(args.drift_against))
    report = write_live(audit, out, journals)
    _print_screen(audit.screen.summary)
    if journals:
        _print_calls(audit.screen.summary)
    if audit.drift is not None:
        from judgeaudit.audits.drift import label

        moved = [label(r) for r in audit.drift.to_dict("records") if r["drifted"]]
        print(f"drift against {args.drift_against}: " + (", ".join(moved) + " drifted" if moved else "no figure drifted"))
    print(f"judgeaudit: the judge's screen in {report}")
    return 0


def _govern(models: dict, args: argparse.Namespace, tokenizer: str | None) -> None:
    """--replay and --budget on every endpoint model's journal, whatever its role: one token
    budget for the whole run, counted with ``tokenizer`` where given."""
    from judgeaudit.models.call_record import TokenBudget, token_counter

    count = token_counter(tokenizer) if args.budget is not None or args.tokenizer else None
    budget = None
    for model in models.values():
        journal = getattr(model, "journal", None)
        if journal is None:
            continue
        journal.replay = args.replay
        if count is not None:
            model.use_tokenizer(count)
        if args.budget is not None:
            budget = budget or TokenBudget(args.budget, model._count)
            journal.budget = budget


def _print_calls(summary: dict) -> None:
    by_role = summary.get("calls_by_role") or {"judge": summary["calls"]}
    for role, c in by_role.items():
        retried = f", {c['retried']} retried ({c['retries']} requests more)" if c.get("retried") else ""
        print(f"calls ({role}): {c['sent']} sent ({c['failed']} failed{retried}), "
              f"{c['answered_from_records']} answered from the records; {c['recorded']} recorded in all")
    if summary.get("endpoint_drift"):
        seen = "; ".join(f"{v['model']} (fingerprint {v['system_fingerprint']}, {v['calls']} calls from "
                         f"{v['first_seen']})" for v in summary["endpoint_versions"])
        print(f"judgeaudit: warning: the endpoint reported more than one model version over the recorded "
              f"calls: {seen}")


def _price_of(text: str, params) -> tuple[float, float] | None:
    """params.yaml's price table entry for the judge ``text`` names (a spec or its model name)."""
    section = getattr(params, "live_judge", None)
    table = section.prices if section is not None else {}
    found = table.get(text, table.get(text.partition(":")[2] if text.startswith("openai:") else text))
    return tuple(found) if found is not None else None


def _planner(args, spec, count, name):
    """A dry run's stand-in for the model of ``spec``, with its recorded calls where it has any."""
    from judgeaudit.models.call_plan import PlannedCalls
    from judgeaudit.models.call_record import CallJournal
    from judgeaudit.models.judge_spec import judge_identity
    from judgeaudit.models.openai_api import journal_path

    journal = CallJournal(journal_path(spec), judge_identity(spec)) if spec.backend == "openai" else None
    return PlannedCalls(spec, count, journal, name=name)


def _dry_run(args, specs, settings, items, biases, tokenizer: str | None, prices, params) -> int:
    """What the audit would send, counted without calling: the clean verdicts, then every
    bias on every pair as if the judge decided them all (the battery attacks only decided
    pairs: the requests are an upper bound). Which response a bias attacks depends on the
    verdicts, so the tokens are the mean of two plans: every first response attacked, and
    every second. Then the calls of the other parts asked for, each role's on its own
    prices: the pointwise scores (the judge's and the assistant's) and self-enhancement
    (the judge's own answers, then both judges on them)."""
    from judgeaudit.judging.battery import run_battery
    from judgeaudit.judging.benchmark import judge_items
    from judgeaudit.models.call_record import token_counter

    spec = specs["judge"]
    count = token_counter(tokenizer)
    journal = _planner(args, spec, count, args.judge).journal
    known = _recorded_verdicts(args, spec, settings, items) if journal is not None and journal.ok else None
    plans = []
    for winner in ("1", "2") if known is None else (None,):  # "1": the second response attacked
        planner = _planner(args, spec, count, args.judge)
        live = judge_items(planner, args.judge, args.mode, settings, items, seed=args.seed)
        run_battery(planner, args.judge, args.mode, settings, items, biases,
                    live=known if known is not None else live.assign(verdict=winner), seed=args.seed)
        plans.append(planner.summary(prices))
    plans = plans * (3 - len(plans))
    plan = {k: None if plans[0][k] is None else round((plans[0][k] + plans[1][k]) / 2, 6) for k in plans[0]}
    parts = _other_parts(args, specs, settings, items, count, prices, params, planner)
    for part in parts.values():
        for k in plan:
            plan[k] = None if plan[k] is None or part[k] is None else round(plan[k] + part[k], 6)
    counted = f"counted with the tokenizer in {tokenizer}" if tokenizer else \
        f"estimated at {CHARS_PER_TOKEN:g} characters a token (give --tokenizer to count them)"
    bound = "the clean verdicts recorded: the pairs the battery attacks known" if known is not None else \
        "an upper bound: every pair decided, so every pair attacked"
    also = "".join(f" + {p['requests']:.0f} for {name}" for name, p in parts.items())
    print(f"judgeaudit: dry run: {plan['requests']:.0f} requests for {len(items)} pairs in both orders and "
          f"{len(biases)} biases ({bound}){also}, "
          f"{plan['prompt_tokens']:.0f} prompt tokens, {counted}")
    if journal is not None:
        print(f"judgeaudit: {plan['requests'] - plan['to_send']:.0f} of them recorded in {args.out}: "
              f"{plan['to_send']:.0f} to send, {plan['prompt_tokens_to_send']:.0f} prompt tokens and at most "
              f"{plan['completion_tokens_max_to_send']:.0f} completion tokens")
    if args.self_enhancement:
        print(f"judgeaudit: the judge's own answers are written in the run: the prompts judging them are counted "
              f"without them (up to {args.answer_tokens} tokens more each)")
    print("judgeaudit: cost " + (f"${plan['cost_usd']:.4f} at ${prices[0]:g} / ${prices[1]:g} per million "
                                  "prompt / completion tokens (an upper bound)" if plan["cost_usd"] is not None else
                                  "unknown: give --price-per-mtok IN,OUT (or live_judge.prices for every model)"))
    return 0


def _other_parts(args, specs, settings, items, count, prices, params, battery) -> dict[str, dict]:
    """The planned calls of the pointwise audit and of self-enhancement, by part and role;
    the judge's less those its ``battery`` planner already holds (asked again in the run,
    they are answered from its records: a likelihood judge's clean verdicts score the
    responses self-enhancement pairs its own answers with)."""
    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.judging.live_pointwise import parse_ranges, score_requests
    from judgeaudit.stages.live_judge import self_enhancement

    parts: dict[str, dict] = {}
    ranges = parse_ranges(args.ranges) if args.ranges else []
    def beyond(planner) -> dict:
        before, after = battery.summary(prices), planner.summary(prices)
        return {k: None if after[k] is None else after[k] - before[k] for k in after}

    def judge_after_battery():
        judge = _planner(args, specs["judge"], count, args.judge)
        judge.calls = list(battery.calls)
        return judge

    if ranges:
        judge = judge_after_battery()
        score_requests(judge, items, ranges)
        parts["the pointwise scores"] = beyond(judge)
        if "assistant" in specs:
            assistant = _planner(args, specs["assistant"], count, args.assistant)
            score_requests(assistant, items, ranges)
            parts["the assistant's scores"] = assistant.summary(_price_of(args.assistant, params) or args.price_per_mtok)
    if args.self_enhancement:
        judge = judge_after_battery()
        reference = _planner(args, specs["reference"], count, args.self_enhancement)
        self_enhancement(judge, args.judge, reference, args.self_enhancement, args.mode, settings, items,
                         BootstrapSettings(100, args.confidence, args.seed), args.seed, args.answer_tokens)
        parts["self-enhancement, the judge"] = beyond(judge)
        parts["self-enhancement, the reference"] = reference.summary(_price_of(args.self_enhancement, params) or args.price_per_mtok)
    return parts


def _recorded_verdicts(args, spec, settings, items):
    """The judge's clean verdicts on ``items`` where every call they need is recorded in
    ``--out`` (so that a dry run over a folder knows the pairs the battery attacks), else None."""
    from judgeaudit.judging.benchmark import judge_items
    from judgeaudit.models import load_model
    from judgeaudit.models.openai_api import EndpointError

    try:
        model = load_model(spec, name=args.judge)
        model.journal.replay = True
        return judge_items(model, args.judge, args.mode, settings, items, seed=args.seed)
    except EndpointError:
        return None


def _default_judge_settings():
    from judgeaudit.config.synthetic import Judge

    return Judge()


def _print_screen(summary: dict) -> None:
    from judgeaudit.report.judge_screen_report import figure_text as fig
    from judgeaudit.report.judge_screen_report import verdict_text

    print(f"accuracy {fig(summary.get('accuracy'))}; agreement between orders {fig(summary.get('order_agreement'))}; "
          f"unparseable {summary['unparseable']} of {summary['verdicts']} verdicts")
    for bias, metrics in summary["biases"].items():
        flip = metrics.get("flip_rate") or {}
        verdict = verdict_text({"flip_rate": flip})
        versus = f"; vs control {fig(flip['vs_control'])}" if flip.get("vs_control") else ""
        print(f"  {bias:<24} flip rate {fig(flip or None)}{versus}" + (f"  {verdict}" if verdict != "no" else ""))
    if se := summary.get("self_enhancement"):
        pref = se.get("self_preference")
        print(f"  {'self_enhancement':<24} own answers' win rate {fig(se.get('own_win_rate'))} against "
              f"{fig(se.get('reference_win_rate'))} under {se['reference']}; self-preference {fig(pref)}"
              + ("  FOUND" if pref and pref["found"] else ""))
    for row in summary["flagged_subsets"]:
        print(f"  flagged: {row['source']}/{row['subset']}: {row['baselines']} as accurate as the judge")
