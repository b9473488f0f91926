"""The Prefect API a `judgeaudit run` reports to: the one PREFECT_API_URL names; else,
for a stage that `dvc repro` (or `dvc exp run`) runs, one local server that every stage
of that DVC run shares, started by the first and stopped when DVC exits; else a
temporary local server that lives exactly as long as the run.

Prefect's own ephemeral server is stopped by an ``atexit`` hook, which never runs when
the run is killed (SIGKILL, or SIGTERM without a handler), so the server outlived every
killed run, still listening. This one is started with the kernel's parent-death signal
(Linux ``PR_SET_PDEATHSIG``): whatever kills the run, the server gets SIGTERM and stops.
The shared server outlives the stage that started it, so it watches the DVC process
instead (``python -m flows.server``): once that is gone, however it ended, the server stops.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

from judgeaudit.workers import die_with_parent, running


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
    wait for. It dies with this process, whatever kills it (``_serve_child``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "flows.server", "child", str(os.getpid()), url],
        env={**os.environ, **(env or {}), "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"})


def _uvicorn(url: str) -> None:
    """Serve Prefect's API on ``url`` (its ``.../api``) until signalled."""
    import uvicorn

    uvicorn.run("prefect.server.api.server:create_app", factory=True, host="127.0.0.1",
                port=urlsplit(url).port, log_level="error", lifespan="on")


def _serve_child(parent: int, url: str) -> None:
    """``launch``'s server: the kernel signals it once the thread that started it has exited
    (``die_with_parent``, asked here rather than in a ``preexec_fn``, which is unsafe in a
    process that runs threads); a parent gone before the kernel was asked ends it at once."""
    if die_with_parent() and os.getppid() != parent:
        sys.exit(1)
    _uvicorn(url)


# -- one server for the stages of one DVC run ---------------------------------------------
def _stat(pid: int) -> tuple[str, int, int]:
    """(state, parent pid, start time in clock ticks since boot) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1]), int(fields[19])


def _alive(owner: tuple[int, int]) -> bool:
    """Whether process ``owner`` (pid, start time) still runs: a pid the kernel gave to a
    newer process has another start time."""
    try:
        state, _, start = _stat(owner[0])
        return state != "Z" and start == owner[1]
    except (OSError, IndexError, ValueError):
        return False


entry_pid: int | None = None  # the process DVC started, where a warm process runs its stage (flows/warm.py)


def dvc_owner() -> tuple[int, int] | None:
    """The DVC process (pid, start time) whose stage this process runs, or None: not under
    DVC, or not Linux. DVC puts ``DVC_STAGE`` in each stage command's environment (and so
    its shell's); the nearest ancestor without it is DVC itself."""
    if "DVC_STAGE" not in os.environ or not sys.platform.startswith("linux"):
        return None
    pid = entry_pid or os.getppid()
    try:
        while pid > 1:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            if not any(item.startswith(b"DVC_STAGE=") for item in environ):
                return pid, _stat(pid)[2]
            pid = _stat(pid)[1]
    except (OSError, ValueError):  # another user's process, or gone: no sharing
        return None
    return None


