"""A stage's heavy tasks run on one torch thread wherever they run (a worker process or the
stage's own process), so ``scale.processes``, which DVC does not track, changes no bit of
a table; the stage process gets its own thread count back afterwards. Each stage shows
one progress bar, of its tasks."""

from __future__ import annotations

import os
import sys
import time

import pytest
import torch
from prefect import flow, task
from prefect.task_runners import ThreadPoolTaskRunner

from flows.runners import parallel, results, tracked
from judgeaudit.config import Scale


@task
def _threads() -> int:
    return torch.get_num_threads()


@flow
def _threads_seen(processes: int) -> list[int]:
    with parallel(Scale(processes=processes)) as runner:
        return [f.result() for f in [runner.submit(_threads, {}) for _ in range(2)]]


@pytest.mark.parametrize("processes", [1, 2])
def test_tasks_run_on_one_torch_thread(prefect_server, processes):
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # what a two-core stage process starts with
    try:
        assert _threads_seen(processes) == [1, 1]
        assert torch.get_num_threads() == 2  # the stage's own computations keep theirs
    finally:
        torch.set_num_threads(before)


@task
def _parent() -> int:
    return os.getppid()


@flow
def _parents_seen() -> list[int]:
    with parallel(Scale(processes=2)) as runner:
        return [f.result() for f in [runner.submit(_parent, {}) for _ in range(2)]]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is used on Linux only")
def test_a_pools_workers_are_forked_by_the_fork_server(prefect_server):
    """Not spawned, each importing torch, transformers and Prefect anew: forked from the
    server that imported them once (judgeaudit.workers.fork_server)."""
    from multiprocessing import forkserver

    parents = _parents_seen()
    assert set(parents) == {forkserver._forkserver._forkserver_pid} and os.getpid() not in parents


@task
def _work() -> int:
    time.sleep(0.6)  # a bar shows from its first second on (short stages show none)
    return 1


@flow(name="bar-stage", task_runner=ThreadPoolTaskRunner(max_workers=1))  # the judge stage's, in-process
def _three_ways() -> int:
    with parallel(Scale(processes=1)) as runner:
        pooled = [runner.submit(_work, {}) for _ in range(3)]
        [f.result() for f in pooled]
    in_turn = [_work() for _ in tracked([1, 2])]
    return len(results([_work.submit() for _ in range(4)])) + len(in_turn)


def test_each_stage_shows_one_bar_of_its_tasks(prefect_server, capfd):
    assert _three_ways() == 6
    err = capfd.readouterr().err
    for done in ("3/3", "2/2", "4/4"):  # the runner's, tracked's and results' bars, each at its end
        assert "bar-stage: 100%|" in err and f"| {done} [" in err, (done, err[-3000:])


def test_the_in_process_runner_duplicates():
    """Prefect copies a runner it is handed as a flow's task runner."""
    runner = parallel(Scale(processes=1))
    assert type(runner.duplicate()) is type(runner)
