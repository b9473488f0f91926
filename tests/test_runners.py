"""A stage's heavy tasks run on one torch thread wherever they run (a worker process or the
stage's own process), so ``scale.processes``, which DVC does not track, changes no bit of
a table; the stage process gets its own thread count back afterwards."""

from __future__ import annotations

import pytest
import torch
from prefect import flow, task

from flows.runners import parallel
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


def test_the_in_process_runner_duplicates():
    """Prefect copies a runner it is handed as a flow's task runner."""
    runner = parallel(Scale(processes=1))
    assert type(runner.duplicate()) is type(runner)
