"""``python -m flows.run [STAGE]`` (what dvc.yaml's commands and `judgeaudit run` call): one
stage, or every stage in order. With a Prefect server named by PREFECT_API_URL, each stage
is a flow run there (flows/stage_flow.py); without one it runs the same code directly, with
no server to start or to outlive the run."""

from __future__ import annotations

import argparse
import os
import signal
import sys

for _key, _value in {"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                     "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_TELEMETRY": "1",
                     # no progress bar per model load or dataset map (hundreds of lines per run)
                     "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}.items():
    os.environ.setdefault(_key, _value)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from judgeaudit.runner.registry import names

    parser.add_argument("stage", nargs="?", choices=names(), help="one stage (default: every stage in order)")
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument("--root", default="data", help="data directory (default: data)")


def _exit_on_signal(signum: int, _frame) -> None:
    """SIGTERM and SIGHUP end the run as an exception does, so the pool stops its workers."""
    raise SystemExit(128 + signum)


def _unreachable(url: str) -> str | None:
    """None where something answers HTTP at ``url``, else why not (refused, unknown host, no
    answer within HEALTH_TIMEOUT_S): asked once before a flow run, whose Prefect client would
    retry for seconds and end in a traceback. Any answer counts (Prefect Cloud's health route
    needs the key): Prefect itself then says what is wrong with it."""
    import httpx

    try:
        httpx.get(f"{url.rstrip('/')}/health", timeout=HEALTH_TIMEOUT_S)
    except httpx.TransportError as exc:
        return str(exc) or type(exc).__name__
    return None


HEALTH_TIMEOUT_S = 5.0


def run(stage: str | None, params_path: str, root: str) -> int:
    """The stage (every stage for None): as a Prefect flow run where a server is named, else directly."""
    from judgeaudit.runner import registry

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    names = [stage] if stage else [s.name for s in registry.stages()]
    try:
        if url := os.environ.get("PREFECT_API_URL"):
            if (why := _unreachable(url)) is not None:
                print(f"judgeaudit: error: no Prefect server answers at PREFECT_API_URL={url} ({why}); start one "
                      "(`prefect server start`) or unset PREFECT_API_URL to run without one", file=sys.stderr)
                return 2
            from flows.stage_flow import full_audit, stage_flow

            full_audit(params_path, root) if stage is None else stage_flow(stage, params_path, root)
            return 0
        from judgeaudit.runner.execute import execute

        for name in names:
            execute(name, params_path, root)
    except KeyboardInterrupt:
        print("judgeaudit: interrupted; run it again to finish (what is written stays valid)", file=sys.stderr)
        return 130
    return 0


def apply_dispatch(params_path: str) -> int | None:
    """Set the params file's ``cpu_dispatch`` before NumPy and torch load
    (judgeaudit/dispatch.py); None where it could, else an exit status, after saying why not."""
    from judgeaudit import dispatch

    try:
        dispatch.apply(dispatch.setting_in(params_path))
    except (ValueError, RuntimeError) as exc:
        print(f"judgeaudit: error: {params_path}: {exc}", file=sys.stderr)
        return 2
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.run", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if (status := apply_dispatch(args.params)) is not None:
        return status
    from judgeaudit.config import ConfigError
    from judgeaudit.schemas.validate import TableValidationError
    from judgeaudit.tables import InputError

    try:
        return run(args.stage, args.params, args.root)
    except (ConfigError, InputError, TableValidationError, ValueError, FileNotFoundError) as exc:
        print(f"judgeaudit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
