"""`judgeaudit serve`'s engine process (the CLI's default) never outlives its server,
however the server ends. (Its batching, and a client that hangs up:
tests/test_serve_drills.py.)"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import free_port

_SERVER = """
import sys, uvicorn
from judgeaudit.models import ModelSpec, load_model
from judgeaudit.serving.app import make_app
if __name__ == "__main__":
    app = make_app({"tiny": load_model(ModelSpec(path=sys.argv[1]), name="tiny")}, engine="process",
                   engine_threads=1)
    print(app.state.batcher.process.pid, flush=True)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="error")
"""


def _ended(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"  # a zombie has ended
    except FileNotFoundError:
        return True


def test_the_engine_ends_with_its_server_even_on_sigkill(tiny_lm, tmp_path):
    script = tmp_path / "server.py"
    script.write_text(_SERVER)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        port = free_port()
        server = subprocess.Popen([sys.executable, str(script), tiny_lm.spec.path, str(port)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            engine = int(server.stdout.readline())
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    if httpx.post(f"http://127.0.0.1:{port}/v1/completions",
                                  json={"model": "tiny", "prompt": "Q: Hi\nA:", "max_tokens": 2}).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            assert not _ended(engine)
            server.send_signal(sig)
            server.wait(timeout=30)
            deadline = time.time() + 15
            while not _ended(engine) and time.time() < deadline:
                time.sleep(0.1)
            assert _ended(engine), f"the engine outlived its server ({sig.name})"
        finally:
            server.kill()
            server.wait()
