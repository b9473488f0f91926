"""``judgeaudit run [STAGE]``: one stage of the pipeline (or the whole audit) as a Prefect
flow. dvc.yaml's stage commands run this module (``python -m flows.run STAGE``), not the
whole CLI: it is every stage's entry, so an edit to the CLI's other commands (serve,
leaderboard, pu-audit...) reruns no stage, and an edit here reruns them all."""

from __future__ import annotations

import argparse
import os
import sys
import time

from flows.registry import NAMES as STAGE_NAMES  # the stages, declared once

PARAMS = ("cpu_dispatch", "precision")  # what every stage's entry reads itself (dvc.yaml lists it for each)

# Prefect's ephemeral server needs longer than its default to start on 2 cores, telemetry
# stays off and Hugging Face's per-load progress bars too (set before anything is imported).
for _key, _value in {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
                     "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                     "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_TELEMETRY": "1",
                     # no progress bar per model load or dataset map (hundreds of lines per run)
                     "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}.items():
    os.environ.setdefault(_key, _value)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stage", nargs="?", choices=STAGE_NAMES,
                        help="one stage (default: the full DAG, every stage in order)")
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument("--root", default="data", help="data directory (default: data)")


def apply_dispatch(params_path: str) -> int | None:
    """Set the params file's ``cpu_dispatch`` (judgeaudit/dispatch.py) before NumPy and torch
    load; None where it could, else an exit status, after saying why not. (Its ``precision``
    is applied by every stage's flow: flows.common.load_params.)"""
    from judgeaudit import dispatch

    try:
        dispatch.apply(dispatch.setting_in(params_path))
    except (ValueError, RuntimeError) as exc:
        print(f"judgeaudit: error: {params_path}: {exc}", file=sys.stderr)
        return 2
    return None


def run(stage: str | None, params_path: str, root: str) -> int:
    """The stage's Prefect flow (the whole audit for None), on the Prefect server
    PREFECT_API_URL names; else, under `dvc repro`, the server the DVC run's stages share;
    else a temporary server of its own."""
    from judgeaudit.config import load_params

    params = load_params(params_path)  # fail fast, before any server starts
    if stage in (None, "bootstrap") and params.corpus.prompts_file:
        from judgeaudit.pipeline.prompts import make_prompts

        make_prompts(params)
    from flows.registry import load_flow, missing_upstream

    if stage and (missing := missing_upstream(stage, root)):
        raise FileNotFoundError(missing)  # said before any server starts
    from flows.server import exit_on_sigterm, run_api

    exit_on_sigterm()
    loaded = []
    started = time.monotonic()

    def meanwhile() -> None:  # while the server starts (on two cores the two overlap)
        from judgeaudit.tables import remove_leftovers

        from flows.runners import preload_workers

        preload_workers(stage, params.scale)  # the workers' imports, on the other core, beside the next ones

        for path in remove_leftovers(root):
            print(f"judgeaudit: removed {path}, left by an interrupted write", file=sys.stderr)
        loaded.append(load_flow(stage))  # one stage loads only its own module
        from judgeaudit.schemas.validate import warm_up

        warm_up()  # Great Expectations' import and context: 4 s per stage otherwise

    with run_api(meanwhile=meanwhile) as url:  # the server: the user's, the DVC run's, or this run's own
        result = loaded[0](params_path=params_path, root=root)
    shown = f"{len(result)} results" if isinstance(result, (list, dict)) else result
    from flows.warm import forked, launch

    where = " (in this DVC run's warm process)" if forked() else ""
    print(f"judgeaudit: {stage or 'full audit'} done in {time.monotonic() - started:.0f} s{where}: {shown}")
    launch(url)  # under DVC: the process the run's next stages start from (flows/warm.py)
    return 0


def main(argv: list[str] | None = None) -> int:
    from flows.warm import hand_over

    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m flows.run", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    if (status := apply_dispatch(args.params)) is not None:  # so has the warm process the first stage starts
        return status
    if (status := hand_over(argv)) is not None:  # under DVC, a later stage: run by the warm process
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
