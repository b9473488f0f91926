"""What a Prefect flow run costs a stage process that has no server to report to: the same
trivial stage body run in a fresh process three ways, side by side in one run, N times each
in turn: plainly; as a Prefect flow on Prefect's ephemeral server (what each `dvc repro`
stage would start without PREFECT_API_URL); and as a Prefect flow on a server already
running (what a user's `prefect server start` gives). It prints each way's median seconds
and the ratio to the plain run: the reason `python -m flows.run` runs a stage directly
where no server is named.

    python bench/prefect_overhead.py            # 3 rounds
    python bench/prefect_overhead.py --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

BODY = "import json, pandas; json.dumps(pandas.DataFrame({'a': [1, 2]}).to_dict())"
PLAIN = f"{BODY}\n"
FLOW = ("from prefect import flow\n"
        "@flow\n"
        f"def stage():\n    {BODY}\n"
        "stage()\n")


def timed(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    base = {**os.environ, "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180"}
    base.pop("PREFECT_API_URL", None)
    with tempfile.TemporaryDirectory() as home:
        base["PREFECT_HOME"] = home
        timed(FLOW, base)  # the ephemeral database created once, as on a machine that ran Prefect before
        port = 4300 + os.getpid() % 500
        server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--port", str(port)],
                                  env=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            served = {**base, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}
            deadline = time.monotonic() + 180
            while subprocess.run([sys.executable, "-c", "import urllib.request; urllib.request.urlopen("
                                  f"'http://127.0.0.1:{port}/api/health', timeout=2)"],
                                 capture_output=True).returncode != 0:
                if time.monotonic() > deadline:
                    raise SystemExit("the Prefect server did not start within 180 s")
                time.sleep(1)
            times: dict[str, list[float]] = {"plain": [], "ephemeral server": [], "running server": []}
            for _ in range(args.rounds):  # in turn, so an hour's speed touches each way alike
                times["plain"].append(timed(PLAIN, base))
                times["ephemeral server"].append(timed(FLOW, base))
                times["running server"].append(timed(FLOW, served))
        finally:
            server.terminate()
            server.wait(timeout=60)
    plain = statistics.median(times["plain"])
    for way, seconds in times.items():
        median = statistics.median(seconds)
        print(f"{way}: {median:.1f} s median of {len(seconds)} (ratio to plain {median / plain:.1f}x, "
              f"+{median - plain:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
