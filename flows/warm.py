"""A warm stage process for the stages of one DVC run. Each stage of `dvc repro` is a new
``python -m flows.run STAGE`` that imports Great Expectations, Prefect, torch,
transformers and its own code (about 10 s of a core) and starts a fork server whose
workers import them again (13 s of the other core) before any work: 12 to 16 s between
one stage's flow and the next in the default run.

The first stage of a DVC run, once done, starts one process (``python -m flows.warm``)
that imports every stage's code once, builds Great Expectations' context, starts the
workers' fork server the pooled stages then share, and waits. Each later stage's process
hands it its arguments, working directory, environment and standard streams
(``socket.send_fds``), forwards it the signals it gets and waits: the warm process forks
a child that runs the stage as that process would have (``flows.run.main``), and reports
the child's exit status, which the waiting process exits with. The warm process runs no
thread, so a fork copies no lock mid-use (a fork of a stage process, with Prefect's
threads, could).

It declines, and the stage runs in its own process as before, where anything could
differ: the environment (but ``DVC_STAGE``), the working directory, the interpreter or
its flags, or a file of the project's packages edited since it started (it then exits,
and the next stage that runs on its own starts a new one). It ends with the DVC run,
once its children have. ``JUDGEAUDIT_WARM=0`` turns it off. Linux only, as the shared
Prefect server (flows/server.py) is."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from flows.server import EXIT_GRACE_S, _alive, _records, _stat, drop_record, dvc_owner, locked, running_record
from judgeaudit.workers import die_with_parent, running

PER_STAGE = "DVC_STAGE"  # what DVC sets per stage: the one difference a stage may have
PACKAGES = ("judgeaudit", "flows", "tasks")  # watched for edits
_entry_env: dict[str, str] | None = None  # the environment `flows.run` was entered with
_forked = False  # this process is a stage forked from the warm process


def forked() -> bool:
    """Whether this process is a stage the warm process forked."""
    return _forked


def enabled() -> bool:
    return sys.platform.startswith("linux") and os.environ.get("JUDGEAUDIT_WARM", "1") != "0"


def _record(owner: tuple[int, int]) -> Path:
    return _records("warm") / f"{owner[0]}-{owner[1]}.json"


def _interpreter() -> list:
    return [sys.executable, list(sys.flags)]


# -- the process DVC starts for a stage ---------------------------------------------------
def hand_over(argv: list[str]) -> int | None:
    """Have this DVC run's warm process run ``python -m flows.run`` with ``argv``, and the
    stage's exit status; None where it cannot (not under DVC, none ready, or it declined):
    the caller runs the stage itself."""
    global _entry_env
    _entry_env = dict(os.environ)
    if _forked or not enabled() or not (owner := dvc_owner()):
        return None
    try:
        known = json.loads(_record(owner).read_text())
        if not (known["socket"] and _alive((known["pid"], known["start"]))):
            return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(known["socket"])
    except (OSError, ValueError, KeyError):
        return None
    with conn, conn.makefile("rb") as replies:
        header = {"argv": [sys.argv[0], *argv], "cwd": os.getcwd(), "env": _entry_env, "pid": os.getpid(),
                  "interpreter": _interpreter()}
        socket.send_fds(conn, [json.dumps(header).encode() + b"\n"], [0, 1, 2])
        first = replies.readline().decode().rstrip("\n").split(" ", 1)
        if first[0] != "pid":
            if first[0] == "declined":
                print(f"judgeaudit: the warm stage process declined: {first[1]}; running here", file=sys.stderr)
            return None
        child = int(first[1])

        def forward(signum: int, _frame) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signum)
        forwarded = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            last = replies.readline().decode().split()
        finally:
            for sig, handler in forwarded.items():
                signal.signal(sig, handler)
    if len(last) != 2 or last[0] != "exit":
        print(f"judgeaudit: the warm stage process ended before stage process {child} did", file=sys.stderr)
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGTERM)
        return 1
    status = int(last[1])
    if status < 0:  # the stage was ended by a signal: so is this process, as it would have been
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        return 128 - status
    return status


def launch(url: str) -> None:
    """After a stage of a DVC run that reported to Prefect on ``url``, run in its own
    process: start the DVC run's warm process, unless one runs."""
    if _forked or _entry_env is None or not enabled() or not (owner := dvc_owner()):
        return
    record = _record(owner)
    with locked(record.parent):
        if running_record(record):
            return
        # Prefect reads its settings when imported: the URL the stages set before they import it
        added = [] if "PREFECT_API_URL" in _entry_env else ["PREFECT_API_URL"]
        with open(record.with_suffix(".log"), "ab") as log:
            server = subprocess.Popen(
                [sys.executable, *subprocess._args_from_interpreter_flags(), "-m", "flows.warm",
                 str(owner[0]), str(owner[1]), json.dumps(added)],
                env={**_entry_env, "PREFECT_API_URL": url}, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True)  # outlives this stage; the DVC run's end stops it
        record.write_text(json.dumps({"pid": server.pid, "start": _stat(server.pid)[2], "socket": None}))


