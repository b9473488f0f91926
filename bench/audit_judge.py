"""`judgeaudit audit-judge` against `judgeaudit serve` at 1 and at 16 requests in flight:
one server on loopback, the same audit run twice against it (`--concurrency 1`, then 16),
each into a fresh output folder of its own (so no recorded call is reused), and for each the
wall time of the whole command, the requests it sent (summary.json's `calls`), requests/s,
then the ratio (16 over 1) and whether the two runs' tables are identical (the number of
requests in flight must not change a result: exit 1 where they differ). A third run replays
the first from its records, sending nothing: the command's own time (start, reading, the
bootstrap), which the wall times less it leave the requests' time alone.

The judge is the completions endpoint, by default in `likelihood` mode (each verdict the
log-prob of each candidate, echoed; `--mode prompted`: the next token's log-probs, generated
through the server's batching), on LLMBar pairs: ../shared/data/llmbar with `--limit` where it is,
else the test suite's few pairs. The model: `--model` (default data/models/gen-formal, only
read), else, where that folder is missing, a tiny Llama built here with random weights
(speed only; both runs still see the same judge).

    python bench/audit_judge.py [--model data/models/gen-formal] [--limit 64] [--biases all]
    python bench/audit_judge.py --data tests/data/llmbar --limit 0   # the test suite's pairs, all
    python bench/audit_judge.py --concurrency 32                      # another load than 16
    python bench/audit_judge.py --mode prompted                       # verdicts from one generated token
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SHARED_LLMBAR = ROOT.parent / "shared" / "data" / "llmbar"
TABLES = ("verdicts", "battery_pairs", "battery", "baselines")
NAME = "gen-formal"  # the name the model is served under: params.yaml's, so `serve` accepts it
TOP_LOGPROBS = 20  # what the prompted mode asks for (ModelSpec.top_logprobs); serve allows 5 by default


def _model_root(model: Path, scratch: Path) -> Path:
    """A data root whose models/gen-formal is ``model`` (a link: the folder is only read), or a
    tiny Llama built in ``scratch`` where ``model`` is missing."""
    (scratch / "models").mkdir(parents=True)
    target = scratch / "models" / NAME
    if model.is_dir():
        target.symlink_to(model.resolve(), target_is_directory=True)
        return scratch
    from judgeaudit.generation.corpus import make_items
    from judgeaudit.models.scratch import build_llama, train_tokenizer

    print(f"{model}: no such folder; building a tiny Llama with random weights (speed only)")
    texts = (f"Q: {it.prompt}\nA: The answer is {it.fact}." for it in make_items(256, 0))
    tok = train_tokenizer(texts, 1024, scratch / "tok")
    model = build_llama(tok, layers=2, hidden=128, heads=4, intermediate=256, max_positions=256, seed=0)
    model.save_pretrained(target)
    tok.save_pretrained(target)
    return scratch


def _serve(root: Path, max_batch: int) -> tuple[subprocess.Popen, str]:
    """`judgeaudit serve` over the model in its own process, once it answers; its base URL."""
    from serve_throughput import free_port, wait_for_server  # bench/ is on the path; it imports torch

    port = free_port()
    cmd = [sys.executable, "-m", "flows.cli", "serve", NAME, "--params", str(ROOT / "params.yaml"),
           "--root", str(root), "--port", str(port), "--truncate", "--max-batch", str(max_batch),
           "--max-logprobs", str(TOP_LOGPROBS)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    wait_for_server(proc, url)
    return proc, url


def _audit(url: str, out: Path, concurrency: int, args: argparse.Namespace, *extra: str
           ) -> tuple[float, int, int]:
    """(wall seconds, requests sent, calls answered from this run's own earlier records: a prompt
    asked twice is sent once) of one `judgeaudit audit-judge` run into ``out``."""
    cmd = [sys.executable, "-m", "flows.cli", "audit-judge", "--judge", f"openai:{NAME}", "--base-url", url,
           "--data", f"llmbar={args.data}", "--mode", args.mode, "--prompt-format", "Q: {prompt}\nA:",
           "--biases", args.biases, "--n-boot", str(args.n_boot), "--concurrency", str(concurrency),
           "--out", str(out), "--params", str(ROOT / "params.yaml"), *extra]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    key = os.environ.get("OPENAI_API_KEY", "unused-on-loopback")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": key}
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"audit-judge --concurrency {concurrency} exited {done.returncode}: "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    calls = json.loads((out / "summary.json").read_text())["calls"]
    if calls["failed"]:
        raise SystemExit(f"{out}: {calls['failed']} of {calls['sent']} requests failed")
    return wall, calls["sent"], calls["answered_from_records"]


def differing_tables(a: Path, b: Path) -> list[str]:
    """The tables of audit folder ``a`` that are not identical to ``b``'s."""
    differ = []
    for name in TABLES:
        try:
            pd.testing.assert_frame_equal(pd.read_parquet(a / f"{name}.parquet"),
                                          pd.read_parquet(b / f"{name}.parquet"))
        except AssertionError:
            differ.append(name)
    return differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=ROOT / "data" / "models" / NAME,
                    help="the served model's folder (default data/models/gen-formal; missing: a tiny "
                         "random Llama)")
    ap.add_argument("--data", type=Path,
                    default=SHARED_LLMBAR if SHARED_LLMBAR.is_dir() else ROOT / "tests" / "data" / "llmbar",
                    help="LLMBar's folder (default ../shared/data/llmbar where present, else "
                         "tests/data/llmbar)")
    ap.add_argument("--limit", type=int, default=64, help="a seeded sample of this many pairs (0: all)")
    ap.add_argument("--mode", choices=("likelihood", "prompted", "generative"), default="likelihood",
                    help="the verdict mode (default likelihood: echoed completions; prompted: one token's "
                         "log-probs; generative: a generated verdict)")
    ap.add_argument("--biases", default="all", help="battery items, as audit-judge takes them (default all)")
    ap.add_argument("--n-boot", type=int, default=200, help="bootstrap resamples per CI (in each wall time)")
    ap.add_argument("--concurrency", type=int, default=16, help="requests in flight of the second run")
    ap.add_argument("--max-batch", type=int, default=16, help="the server's --max-batch (serve's own 16)")
    args = ap.parse_args()
    if args.concurrency < 2:
        ap.error("--concurrency: at least 2 (the first run is the one at 1)")
    with tempfile.TemporaryDirectory(prefix="bench-audit-judge-") as tmp:
        root = _model_root(args.model, Path(tmp) / "root")
        server, url = _serve(root, args.max_batch)
        try:
            print(f"model={args.model if args.model.is_dir() else 'tiny random Llama'} data={args.data} "
                  f"limit={args.limit or 'all'} biases={args.biases} mode={args.mode} n_boot={args.n_boot} "
                  f"server max_batch={args.max_batch}")
            print(f"{'in flight':>10}{'wall s':>9}{'requests':>10}{'req/s':>9}{'repeats':>9}"
                  "  (repeats: asked again in the run, answered from its own record)")
            runs = {}
            for concurrency in (1, args.concurrency):
                out = Path(tmp) / f"audit-{concurrency}"  # fresh: no recorded call is reused
                wall, sent, repeats = _audit(url, out, concurrency, args)
                runs[concurrency] = out, wall, sent
                print(f"{concurrency:>10}{wall:>9.1f}{sent:>10}{sent / wall:>9.2f}{repeats:>9}")
            # the command's own time (start, reading, bootstrap, tables): the first run again from
            # its records, sending nothing
            replayed = Path(tmp) / "replayed"
            shutil.copytree(runs[1][0], replayed)
            fixed, resent, _ = _audit(url, replayed, 1, args, "--replay")
            if resent:
                raise SystemExit(f"{replayed}: --replay sent {resent} requests")
            print(f"{'replayed':>10}{fixed:>9.1f}{0:>10}  (the command without its requests)")
        finally:
            server.terminate()
            server.wait()
        (one, wall1, sent1), (many, wall_n, sent_n) = runs[1], runs[args.concurrency]
        rate1, rate_n = sent1 / wall1, sent_n / wall_n
        print(f"requests/s at {args.concurrency} in flight over 1: {rate_n / rate1:.2f}x "
              f"({rate_n:.2f} against {rate1:.2f}); the requests' own time alone (wall less the "
              f"replayed run's): {(wall1 - fixed) / max(wall_n - fixed, 1e-9):.2f}x ({wall1 - fixed:.1f} s "
              f"against {wall_n - fixed:.1f} s)")
        differ = differing_tables(one, many)
        if differ or sent1 != sent_n:
            print(f"the two runs differ: tables {', '.join(differ) or 'none'}; requests {sent1} against "
                  f"{sent_n}", file=sys.stderr)
            return 1
        print(f"tables identical at 1 and {args.concurrency} in flight: {', '.join(TABLES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
