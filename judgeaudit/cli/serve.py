"""``judgeaudit serve``: an OpenAI-compatible server (``judgeaudit.serving``) over models
named in a params file."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def add_serve(sub: argparse._SubParsersAction) -> None:
    """``serve MODEL...``: the models behind an OpenAI-compatible endpoint."""
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
    srv.add_argument("--max-body-mb", type=float, default=8.0,
                     help="the largest request body in MB (2^20 bytes); beyond it: 413, before it is read")
    srv.add_argument("--max-logprobs", type=int, default=None,
                     help="log-probs per token a request may ask for (default: OpenAI's caps, 5 for "
                          "completions' logprobs and 20 for chat's top_logprobs)")
    srv.add_argument("--api-key", default=None,
                     help="a key every request must send as 'Authorization: Bearer KEY' (default: "
                          "$JUDGEAUDIT_SERVE_API_KEY, which keeps it out of the process list)")
    srv.add_argument("--allowed-hosts", type=lambda v: [h.strip() for h in v.split(",") if h.strip()],
                     default=None, help="comma-separated names the Host header may give ('*': any; default: "
                                        "loopback's names when bound to loopback, else any)")
    srv.add_argument("--docs", action="store_true",
                     help="serve the API docs at /docs, /redoc and /openapi.json")
    srv.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from judgeaudit.config import load_params
    from judgeaudit.models import load_model
    from judgeaudit.serving.app import make_app
    from judgeaudit.serving.guard import KEY_ENV, access_for
    from judgeaudit.serving.schema import ServeLimits

    if args.max_body_mb <= 0 or (args.max_logprobs is not None and args.max_logprobs < 0):
        raise ValueError("--max-body-mb must be positive and --max-logprobs at least 0")
    params = load_params(args.params)
    unknown = [m for m in args.models if m not in params.models]
    if unknown:
        raise ValueError(f"{args.params}: no model named {unknown[0]!r} under 'models'")
    models = {m: load_model(params.spec_for(m, Path(args.root) / "models"), name=m) for m in args.models}
    bad = [m for m, model in models.items() if not hasattr(model, "generate_with_logprobs")]
    if bad:
        raise ValueError(f"model {bad[0]!r}: serve needs the transformers backend")
    api_key = args.api_key or os.environ.get(KEY_ENV) or None
    hosts, warning = access_for(args.host, api_key, args.allowed_hosts)
    if warning:
        print(warning, file=sys.stderr)
    print(f"judgeaudit: serving {sorted(models)} at http://{args.host}:{args.port}/v1"
          + (" (API key required)" if api_key else ""))
    limits = ServeLimits(max_tokens=args.max_tokens, max_batch=args.max_batch, max_queue=args.max_queue,
                         truncate=args.truncate, batch_wait_ms=args.batch_wait_ms,
                         max_body_bytes=int(args.max_body_mb * 2 ** 20), max_logprobs=args.max_logprobs)
    app = make_app(models, limits, engine=args.engine, engine_threads=args.engine_threads, api_key=api_key,
                   allowed_hosts=hosts, docs=args.docs)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        app.state.batcher.close()
    return 0