# -- the warm process ---------------------------------------------------------------------
def _preload() -> None:
    """Import every stage's code, build Great Expectations' context and suites and start the
    workers' fork server, with every pooled stage's code imported."""
    from flows.registry import STAGES
    from flows.runners import WORKER_PRELOAD
    from judgeaudit.schemas.validate import warm_up
    from judgeaudit.workers import fork_server

    importlib.import_module("flows.run")
    for stage in STAGES:
        importlib.import_module(stage.module)
    warm_up(suites=True)
    fork_server((*WORKER_PRELOAD, *(s.module for s in STAGES if s.pool)))


def _sources() -> dict[str, tuple[int, int]]:
    """(mtime, size) of each file of the project's packages."""
    return {str(path): (stat.st_mtime_ns, stat.st_size)
            for package in PACKAGES for path in Path(package).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and (stat := path.stat())}


def serve(owner: tuple[int, int], added: set[str]) -> None:
    """Fork a stage per request until the DVC run ``owner`` is gone, or a source edited."""
    base = {k: v for k, v in os.environ.items() if k not in added}  # what the stages must have
    sources = _sources()
    _preload()
    record = _record(owner)
    address = record.with_suffix(".sock")
    if threading.active_count() > 1:  # a fork would copy their locks
        print(f"judgeaudit: threads run after the imports ({threading.enumerate()}): not serving", file=sys.stderr)
        return
    address.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(address))
    listener.listen()
    listener.settimeout(0.1)
    with locked(record.parent), contextlib.suppress(OSError, ValueError, KeyError):
        if json.loads(record.read_text())["pid"] == os.getpid():  # else another was launched: stay unknown
            record.write_text(json.dumps({"pid": os.getpid(), "start": _stat(os.getpid())[2],
                                          "socket": str(address)}))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))  # the cleanup below runs
    children: dict[int, socket.socket] = {}
    ending = None  # since when it accepts no more stages
    failed = False
    try:
        while ending is None or (children and time.monotonic() - ending < EXIT_GRACE_S + 10):
            for pid in list(children):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    with contextlib.suppress(OSError):
                        children[pid].sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
                    children.pop(pid).close()
            if ending is None and not _alive(owner):
                ending = time.monotonic()
            if ending is not None:
                time.sleep(0.1)
                continue
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(10)  # a caller that connects and sends nothing holds up no other
            header, fds = _receive(conn)
            conn.settimeout(None)
            reason = _declined(header, fds, base)
            if reason is None and (edited := next((p for p, seen in sources.items() if _stat_of(p) != seen), None)):
                reason, ending = f"{edited} was edited after it started", time.monotonic()
                listener.close()
            if reason is not None:
                for fd in fds:
                    os.close(fd)
                with contextlib.suppress(OSError):
                    conn.sendall(f"declined {reason}\n".encode())
                conn.close()
                continue
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                for other in children.values():
                    other.close()
                _run_stage(conn, header, fds, added)  # never returns
            for fd in fds:
                os.close(fd)
            children[pid] = conn
    except Exception:
        failed = True
        raise
    finally:
        drop_record(record, keep_log=failed)  # a warm process that failed keeps its log


