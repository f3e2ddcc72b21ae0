"""The background HTTP server: start, status and stop, through a pid file and a log file beside the
index in the cache folder (``mcp-INDEX.pid``, ``mcp-INDEX.log``).

Only the daemon this module started is ever signalled: the pid file records the process's start
time as the kernel gives it, so a pid reused by another program is a stale file, not a target.
Nothing starts a server implicitly; only ``tansaku mcp --http --daemon`` does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TansakuError
from ..paths import DEFAULT_INDEX, locations

START_TIMEOUT_S = 60.0  # loading the index is quick; a busy machine is not
STOP_TIMEOUT_S = 10.0


class DaemonRunning(TansakuError):
    code = "DAEMON_RUNNING"
    exit_code = 4


class DaemonNotRunning(TansakuError):
    code = "DAEMON_NOT_RUNNING"
    exit_code = 1


class DaemonFailed(TansakuError):
    code = "DAEMON_FAILED"
    exit_code = 4


@dataclass(frozen=True)
class DaemonFiles:
    pid: Path
    log: Path


@dataclass(frozen=True)
class DaemonInfo:
    """What `mcp status` reports; ``message`` is the sentence for people."""

    running: bool
    pid: int | None
    url: str | None
    pid_file: str
    log_file: str
    config: str | None
    index: str | None
    started: str | None
    message: str


def files(index_name: str | None) -> DaemonFiles:
    name = index_name or DEFAULT_INDEX
    folder = locations(index_name).index_file.parent
    return DaemonFiles(folder / f"mcp-{name}.pid", folder / f"mcp-{name}.log")


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("pid"), int) else None


def _ours(record: dict[str, Any]) -> bool:
    """The pid is alive and is the very process we started (not a later one given the same pid)."""
    pid = record["pid"]
    if not _alive(pid):
        return False
    ticks = _start_ticks(pid)
    if ticks is not None and ticks != record.get("start_ticks"):
        return False
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: the pid and its liveness are all there is to go on
    return b"tansaku" in words and b"mcp" in words


def running(index_name: str | None) -> dict[str, Any] | None:
    record = _read(files(index_name).pid)
    return record if record is not None and _ours(record) else None


def in_use_by(index_name: str | None) -> Any:
    """For a port-in-use error: which of our daemons holds the port, if one does."""

    def describe(port: int) -> str:
        folder = files(index_name).pid.parent
        for path in sorted(folder.glob("mcp-*.pid")):
            record = _read(path)
            if record is not None and record.get("port") == port and _ours(record):
                return f" (the tansaku daemon, pid {record['pid']}, holds it: `tansaku mcp stop`)"
        return ""

    return describe


def status(index_name: str | None) -> DaemonInfo:
    paths = files(index_name)
    record = _read(paths.pid)
    base = {"pid_file": str(paths.pid), "log_file": str(paths.log)}
    if record is None:
        return DaemonInfo(
            False, None, None, config=None, index=None, started=None, message="no daemon is running", **base
        )
    if not _ours(record):
        return DaemonInfo(
            False,
            record["pid"],
            None,
            config=None,
            index=None,
            started=None,
            message=f"not running: the pid file names pid {record['pid']}, which is not our server"
            " (a stale file; `tansaku mcp stop` removes it)",
            **base,
        )
    return DaemonInfo(
        True,
        record["pid"],
        record.get("url"),
        config=record.get("config"),
        index=record.get("index"),
        started=record.get("started"),
        message=f"running: {record.get('url')}/mcp, pid {record['pid']}, since {record.get('started')}",
        **base,
    )


def _health(url: str, token: str | None) -> dict[str, Any] | None:
    request = urllib.request.Request(f"{url}/health")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]
    except (OSError, ValueError, urllib.error.URLError):
        return None


def start(index_name: str | None, argv: list[str], url: str, token: str | None) -> DaemonInfo:
    """Run ``tansaku ARGV`` (the foreground server's command) in the background and wait until
    /health answers from that very process."""
    paths = files(index_name)
    current = running(index_name)
    if current is not None:
        raise DaemonRunning(
            f"a daemon is already running for this index: {current.get('url')}, pid {current['pid']}",
            hint="`tansaku mcp status`, or `tansaku mcp stop` first",
        )
    paths.pid.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "tansaku", *argv]
    with open(paths.log, "ab") as log:
        log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(command)}\n".encode())
        log.flush()
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C in the starting shell must not reach it
            close_fds=True,
        )
    loc = locations(index_name)
    record = {
        "pid": process.pid,
        "start_ticks": _start_ticks(process.pid),
        "url": url,
        "port": int(url.rsplit(":", 1)[1]),
        "config": str(loc.config_file),
        "index": str(loc.index_file),
        "log": str(paths.log),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    temporary = paths.pid.with_suffix(".pid.tmp")
    temporary.write_text(json.dumps(record), encoding="utf-8")
    temporary.replace(paths.pid)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            paths.pid.unlink(missing_ok=True)
            raise DaemonFailed(
                f"the server exited at start (code {process.returncode}): {_tail(paths.log)}",
                hint=f"the log: {paths.log}",
            )
        health = _health(url, token)
        if health is not None and health.get("pid") == process.pid:
            return status(index_name)
        time.sleep(0.1)
    _terminate(process.pid)
    paths.pid.unlink(missing_ok=True)
    raise DaemonFailed(
        f"the server did not answer {url}/health within {START_TIMEOUT_S:g} s", hint=f"the log: {paths.log}"
    )


def _tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def _terminate(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it when we are its parent (tests)
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def stop(index_name: str | None) -> DaemonInfo:
    paths = files(index_name)
    record = _read(paths.pid)
    if record is None:
        raise DaemonNotRunning(
            "no daemon is running for this index", hint="start one with `tansaku mcp --http --daemon`"
        )
    if not _ours(record):
        paths.pid.unlink(missing_ok=True)
        return DaemonInfo(
            False,
            record["pid"],
            None,
            str(paths.pid),
            str(paths.log),
            None,
            None,
            None,
            f"removed a stale pid file: pid {record['pid']} is not our server any more",
        )
    _terminate(record["pid"])
    paths.pid.unlink(missing_ok=True)
    return DaemonInfo(
        False,
        record["pid"],
        record.get("url"),
        str(paths.pid),
        str(paths.log),
        record.get("config"),
        record.get("index"),
        record.get("started"),
        f"stopped the daemon (pid {record['pid']}, {record.get('url')})",
    )
