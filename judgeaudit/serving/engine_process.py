"""The serving engine in a process of its own, as vLLM's engine core runs apart from its
API server: the HTTP process parses, validates and answers requests while the engine
process decodes the running batch, so neither waits for the other's interpreter lock.
With the engine as a thread of the HTTP process, the server was held to one core by that
lock on this 2-core machine (13 ms of CPU per request at 16 in flight, about twice the
model's own work); ``bench/serve_throughput.py --engine thread`` shows the difference.

The engine process loads its own copy of each served model from the model's spec (the
HTTP process keeps its copy for tokenising, prompt checks and ``echo`` scoring) and runs
``judgeaudit.serving.batching.Batcher`` over them. Messages on one pipe: a job, a
cancellation, a stats request; back: results, errors and cancellations by job id. Every
job is answered, one whose client has gone too: the answer frees its queue slot here. It
ends when the pipe closes (the HTTP process has gone, however it went), so it never
outlives the server.
"""

from __future__ import annotations

import ctypes
import itertools
import multiprocessing as mp
import os
import threading
from concurrent.futures import Future

from fastapi import HTTPException

from judgeaudit.models.hf import TransformersModel


class EngineProcess:
    """``Batcher``'s interface (``submit``, ``cancel``, ``in_flight``, ``stats``,
    ``model_lock``) over an engine in a spawned process."""

    def __init__(self, models: dict[str, TransformersModel], limits, threads: int | None = None,
                 start_timeout_s: float = 300.0) -> None:
        """``threads``: torch threads of the engine (None: all cores but one, left to the
        HTTP process: torch's spinning worker threads would otherwise take it)."""
        self.limits = limits
        threads = threads if threads is not None else max(1, len(os.sched_getaffinity(0)) - 1)
        self.model_lock = threading.Lock()  # the HTTP process's own copies (echo scoring)
        self._pending: dict[int, Future] = {}
        self._ids = itertools.count()
        self._send_lock, self._pending_lock = threading.Lock(), threading.Lock()
        ctx = mp.get_context("spawn")  # never fork a process that holds torch's thread pools
        self._conn, child = ctx.Pipe()
        specs = {name: model.spec for name, model in models.items()}
        self.process = ctx.Process(target=_engine_main, args=(child, specs, limits, threads), daemon=True,
                                   name="judgeaudit-engine")
        self.process.start()
        child.close()
        if not self._conn.poll(start_timeout_s):
            self.process.kill()
            raise RuntimeError(f"the serving engine did not start within {start_timeout_s:.0f} s")
        kind, detail = self._conn.recv()
        if kind != "ready":
            self.process.join(timeout=10)
            raise RuntimeError(f"the serving engine failed to start: {detail}")
        threading.Thread(target=self._read, daemon=True, name="judgeaudit-engine-reader").start()

    def submit(self, job) -> Future:
        if not self.process.is_alive():
            raise HTTPException(503, detail=f"the serving engine has exited (code {self.process.exitcode}); "
                                            "restart judgeaudit serve")
        with self._pending_lock:
            if len(self._pending) >= self.limits.max_queue:
                raise HTTPException(503, detail=f"the server is busy: {self.limits.max_queue} requests queued "
                                                "(judgeaudit serve --max-queue); retry later")
            job.id = next(self._ids)
            self._pending[job.id] = job.future
        self._send(("job", job.id, (job.model, job.prompt, job.max_tokens, job.temperature, job.seed, job.top_k)))
        return job.future

    def cancel(self, job) -> None:
        """The client has gone: the engine drops ``job`` from its queue, or stops generating
        for it, and answers; the answer frees its slot here (the engine's bound and this one
        count the same requests)."""
        job.gone.set()
        self._send(("gone", job.id, None))

    def in_flight(self) -> int:
        """Requests sent to the engine and not answered yet: what ``max_queue`` bounds."""
        with self._pending_lock:
            return len(self._pending)

    def stats(self, timeout_s: float = 30.0) -> dict:
        """The engine's ``Batcher.stats``."""
        future: Future = Future()
        with self._pending_lock:
            key = next(self._ids)
            self._pending[key] = future
        self._send(("stats", key, None))
        return future.result(timeout=timeout_s)

    def close(self) -> None:
        """Stop the engine (it ends its loop and closes its end of the pipe) and wait for it."""
        try:
            self._send(("stop", -1, None))
        except OSError:
            pass  # the engine has gone already
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self._conn.close()

    def _send(self, message: tuple) -> None:
        with self._send_lock:
            self._conn.send(message)

    def _read(self) -> None:
        """Hand each result to its waiting request; if the engine dies, fail them all."""
        try:
            while True:
                key, ok, payload = self._conn.recv()
                with self._pending_lock:
                    future = self._pending.pop(key, None)
                if future is None or future.done():
                    continue
                if ok is None:  # dropped, its client gone
                    future.cancel()
                else:
                    future.set_result(payload) if ok else future.set_exception(RuntimeError(payload))
        except (EOFError, OSError):
            code = self.process.exitcode
            with self._pending_lock:
                waiting, self._pending = list(self._pending.values()), {}
            for future in waiting:
                if not future.done():
                    future.set_exception(RuntimeError(f"the serving engine exited (code {code})"))


