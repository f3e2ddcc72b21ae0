"""`tansaku mcp --http --daemon`, `mcp status`, `mcp stop`: the real background process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from .serve_support import free_port, request, tansaku

pytestmark = [pytest.mark.subprocess, pytest.mark.both_backends]


def _files(index_path: Path) -> tuple[Path, Path]:
    return index_path.parent / "mcp-index.pid", index_path.parent / "mcp-index.log"


@pytest.fixture
def port(indexed: Path, index_path: Path) -> Iterator[int]:
    chosen = free_port()
    yield chosen
    # Whatever a test left running on its port is stopped, and killed if stopping did not do it.
    if _files(index_path)[0].exists():
        tansaku("mcp", "stop", timeout=30)
    for leftover in _daemon_pids([chosen]):
        os.kill(leftover, signal.SIGKILL)


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


def test_a_daemon_that_cannot_start_says_why_and_gives_up_its_claim(port: int, index_path: Path):
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
    # The failed start holds nothing: the next one starts.
    started = tansaku("mcp", "--http", "--daemon", "--port", str(port), "--json")
    assert started.returncode == 0, started.stderr


ROUNDS = 4
STARTERS = 3
# The command line `tansaku mcp --http --daemon` runs, started with its imports done and then held
# until every starter is ready: started plainly, the processes' start-up times spread them out, and
# the old code made two daemons in only 3 of 8 rounds; released together it did in 6 of 6.
GATED = (
    "import sys; from tansaku.cli.main import main; import tansaku.serve.daemon, tansaku.serve.http;"
    " print('ready', file=sys.stderr, flush=True); sys.stdin.read(1); sys.exit(main(sys.argv[1:]))"
)


def _start_together(ports: list[int]) -> list[subprocess.Popen]:
    starters = []
    for port in ports:
        starters.append(
            subprocess.Popen(
                [sys.executable, "-c", GATED, "mcp", "--http", "--daemon", "--json", "--port", str(port)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.PIPE,
                text=True,
            )
        )
    try:
        for starter in starters:
            assert starter.stderr is not None and starter.stderr.readline() == "ready\n"
        for starter in starters:
            assert starter.stdin is not None
            starter.stdin.write("go")
            starter.stdin.flush()  # communicate() closes it
    except BaseException:
        for starter in starters:
            starter.kill()
            starter.communicate(timeout=30)
        raise
    return starters


def _daemon_pids(ports: Iterable[int]) -> list[int]:
    """Live daemon processes serving one of PORTS, found by their command lines in /proc."""
    wanted = {str(port).encode() for port in ports}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--as-daemon" in words and b"--port" in words and words[words.index(b"--port") + 1] in wanted:
            found.append(int(entry.name))
    return sorted(found)


def _answering(port: int) -> int | None:
    """The pid that answers /health on PORT, or None when nothing listens there."""
    try:
        return request(f"http://127.0.0.1:{port}/health", timeout=5).json()["pid"]
    except OSError:
        return None


def _gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_simultaneous_starts_make_one_daemon_and_the_others_name_it(indexed: Path, index_path: Path):
    pid_file, _ = _files(index_path)
    used: set[int] = set()
    starters: list[subprocess.Popen] = []
    try:
        for round_number in range(ROUNDS):
            ports = [free_port() for _ in range(STARTERS)]
            used.update(ports)
            starters = _start_together(ports)
            outputs = [starter.communicate(timeout=120) for starter in starters]
            codes = [starter.returncode for starter in starters]
            assert sorted(codes) == [0] + [4] * (STARTERS - 1), f"round {round_number}: exits {codes}"
            winner = codes.index(0)
            pid = json.loads(outputs[winner][0])["pid"]
            expected_answers = [pid if i == winner else None for i in range(STARTERS)]
            assert [_answering(port) for port in ports] == expected_answers
            assert _daemon_pids(ports) == [pid]
            for (_, stderr), code in zip(outputs, codes, strict=True):
                if code == 4:
                    error = json.loads(stderr)["error"]
                    assert error["code"] == "DAEMON_RUNNING" and f"pid {pid}" in error["message"]
                    assert error["details"]["pid"] == pid
            assert json.loads(pid_file.read_text())["pid"] == pid

            if round_number % 2:
                # A daemon killed outright leaves a stale pid file and no claim: the next round starts.
                os.kill(pid, signal.SIGKILL)
                assert _gone(pid)
                expected = "stale"
            else:
                expected = "stopped"
            stopped = tansaku("mcp", "stop", "--json")
            assert stopped.returncode == 0 and expected in json.loads(stopped.stdout)["message"]
            assert _daemon_pids(used) == [] and not pid_file.exists()
    finally:
        for starter in starters:
            if starter.poll() is None:
                starter.kill()
                starter.communicate(timeout=30)
        for leftover in _daemon_pids(used):
            os.kill(leftover, signal.SIGKILL)


def _cli(*args: str) -> subprocess.CompletedProcess:
    # Its own session: the old code took pid 0 from a pid file as a pid, and signalling pid 0 signals
    # the sender's whole process group.
    return subprocess.run(
        [sys.executable, "-m", "tansaku", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=90,
        start_new_session=True,
    )


GARBAGE = {
    "empty": b"",
    "not-json": b"mcp daemon pid 1234\n",
    "truncated": b'{"pid": 12',
    "binary": b"\x00\xff\xfe\x80\x81garbage",
    "a-list": b"[1234]",
    "pid-as-text": b'{"pid": "1234"}',
    "pid-zero": b'{"pid": 0}',
}


@pytest.mark.parametrize("content", GARBAGE.values(), ids=GARBAGE.keys())
def test_a_garbage_pid_file_is_reported_by_status_and_removed_by_stop(content: bytes, index_path: Path):
    pid_file, _ = _files(index_path)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_bytes(content)
    status = _cli("mcp", "status", "--json")
    assert status.returncode == 1 and "Traceback" not in status.stderr, status.stderr
    info = json.loads(status.stdout)
    assert not info["running"] and info["pid"] is None
    assert "not a pid record" in info["message"] and "mcp stop" in info["message"]

    stopped = _cli("mcp", "stop", "--json")
    assert stopped.returncode == 0 and "Traceback" not in stopped.stderr, stopped.stderr
    assert f"removed the pid file {pid_file}" in json.loads(stopped.stdout)["message"]
    assert not pid_file.exists()
    again = _cli("mcp", "stop")
    assert again.returncode == 1 and "no daemon is running" in again.stderr


def test_a_pid_file_naming_every_process_is_not_a_pid_record(index_path: Path):
    pid_file, _ = _files(index_path)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    # kill(-1, ...) would signal every process this user may signal: only `status` is run on it here
    # (it sends signal 0), never `stop` against code that might take it as a pid.
    pid_file.write_text(json.dumps({"pid": -1, "url": "http://127.0.0.1:1"}))
    status = _cli("mcp", "status", "--json")
    assert status.returncode == 1 and "not a pid record" in json.loads(status.stdout)["message"]


def test_a_pid_file_garbled_while_the_daemon_runs_still_finds_the_daemon(port: int, index_path: Path):
    pid_file, _ = _files(index_path)
    started = tansaku("mcp", "--http", "--daemon", "--port", str(port), "--json")
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    pid_file.write_bytes(b"\x00garbage")
    status = tansaku("mcp", "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == pid
    again = tansaku("mcp", "--http", "--daemon", "--port", str(free_port()), "--json")
    assert again.returncode == 4 and json.loads(again.stderr)["error"]["details"]["pid"] == pid
    stopped = tansaku("mcp", "stop", "--json")
    assert stopped.returncode == 0 and f"pid {pid}" in json.loads(stopped.stdout)["message"]
    assert _gone(pid) and not pid_file.exists()
