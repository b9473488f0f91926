"""`judgeaudit serve` under load: requests/s and p50/p99 latency at 1, 16 and 50 requests
in flight, one request at a time (--max-batch 1: what the server did before batching, one
global lock) against continuous batching (--max-batch 16: requests join and leave the
running batch at every decoding step), same model, same requests, one run. Each request:
a judge prompt, `--tokens` new tokens, greedy but one in `--sampled-every` (temperature
0.7, its own seed), which decodes in the running batch beside the greedy ones (it used to
run alone, holding them up). A third server batches continuously without
the 30 ms batching window (`--batch-wait-ms 0`). Every server runs as `judgeaudit serve`
does (`--engine process --engine-threads 1` unless told otherwise); the load comes from
aiohttp on one thread (httpx took a whole core at 16 in flight, as much as the server).

    python bench/serve_throughput.py [--model data/models/gen-formal] [--requests 192] [--tokens 16]
    python bench/serve_throughput.py --sampled-every 0   # greedy only
    python bench/serve_throughput.py --engine thread   # the engine as a thread of the HTTP process
    python bench/serve_throughput.py --scratch 512,8   # a wider, deeper Llama (random weights)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx

from judging_throughput import add_scratch_option, scratch_or_model  # bench/ is on the path as a script

from judgeaudit.config import load_params
from judgeaudit.generation.corpus import make_items
from judgeaudit.models import ModelSpec, load_model


_SERVER = """
import sys, uvicorn
from judgeaudit.models import ModelSpec, load_model
from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
if __name__ == "__main__":  # the engine process re-imports this module
    model = load_model(ModelSpec(path=sys.argv[1], chat_template="Q: {prompt}\\nA:", max_length=256), name="judge")
    app = make_app({"judge": model}, ServeLimits(max_batch=int(sys.argv[2]), max_queue=256,
                                                 batch_wait_ms=float(sys.argv[4])),
                   engine=sys.argv[5], engine_threads=int(sys.argv[6]))
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[3]), log_level="error")
"""


def free_port() -> int:
    """A loopback port nobody listens on (now)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(model_path: str, max_batch: int, wait_ms: float, engine: str, threads: int
           ) -> tuple[subprocess.Popen, str]:
    """The server in its own process, as `judgeaudit serve` runs (the clients' threads
    must not share its interpreter lock)."""
    port = free_port()
    script = Path(tempfile.mkdtemp(prefix="bench-serve-")) / "server.py"  # spawn re-imports a file, not -c
    script.write_text(_SERVER)
    proc = subprocess.Popen([sys.executable, str(script), model_path, str(max_batch), str(port), str(wait_ms),
                             engine, str(threads)], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    wait_for_server(proc, url)
    return proc, f"{url}/completions"


def wait_for_server(proc: subprocess.Popen, url: str) -> None:
    """Return once the server at ``url`` (a base URL, ``.../v1``) lists its models; fail if
    its process ``proc`` exits first."""
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode}")
        try:
            if httpx.get(f"{url}/models").status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)


def _requests(prompts: list[str], tokens: int, sampled_every: int) -> list[dict]:
    """The request bodies: greedy, but every ``sampled_every``-th (0: none) sampled."""
    bodies = [{"model": "judge", "prompt": p, "max_tokens": tokens} for p in prompts]
    for k in range(sampled_every - 1, len(bodies), sampled_every) if sampled_every else ():
        bodies[k].update(temperature=0.7, seed=k)
    return bodies


def _load(url: str, bodies: list[dict], in_flight: int) -> tuple[float, float, float]:
    """(requests/s, p50 s, p99 s) with ``in_flight`` concurrent clients sending ``bodies``
    (asyncio on one thread: the load generator's own CPU cost stays small)."""
    async def run() -> tuple[float, list[float]]:
        latencies: list[float] = []
        todo = iter(bodies)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=in_flight),
                                         timeout=aiohttp.ClientTimeout(total=600)) as client:
            async def worker() -> None:
                for body in todo:
                    t0 = time.perf_counter()
                    async with client.post(url, json=body) as r:
                        r.raise_for_status()
                        await r.read()
                    latencies.append(time.perf_counter() - t0)
            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(in_flight)))
            return time.perf_counter() - start, latencies

    wall, latencies = asyncio.run(run())
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return len(bodies) / wall, q[49], q[98]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="data/models/gen-formal")
    ap.add_argument("--requests", type=int, default=192)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each load; the median run is printed "
                                                          "(this machine's speed drifts by 20%% between runs)")
    ap.add_argument("--engine", choices=("process", "thread"), default="process")
    ap.add_argument("--engine-threads", type=int, default=1, help="torch threads of the engine (0: torch's default)")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--sampled-every", type=int, default=8, help="one request in this many is sampled (0: none)")
    add_scratch_option(ap)
    args = scratch_or_model(ap.parse_args())
    model = load_model(ModelSpec(path=args.model, chat_template="Q: {prompt}\nA:", max_length=256), name="judge")
    template = load_params().judge.prompt_template
    items = make_items(args.requests, seed=0)
    prompts = [model.format_prompt(template.format(question=it.prompt, answer_a=f"The answer is {it.fact}.",
                                                   answer_b=f"Answer: {it.fact}.")) for it in items]
    bodies = _requests(prompts, args.tokens, args.sampled_every)
    mix = f"1 in {args.sampled_every} sampled" if args.sampled_every else "greedy"
    print(f"model={args.model} requests={args.requests} new_tokens={args.tokens} ({mix}) "
          f"engine={args.engine} engine_threads={args.engine_threads}")
    print(f"{'server':<28}{'in flight':>10}{'req/s':>9}{'p50 s':>9}{'p99 s':>9}")
    rates = {}
    servers = (("one at a time (before)", 1, 0.0), ("continuous batching (after)", 16, 30.0),
               ("  without the window", 16, 0.0))
    for label, max_batch, wait_ms in servers:
        server, url = _start(args.model, max_batch, wait_ms, args.engine, args.engine_threads)
        _load(url, bodies[:4], 1)  # warm-up
        for in_flight in (1, 16, 50):
            runs = sorted(_load(url, bodies, in_flight) for _ in range(args.repeats))
            rate, p50, p99 = runs[len(runs) // 2]
            rates[label, in_flight] = rate
            print(f"{label:<28}{in_flight:>10}{rate:>9.1f}{p50:>9.3f}{p99:>9.3f}")
        server.terminate()
        server.wait()
    for in_flight in (16, 50):
        after, before = rates["continuous batching (after)", in_flight], rates["one at a time (before)", 1]
        print(f"at {in_flight} in flight, batched vs one at a time: {after / before:.1f}x "
              f"(vs the same load one at a time: {after / rates['one at a time (before)', in_flight]:.1f}x)")


if __name__ == "__main__":
    main()