def _keep_freed_memory() -> None:
    """glibc hands a freed block over 128 KB back to the OS at once, so the KV buffers that
    each admission or retirement allocates were fresh pages, faulted in one by one: 45,000
    to 74,000 page faults and 12% more CPU over 400 requests than with freed memory kept
    for reuse (``mallopt``; glibc only, elsewhere a no-op)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks under 32 MB come from the heap
    libc.mallopt(-1, 512 << 20)  # M_TRIM_THRESHOLD: keep up to 512 MB of freed heap


def _engine_main(conn, specs: dict, limits, threads: int) -> None:
    """The engine process: load the models, then run the batcher's loop in this process's
    only thread, reading ``conn`` between decoding steps (a second thread here would take
    the interpreter lock from the decoding loop at every message)."""
    try:
        import torch

        from judgeaudit.models import load_model
        from judgeaudit.serving.batching import Batcher, Job

        torch.set_num_threads(threads)
        _keep_freed_memory()

        class PipeBatcher(Batcher):
            def _wait(self, timeout: float | None = None) -> None:
                conn.poll(timeout)

            def _receive(self) -> None:
                while conn.poll():
                    kind, key, body = conn.recv()
                    if kind == "job":
                        job = jobs[key] = Job(*body)
                        try:
                            self.submit(job).add_done_callback(lambda f, key=key: done(key, f))
                        except HTTPException as exc:
                            del jobs[key]
                            reply(key, False, str(exc.detail))
                    elif kind == "gone" and key in jobs:
                        self.cancel(jobs[key])
                    elif kind == "stats":
                        reply(key, True, self.stats())
                    elif kind == "stop":
                        raise EOFError

        batcher = PipeBatcher({name: load_model(spec, name=name) for name, spec in specs.items()}, limits,
                              thread=False)
    except Exception as exc:  # noqa: BLE001 -- reported to the HTTP process, which raises it
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    jobs: dict[int, Job] = {}

    def reply(key: int, ok: bool | None, payload) -> None:
        """``ok``: True, a result; False, an error; None, dropped (its client had gone)."""
        conn.send((key, ok, payload))

    def done(key: int, future: Future) -> None:
        jobs.pop(key, None)
        if future.cancelled():
            reply(key, None, None)
            return
        exc = future.exception()
        reply(key, exc is None, f"{type(exc).__name__}: {exc}" if exc else future.result())

    conn.send(("ready", None))
    try:
        batcher._loop()
    except (EOFError, OSError):
        return  # told to stop, or the HTTP process has gone (the pipe closed): the engine ends
