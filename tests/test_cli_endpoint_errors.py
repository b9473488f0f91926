"""Drills for the CLI against an endpoint that fails hard (a real HTTP server on loopback):
401, 429 after the client's retries, a hang past the timeout. The real ``judgeaudit``
process prints one line naming the model, the URL and the reason, and exits non-zero,
never a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, tiny_params
from tests.fake_endpoint import FakeEndpoint

DATA = ROOT / "tests" / "data"
PROGRESS = re.compile(r"^verdict \[remote\]: +\d+%\|.*\]$")  # tqdm's bar: desc, percent, counts


class FailingEndpoint(FakeEndpoint):
    """Every POST gets ``mode``: "401", "429" (Retry-After: 0) or "hang" (no answer until
    the server is shut down). Counts the requests."""

    def __init__(self, mode: str) -> None:
        self.mode, self.requests, self.stop = mode, 0, threading.Event()
        super().__init__()

    def reply(self, path: str, body: dict) -> tuple[int | None, bytes, dict]:
        self.requests += 1
        if self.mode == "hang":
            self.stop.wait(30)
            return None, b"", {}
        return int(self.mode), b'{"error": {"message": "no", "type": "invalid_request_error"}}', {"Retry-After": "0"}

    def close(self) -> None:
        self.stop.set()
        super().close()


@pytest.mark.parametrize("mode,reason", [
    ("401", "failed with HTTP 401"),
    ("429", "failed with HTTP 429"),
    ("hang", "APITimeoutError"),
])
def test_a_hard_endpoint_failure_is_one_line_and_a_non_zero_exit(tmp_path: Path, mode: str, reason: str):
    endpoint = FailingEndpoint(mode)
    try:
        params = tiny_params()
        params["models"]["remote"] = {"spec": {"backend": "openai", "path": "m", "base_url": endpoint.url,
                                               "chat_template": "{prompt}", "max_retries": 1, "timeout_s": 1}}
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(params, sort_keys=False))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "not-a-key"}
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", "judge-benchmark", "--judge", "remote", "--mode", "prompted",
             "--params", str(path), "--root", str(tmp_path / "data"), "--source", "llmbar",
             "--path", str(DATA / "llmbar"), "--out", str(tmp_path / "out"), "--no-pu", "--limit", "2"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        endpoint.close()
    # besides the progress bar (redrawn in place on a terminal, each draw a line here)
    lines = [line for line in done.stderr.splitlines() if line.strip() and not PROGRESS.match(line)]
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("judgeaudit: error: model 'remote' at " + endpoint.url)
    assert reason in lines[0]
    assert endpoint.requests >= (1 if mode == "401" else 2)  # 429 and a timeout are retried once first
