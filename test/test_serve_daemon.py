"""`tansaku mcp --http --daemon`, `mcp status`, `mcp stop`: the real background process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .serve_support import free_port, request, tansaku

pytestmark = pytest.mark.subprocess


def _files(index_path: Path) -> tuple[Path, Path]:
    return index_path.parent / "mcp-index.pid", index_path.parent / "mcp-index.log"


@pytest.fixture
def port(indexed: Path, index_path: Path) -> Iterator[int]:
    chosen = free_port()
    yield chosen
    # Whatever a test left running is stopped, by the pid it recorded, and only that one.
    pid_file, _ = _files(index_path)
    if pid_file.exists():
        pid = json.loads(pid_file.read_text())["pid"]
        tansaku("mcp", "stop", timeout=30)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        os.kill(pid, 9)


def test_daemon_start_status_second_start_stop(port: int, index_path: Path):
    pid_file, log_file = _files(index_path)
    started = tansaku("mcp", "--http", "--daemon", "--port", str(port), "--json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    assert info["running"] and info["url"] == f"http://127.0.0.1:{port}"
    assert info["pid_file"] == str(pid_file) and info["log_file"] == str(log_file)
    assert "tansaku mcp stop" in info["message"] and str(log_file) in info["message"]
    assert pid_file.exists() and log_file.exists()
    health = request(f"http://127.0.0.1:{port}/health", timeout=10).json()
    assert health["pid"] == info["pid"] and health["mode"] == "daemon"
    assert request(f"http://127.0.0.1:{port}/search", method="POST", data={"query": "restore"}).status == 200

    status = tansaku("mcp", "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == info["pid"]

    again = tansaku("mcp", "--http", "--daemon", "--port", str(free_port()), "--json")
    assert again.returncode == 4 and json.loads(again.stderr)["error"]["code"] == "DAEMON_RUNNING"

    busy = tansaku("mcp", "--http", "--port", str(port), "--json")
    error = json.loads(busy.stderr)["error"]
    assert error["code"] == "PORT_IN_USE" and f"pid {info['pid']}" in error["message"]

    stopped = tansaku("mcp", "stop", "--json")
    assert stopped.returncode == 0 and "stopped" in json.loads(stopped.stdout)["message"]
    assert not pid_file.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(info["pid"], 0)
    after = tansaku("mcp", "status", "--json")
    assert after.returncode == 1 and not json.loads(after.stdout)["running"]
    nothing = tansaku("mcp", "stop", "--json")
    assert nothing.returncode == 1 and json.loads(nothing.stderr)["error"]["code"] == "DAEMON_NOT_RUNNING"


def test_a_stale_pid_file_is_reported_and_removed_never_signalled(port: int, index_path: Path):
    pid_file, _ = _files(index_path)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    # A live process that is not our server (this test's own child), and then a dead pid.
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pid_file.write_text(
            json.dumps({"pid": bystander.pid, "start_ticks": "1", "url": "http://127.0.0.1:1"})
        )
        status = tansaku("mcp", "status", "--json")
        assert status.returncode == 1 and "stale" in json.loads(status.stdout)["message"]
        stopped = tansaku("mcp", "stop", "--json")
        assert stopped.returncode == 0 and "stale" in json.loads(stopped.stdout)["message"]
        assert not pid_file.exists()
        assert bystander.poll() is None  # still alive: never signalled
    finally:
        bystander.kill()
        bystander.wait(timeout=10)
    pid_file.write_text(json.dumps({"pid": bystander.pid, "url": "http://127.0.0.1:1"}))
    # A stale file does not block a start.
    started = tansaku("mcp", "--http", "--daemon", "--port", str(port), "--json")
    assert started.returncode == 0, started.stderr
    assert json.loads(pid_file.read_text())["pid"] == json.loads(started.stdout)["pid"]


def test_a_daemon_that_cannot_start_says_why(indexed: Path, index_path: Path):
    import socket

    pid_file, log_file = _files(index_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        result = tansaku("mcp", "--http", "--daemon", "--port", str(busy.getsockname()[1]), "--json")
    assert result.returncode == 4
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "DAEMON_FAILED" and "in use" in error["message"]  # the log's last lines
    assert "in use" in log_file.read_text()
    assert not pid_file.exists()