def _stat_of(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """A stage's request: its header and its standard streams' descriptors."""
    data, fds = b"", []
    try:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        while data and not data.endswith(b"\n"):
            if not (more := conn.recv(1 << 20)):
                break
            data += more
        return json.loads(data), fds
    except (OSError, ValueError):
        return {}, fds


def _declined(header: dict, fds: list[int], base: dict[str, str]) -> str | None:
    """Why this process cannot run the stage as its own process would, or None."""
    if not header or len(fds) != 3:
        return "a malformed request"
    theirs = {k: v for k, v in header["env"].items() if k != PER_STAGE}
    own = {k: v for k, v in base.items() if k != PER_STAGE}
    if theirs != own:
        return f"another environment ({min(k for k in set(theirs) | set(own) if theirs.get(k) != own.get(k))})"
    if header["cwd"] != os.getcwd():
        return "another working directory"
    if header["interpreter"] != _interpreter():
        return "another interpreter or flags"
    return None


def _run_stage(conn: socket.socket, header: dict, fds: list[int], added: set[str]) -> None:
    """In the forked child: become the stage process that asked, run the stage, exit."""
    global _forked
    _forked = True
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdout.reconfigure(line_buffering=sys.stdout.isatty())  # as the interpreter sets it up
    for key in added:
        os.environ.pop(key, None)
    os.environ.pop(PER_STAGE, None)
    if PER_STAGE in header["env"]:
        os.environ[PER_STAGE] = header["env"][PER_STAGE]
    sys.argv = header["argv"]
    import flows.server

    flows.server.entry_pid = header["pid"]  # the DVC run is that process's ancestor, not this one's
    die_with_parent()  # a killed warm process could report no status: its children end with it
    _adopt_fork_server()
    threading.Thread(target=_end_with_entry, args=(header["pid"],), daemon=True,
                     name="judgeaudit-end-with-entry").start()
    conn.sendall(f"pid {os.getpid()}\n".encode())
    conn.close()  # the warm process reports the exit status
    status, signum = 1, None
    try:
        from flows.run import main

        status = main(sys.argv[1:])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:
        import traceback

        traceback.print_exc()
        signum = signal.SIGINT
    except BaseException:  # noqa: BLE001 -- reported as the interpreter would
        sys.excepthook(*sys.exc_info())
    _exit(status, signum)


def _exit(status: int, signum: int | None) -> None:
    """The interpreter's own shutdown (threads joined, atexit), then exit: forked, this
    process must not return into the warm process's loop."""
    import atexit

    with contextlib.suppress(Exception):
        threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if signum is not None:  # an interrupted interpreter ends by the signal
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(status)


def _end_with_entry(entry: int) -> None:
    """SIGTERM to this stage once the process DVC started for it is gone: killed, it
    forwarded no signal, and its end would have ended the stage."""
    while running(entry):
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)


def _adopt_fork_server() -> None:
    """The workers' fork server the warm process started serves its children too. Python
    checks that it runs by waiting on it as a child of its own; it is the warm process's
    child, so a child of that checks /proc instead."""
    from multiprocessing import forkserver, resource_tracker

    server = forkserver._forkserver
    pid = server._forkserver_pid
    if pid is None:
        return

    class Adopted(type(server)):
        def ensure_running(self) -> None:
            with self._lock:
                if self._forkserver_pid == pid:
                    if running(pid):
                        resource_tracker.ensure_running()
                        return
                    os.close(self._forkserver_alive_fd)  # gone: start one of this process's own
                    self._forkserver_address = self._forkserver_alive_fd = self._forkserver_pid = None
            super().ensure_running()

    server.__class__ = Adopted
    forkserver.ensure_running = server.ensure_running  # the module's name binds the old method


if __name__ == "__main__":  # launch(): OWNER_PID OWNER_START ADDED (the variables launch set, JSON)
    # flows.warm's serve, not __main__'s copy: the children's flows.run imports flows.warm
    from flows.warm import serve as serve_here

    serve_here((int(sys.argv[1]), int(sys.argv[2])), set(json.loads(sys.argv[3])))