def _records(sub: str = "") -> Path:
    """The per-user folder of the records that name a DVC run's shared processes (the Prefect
    server here, the warm stage process in ``sub`` "warm"), one ``<dvc pid>-<start>.json`` each."""
    folder = Path(tempfile.gettempdir()) / f"judgeaudit-prefect-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if sub:
        folder = folder / sub
        folder.mkdir(mode=0o700, exist_ok=True)
    return folder


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock: stages of one DVC run are serial; `dvc exp run -j` is not."""
    import fcntl  # POSIX only, as is the sharing (dvc_owner)

    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def running_record(record: Path) -> dict | None:
    """Under ``locked``: what ``record`` says if the process it names still runs; else None,
    with the records (and their logs and sockets) of DVC runs gone swept from its folder, left
    by processes killed with SIGKILL."""
    with contextlib.suppress(OSError, ValueError, KeyError):
        known = json.loads(record.read_text())
        if _alive((known["pid"], known["start"])):
            return known
    for stale in record.parent.glob("*-*.json"):
        pid, _, start = stale.stem.partition("-")
        if not (pid.isdigit() and start.isdigit() and _alive((int(pid), int(start)))):
            for leftover in (stale, stale.with_suffix(".sock"), stale.with_suffix(".log")):
                leftover.unlink(missing_ok=True)
    return None


def drop_record(record: Path, keep_log: bool) -> None:
    """Remove this process's ``record`` and its socket, and its log unless ``keep_log``; a record
    another process has since written stays."""
    with locked(record.parent), contextlib.suppress(OSError, ValueError, KeyError):
        if json.loads(record.read_text())["pid"] == os.getpid():
            record.unlink()
            record.with_suffix(".sock").unlink(missing_ok=True)
            if not keep_log:
                record.with_suffix(".log").unlink(missing_ok=True)


def shared_server(owner: tuple[int, int]) -> tuple[str, int]:
    """(API URL, server pid) of the server the stages of DVC run ``owner`` share, started
    here (not waited for) if none runs yet. Its record, in a per-user temporary folder,
    names it for the next stages; the server removes it when it stops."""
    folder = _records()
    record = folder / f"{owner[0]}-{owner[1]}.json"
    with locked(folder):
        if known := running_record(record):
            return known["url"], known["pid"]
        url = f"http://127.0.0.1:{free_port()}/api"
        with open(record.with_suffix(".log"), "ab") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "flows.server", str(owner[0]), str(owner[1]), url, str(record)],
                env={**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"},
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,  # never DVC's pipes: it may read them to EOF
                start_new_session=True)  # outlives this stage; the DVC run's end stops it
        record.write_text(json.dumps({"url": url, "pid": server.pid, "start": _stat(server.pid)[2]}))
        return url, server.pid


def _serve_while(owner: tuple[int, int], url: str, record: Path) -> None:
    """Serve Prefect's API on ``url`` until the DVC process ``owner`` is gone."""
    def watch() -> None:
        while _alive(owner):
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's own graceful shutdown
        time.sleep(10)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
    exit_on_sigterm()  # uvicorn raises the signal again once it has shut down: then the cleanup below
    try:
        _uvicorn(url)
    finally:
        drop_record(record, keep_log=_alive(owner))  # stopped with the DVC run; one that failed keeps its log


def _end_with(owner: tuple[int, int], done: threading.Event) -> None:
    """SIGTERM to this stage once the DVC run ``owner`` is gone (unless ``done`` first). A killed
    `dvc repro` left its running stage behind, computing outputs no lock would record while the
    next run wrote the same files, and its server stopped under it. The grace is kept here, not
    by the SIGTERM handler: while a flow runs, Prefect's own handler stands in for
    ``exit_on_sigterm``'s, and its crash report to the server, which stopped with DVC, was
    retried for minutes (a relock's stage, killed this way, was still retrying after 30 s)."""
    while not done.wait(0.5):
        if not _alive(owner):
            print(f"judgeaudit: the DVC run (pid {owner[0]}) that started this stage is gone; stopping",
                  file=sys.stderr)
            os.kill(os.getpid(), signal.SIGTERM)
            _exit_after(EXIT_GRACE_S, 128 + signal.SIGTERM)
            return


@contextlib.contextmanager
def run_api(meanwhile: Callable[[], object] | None = None) -> Iterator[str]:
    """The Prefect API of one run (see the module's docstring), its URL in the environment
    before Prefect is imported; ``meanwhile`` runs while a server starts. A stage of a DVC
    run ends with that run, whichever server it reports to (``_end_with``)."""
    owner = dvc_owner()
    done = threading.Event()
    if owner:
        threading.Thread(target=_end_with, args=(owner, done), daemon=True, name="judgeaudit-end-with-dvc").start()
    try:
        if os.environ.get("PREFECT_API_URL"):
            with prefect_api(meanwhile=meanwhile) as url:
                yield url
            return
        url, shared = shared_server(owner) if owner else (f"http://127.0.0.1:{free_port()}/api", None)
        os.environ["PREFECT_API_URL"] = url  # before anything imports Prefect
        server = None if shared else launch(url)  # the server's start is the run's critical path
        try:
            with prefect_api(url, meanwhile=meanwhile, server=server, shared=shared) as got:
                yield got
        finally:
            if server is not None:
                stop(server)  # stopped already, unless something failed before prefect_api took it
            os.environ.pop("PREFECT_API_URL", None)
    finally:
        done.set()


