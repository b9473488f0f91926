"""The Prefect API a `judgeaudit run` reports to: the one PREFECT_API_URL names, or a
temporary local server that lives exactly as long as the run.

Prefect's own ephemeral server is stopped by an ``atexit`` hook, which never runs when
the run is killed (SIGKILL, or SIGTERM without a handler), so the server outlived every
killed run, still listening. This one is started with the kernel's parent-death signal
(Linux ``PR_SET_PDEATHSIG``): whatever kills the run, the server gets SIGTERM and stops.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # not Linux: the SIGTERM handler of the run is the remaining guard
        pass


def free_port() -> int:
    """A loopback port nobody listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reserve_api_url() -> str | None:
    """The URL this run's temporary server will listen on, put in the environment before
    Prefect is imported (None: PREFECT_API_URL names a server already). Prefect builds its
    process-wide settings at import; a thread that does not see the URL there (the
    process pool's result collector, say) starts a server of its own."""
    if os.environ.get("PREFECT_API_URL"):
        return None
    os.environ["PREFECT_API_URL"] = url = f"http://127.0.0.1:{free_port()}/api"
    return url


def launch(url: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """A temporary Prefect server starting on ``url`` (its API, ``.../api``), without
    importing Prefect here: that import takes a second the server's own start need not
    wait for. It dies with this process, whatever kills it."""
    app_dir = Path(importlib.util.find_spec("prefect").origin).parent.parent
    return subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(app_dir), "--factory",
         "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(urlsplit(url).port),
         "--log-level", "error", "--lifespan", "on"],
        env={**os.environ, **(env or {}), "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"},
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)


@contextlib.contextmanager
def prefect_api(reserved: str | None = None, startup_timeout_s: float = 180.0,
                meanwhile: Callable[[], object] | None = None,
                server: subprocess.Popen | None = None) -> Iterator[str]:
    """Yield the API URL; a temporary server started here (on ``reserved``, from
    ``reserve_api_url``, or a free port), or ``server`` (``launch``ed on ``reserved``
    already), is stopped on the way out and dies with this process if it is killed.
    ``meanwhile`` (e.g. importing the stage's code) runs while the server starts: on two
    cores the two overlap."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        get_current_settings,
        temporary_settings,
    )

    if server is None and reserved is None and PREFECT_API_URL.value():
        if meanwhile is not None:
            meanwhile()
        yield PREFECT_API_URL.value()
        return
    url = reserved or f"http://127.0.0.1:{free_port()}/api"
    if server is None:  # the settings of this process (a profile, temporary settings) go with it
        server = launch(url, get_current_settings().to_environment_variables(exclude_unset=True))
    try:
        if meanwhile is not None:
            meanwhile()
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"the temporary Prefect server exited with code {server.returncode}")
            if _healthy(url):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the temporary Prefect server did not answer on {url} within "
                                   f"{startup_timeout_s:.0f} s")
            time.sleep(0.1)
        print(f"judgeaudit: temporary Prefect server on {url} (set PREFECT_API_URL to use your own)",
              file=sys.stderr)
        # worker processes (Dask, process pools) report to it too; a reserved URL is in the
        # environment already, and whoever reserved it takes it out
        os.environ["PREFECT_API_URL"] = url
        try:
            # no flow-run heartbeats: they let a long-lived server mark a crashed run, and
            # this one dies with the run; each flow's exit waited up to 1 s on their thread
            with temporary_settings(updates={PREFECT_API_URL: url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
                try:
                    yield url
                finally:
                    _drain()
        finally:
            if reserved is None:
                os.environ.pop("PREFECT_API_URL", None)
    finally:
        stop(server)


def _healthy(url: str) -> bool:
    """Whether the server at ``url`` (its API) answers its health check. Plain urllib: an
    httpx client builds an SSL context on creation (about 0.1 s of CPU), and a client per
    poll cost a light stage seconds of the core the starting server needs."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    try:
        with direct.open(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except (OSError, http.client.HTTPException):  # URLError is an OSError
        return False


def stop(server: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 10 s; nothing if it has exited."""
    if server.poll() is not None:
        return
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _drain() -> None:
    """Send the logs and events still queued before the server stops (as Prefect's test
    harness does), so that stopping it costs no "connection failed" errors."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    try:
        APILogWorker.instance().drain()
    except RuntimeError:  # never started
        pass
    EventsWorker.drain_all()


def exit_on_sigterm() -> None:
    """SIGTERM and SIGHUP end the run as an exception would, so every ``finally`` (the
    temporary server, temporary files) runs; the exit status is 128 + the signal."""
    def handler(signum: int, _frame) -> None:
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)
