"""Shared fixtures: a tiny params file (tests/tiny.py: the whole DAG in about a minute on 2
cores), one Prefect test server for the session, a tiny real transformer."""

from __future__ import annotations

import atexit
import os
import random
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest

from judgeaudit.workers import running  # neither gone nor a zombie (Linux /proc)
from tests.tiny import ROOT, tiny_params, write_tiny_params  # noqa: F401  (tests import them from here)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
# Prefect's result storage outlives a session (~/.prefect/storage), and a task whose cache key is
# unchanged is served from it: each session (each xdist worker) gets an empty one, so that its
# flow runs compute what they compute on a fresh machine (CI), not replay an earlier session's.
# The processes it starts (xdist's workers, a pool's) inherit it.
if "PREFECT_LOCAL_STORAGE_PATH" not in os.environ:
    os.environ["PREFECT_LOCAL_STORAGE_PATH"] = tempfile.mkdtemp(prefix="judgeaudit-test-results-")
    atexit.register(shutil.rmtree, os.environ["PREFECT_LOCAL_STORAGE_PATH"], ignore_errors=True)


def free_port() -> int:
    """A loopback port nobody listens on (now): the serve and endpoint tests'."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parent(pid: int) -> int | None:
    """The parent of process ``pid`` (Linux /proc); None once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def gone(pid: int, within_s: float = 20) -> bool:
    """Whether process ``pid`` has ended, waiting up to ``within_s`` seconds for it."""
    deadline = time.monotonic() + within_s
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not running(pid)


@pytest.fixture(autouse=True)
def _float32_unless_a_run_says():
    """Each test starts in float32 (a library call outside a run scores so): a test's
    in-process run applies its params' precision to this process, as a stage does, and the
    next test on this worker must not inherit it."""
    from judgeaudit.precision import set_current

    set_current("float32")
    yield
    set_current("float32")


@pytest.fixture
def tiny_params_file(tmp_path: Path) -> Path:
    return write_tiny_params(tmp_path / "params.yaml")


@pytest.fixture(scope="session")
def prefect_server():
    """One temporary Prefect server for the session; subprocesses reach it by URL. Flows run
    here send no heartbeats (each flow's exit waited up to 1 s on their thread)."""
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    with (prefect_test_harness(server_startup_timeout=180),
          temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})):
        url = PREFECT_API_URL.value()
        old = os.environ.get("PREFECT_API_URL")
        os.environ["PREFECT_API_URL"] = url
        try:
            yield url
        finally:
            if old is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = old


# the tables every stage of the tiny DAG writes (students/index.parquet: paths relative to the root)
TINY_TABLES = ["prompts/prompts.parquet", "synthetic/answers.parquet", "responses/responses.parquet",
               "judgments/judgments.parquet", "metrics/win_rates.parquet", "metrics/pls.parquet",
               "boat/results.parquet", "pu/consistency.parquet", "pu/verdicts.parquet",
               "prefix/matrices.parquet", "robustness/ablation.parquet", "robustness/attack_flips.parquet",
               "robustness/controlled_win_rates.parquet", "score_range/scores.parquet",
               "score_range/correlations.parquet", "real_judges/judgments.parquet",
               "real_judges/judge_quality.parquet", "real_judges/judge_comparison.parquet",
               "real_judges/strategy_comparison.parquet", "real_judges/error_correlation.parquet",
               "real_judges/alt_test.parquet", "real_judges/selective.parquet", "real_judges/reliability.parquet",
               "leaderboard/win_rates.parquet",
               "leakage_studies/mixing.parquet", "leakage_studies/scale.parquet", "students/index.parquet"]


def shared_run_modules(rootpath: Path) -> set[str]:
    """The test modules that read ``tiny_audit`` (named in their text), as in test ids."""
    return {p.relative_to(rootpath).as_posix() for p in (rootpath / "tests").glob("test_*.py")
            if "tiny_audit" in p.read_text()}


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """README's test command runs two pytest-xdist workers. The modules that read
    ``tiny_audit`` make one unit of work, so that its minutes-long flow runs once, on one
    worker; every other test is a unit of its own. xdist hands out the units with the most
    tests first, so that worker starts on it at once. (xdist's own ``--dist loadgroup``
    marks groups in the test ids, which pytest 9 no longer lets a plugin change.)"""
    from xdist.scheduler import LoadScopeScheduling

    shared = shared_run_modules(config.rootpath)

    class SharedRunScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "tiny_audit" if nodeid.split("::", 1)[0] in shared else nodeid

    return SharedRunScheduling(config, log)


@pytest.fixture
def pooled_params_file(tmp_path: Path) -> Path:
    """The tiny config with the default pool of two worker processes per stage (the kill drills)."""
    return write_tiny_params(tmp_path / "params.yaml", processes=2)


@pytest.fixture(scope="session")
def tiny_audit(prefect_server, tmp_path_factory) -> tuple[Path, Path]:
    """(params file, data root) of ONE real Prefect run of the whole DAG (``full_audit``)
    on the tiny config with the default pool of two worker processes, shared by the slow
    tests (the end-to-end assertions, the `dvc repro` that must give the same tables, the
    task cache, the kill drill's uninterrupted run): each run costs minutes. Tests read
    it and never write into it."""
    from flows.stage_flow import full_audit

    base = tmp_path_factory.mktemp("tiny_audit")
    params = write_tiny_params(base / "params.yaml", processes=2)
    full_audit(params_path=str(params), root=str(base / "data"))
    return params, base / "data"


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory):
    """A real tiny Llama trained for a few steps on the template corpus, loaded through
    the transformers backend."""
    from judgeaudit.config import TrainArgs
    from judgeaudit.generation.corpus import make_items
    from judgeaudit.generation.styles import render
    from judgeaudit.models import ModelSpec, load_model
    from judgeaudit.models.scratch import build_llama, train_tokenizer
    from judgeaudit.training.trainers import sft

    root = tmp_path_factory.mktemp("tiny_lm")
    rng = random.Random(0)
    rows = [{"prompt": f"Q: {it.prompt}\nA:", "completion": " " + render(it, "formal", rng)}
            for it in make_items(64, 0)]
    tok = train_tokenizer((r["prompt"] + r["completion"] for r in rows), 300, root / "tok")
    model = build_llama(tok, layers=1, hidden=32, heads=2, intermediate=64, max_positions=128, seed=0)
    sft(model, root / "tok", rows, root / "lm", TrainArgs(epochs=1, lr=3e-3, batch_size=16), seed=0)
    return load_model(ModelSpec(path=str(root / "lm"), chat_template="Q: {prompt}\nA:", batch_size=4),
                      name="tiny")