@contextlib.contextmanager
def prefect_api(reserved: str | None = None, startup_timeout_s: float = 180.0,
                meanwhile: Callable[[], object] | None = None,
                server: subprocess.Popen | None = None, shared: int | None = None) -> Iterator[str]:
    """Yield the API URL; a temporary server started here (on ``reserved``, from
    ``reserve_api_url``, or a free port), or ``server`` (``launch``ed on ``reserved``
    already), is stopped on the way out and dies with this process if it is killed;
    ``shared``: the pid of a server on ``reserved`` that another process stops
    (``shared_server``). ``meanwhile`` (e.g. importing the stage's code) runs while the
    server starts: on two cores the two overlap."""
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
    if server is None and shared is None:  # the settings of this process (a profile...) go with it
        server = launch(url, get_current_settings().to_environment_variables(exclude_unset=True))
    try:
        if meanwhile is not None:
            meanwhile()
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if server is not None and server.poll() is not None:
                raise RuntimeError(f"the temporary Prefect server exited with code {server.returncode}")
            if shared is not None and not running(shared):
                raise RuntimeError(f"the Prefect server this DVC run's stages share (pid {shared}) exited; "
                                   f"its log is in {_records()}")
            if _healthy(url):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Prefect server did not answer on {url} within "
                                   f"{startup_timeout_s:.0f} s")
            time.sleep(0.1)
        which = "the Prefect server this DVC run's stages share" if shared else "temporary Prefect server"
        print(f"judgeaudit: {which} on {url} (set PREFECT_API_URL to use your own)", file=sys.stderr)
        # worker processes (Dask, process pools) report to it too; a reserved URL is in the
        # environment already, and whoever reserved it takes it out
        os.environ["PREFECT_API_URL"] = url
        try:
            # no flow-run heartbeats: they let a long-lived server mark a crashed run, and
            # this one dies with the run (or the DVC run); each flow's exit waited up to 1 s on
            # their thread
            with temporary_settings(updates={PREFECT_API_URL: url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
                try:
                    yield url
                finally:
                    _drain()
        finally:
            if reserved is None:
                os.environ.pop("PREFECT_API_URL", None)
    finally:
        if server is not None:
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


# how long a signalled run's cleanup may take before the run is ended regardless
EXIT_GRACE_S = 15.0


def exit_on_sigterm() -> None:
    """SIGTERM and SIGHUP end the run as an exception would, so every ``finally`` (the
    temporary server, temporary files) runs; the exit status is 128 + the signal. A cleanup
    that outlasts ``EXIT_GRACE_S`` is cut short: Prefect reports the crashed flow run to its
    server, and where that server stopped with the DVC run that owned it (a killed `dvc
    repro`), its client retried the connection for minutes while the stage went on. The
    run's writes are atomic, so what it leaves half-written is scratch, removed next run."""
    def handler(signum: int, _frame) -> None:
        threading.Thread(target=_exit_after, args=(EXIT_GRACE_S, 128 + signum), daemon=True,
                         name="judgeaudit-exit-grace").start()
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def _exit_after(seconds: float, status: int) -> None:
    time.sleep(seconds)
    print(f"judgeaudit: still cleaning up {seconds:.0f} s after the signal; exiting", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    if sys.argv[1] == "child":  # launch's temporary server: child PARENT_PID URL
        _serve_child(int(sys.argv[2]), sys.argv[3])
    else:  # the shared server (shared_server): OWNER_PID OWNER_START URL RECORD
        _serve_while((int(sys.argv[1]), int(sys.argv[2])), sys.argv[3], Path(sys.argv[4]))
