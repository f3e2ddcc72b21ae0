"""The background HTTP server: start, status and stop, through a pid file and a log file beside the
index in the cache folder (``mcp-INDEX.pid``, ``mcp-INDEX.log``), and a claim (``mcp-INDEX.lock``).

One daemon per index: a start takes the claim (an ``flock`` lock, see claim.py) before it starts
anything and hands it to the daemon, which holds it for its whole life. A start that finds it taken
names the daemon and exits; the claim dies with the daemon, so a ``kill -9`` leaves no stale claim.
The pid file is written and removed only by whoever holds the claim.

Only the daemon this module started is ever signalled: the pid file records the process's start
time as the kernel gives it, so a pid reused by another program is a stale file, not a target.
Nothing starts a server implicitly; only ``tansaku mcp --http --daemon`` and ``tansaku ui`` do.
"""

from __future__ import annotations

import contextlib
import hashlib
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
from . import claim

START_TIMEOUT_S = 60.0  # loading the index is quick; a busy machine is not
STOP_TIMEOUT_S = 10.0
# How long a start that lost the claim waits for the winner's pid file, to name the winner; the
# winner writes it as soon as its child exists, so only a stalled machine needs more than a moment.
NAME_WAIT_S = 10.0


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
    lock: Path


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


@dataclass(frozen=True)
class PidFile:
    """What a pid file holds: a record, nothing (no file), or something else (``problem`` says what)."""

    record: dict[str, Any] | None = None
    problem: str | None = None


def files(index_name: str | None) -> DaemonFiles:
    name = _files_name(index_name)
    folder = locations(index_name).index_file.parent
    return DaemonFiles(folder / f"mcp-{name}.pid", folder / f"mcp-{name}.log", folder / f"mcp-{name}.lock")


def _files_name(index_name: str | None) -> str:
    """The index's part of the daemon's file names: its name, or for ``--index postgresql://...``
    a digest of the URL without its password (one daemon per database, whatever password
    reached it; no URL, and so no password, in a file name)."""
    from ..store.backend import is_database_url

    if not is_database_url(index_name):
        return index_name or DEFAULT_INDEX
    from ..store.postgres.connection import password_apart

    assert index_name is not None
    return "pg-" + hashlib.sha256(password_apart(index_name)[0].encode("utf-8")).hexdigest()[:16]


def served_index(index_name: str | None) -> str:
    """The index a server of ``index_name`` serves, as `status` shows it: the SQLite file, or the
    database's URL with its password replaced by ***. It connects to nothing."""
    from ..api import Tansaku

    return Tansaku(index_name).backend.location


def _secrets_apart(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """The daemon's command line without a database password (anyone on the machine may read a
    command line, and the log records it), and the environment that gives it the password."""
    from ..store.backend import is_database_url

    env: dict[str, str] = {}
    shown = []
    for word in argv:
        if is_database_url(word):
            from ..store.postgres.connection import password_apart

            word, password = password_apart(word)
            if password is not None:
                env["PGPASSWORD"] = password
        shown.append(word)
    return shown, env


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


def _inspect(path: Path) -> PidFile:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return PidFile()
    except OSError as exc:
        return PidFile(problem=f"it cannot be read: {exc.strerror}")
    if not raw.strip():
        return PidFile(problem="it is empty")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return PidFile(problem="it is not text")
    except ValueError:
        return PidFile(problem="it is not JSON")
    pid = data.get("pid") if isinstance(data, dict) else None
    # 0 and negative pids name process groups (-1: every process), and 1 is init: never our daemon.
    if type(pid) is not int or pid <= 1:
        return PidFile(problem="it names no process id")
    return PidFile(record=data)


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


def _live(paths: DaemonFiles) -> dict[str, Any] | None:
    """The running daemon's record: the pid file's, else the copy in the claim file (for a pid
    file someone removed or overwrote while the daemon ran)."""
    for path in (paths.pid, paths.lock):
        record = _inspect(path).record
        if record is not None and _ours(record):
            return record
    return None


def running(index_name: str | None) -> dict[str, Any] | None:
    return _live(files(index_name))


def in_use_by(index_name: str | None) -> Any:
    """For a port-in-use error: which of our daemons holds the port, if one does."""

    def describe(port: int) -> str:
        folder = files(index_name).pid.parent
        for path in sorted(folder.glob("mcp-*.pid")):
            record = _inspect(path).record
            if record is not None and record.get("port") == port and _ours(record):
                return f" (the tansaku daemon, pid {record['pid']}, holds it: `tansaku mcp stop`)"
        return ""

    return describe


def status(index_name: str | None) -> DaemonInfo:
    paths = files(index_name)
    pid_file = _inspect(paths.pid)
    base = {"pid_file": str(paths.pid), "log_file": str(paths.log)}
    record = _live(paths)
    if record is not None:
        note = f" (its pid file is not a pid record: {pid_file.problem})" if pid_file.problem else ""
        return DaemonInfo(
            True,
            record["pid"],
            record.get("url"),
            config=record.get("config"),
            index=record.get("index"),
            started=record.get("started"),
            message=f"running: {record.get('url')}/mcp, pid {record['pid']}, since {record.get('started')}"
            + note,
            **base,
        )
    stopped = {"url": None, "config": None, "index": None, "started": None, **base}
    if claim.is_claimed(paths.lock):
        return DaemonInfo(False, None, message="starting: another command is starting a daemon", **stopped)
    if pid_file.problem:
        return DaemonInfo(
            False,
            None,
            message=f"not running: the pid file {paths.pid} is not a pid record ({pid_file.problem});"
            " `tansaku mcp stop` removes it",
            **stopped,
        )
    if pid_file.record is not None:
        return DaemonInfo(
            False,
            pid_file.record["pid"],
            message=f"not running: the pid file names pid {pid_file.record['pid']}, which is not our server"
            " (a stale file; `tansaku mcp stop` removes it)",
            **stopped,
        )
    return DaemonInfo(False, None, message="no daemon is running", **stopped)


def _health(url: str, token: str | None) -> dict[str, Any] | None:
    request = urllib.request.Request(f"{url}/health")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _already(record: dict[str, Any]) -> DaemonRunning:
    return DaemonRunning(
        f"a daemon is already running for this index: {record.get('url')}, pid {record['pid']}",
        hint="`tansaku mcp status`, or `tansaku mcp stop` first",
        pid=record["pid"],
        url=record.get("url"),
    )


def _take_claim(paths: DaemonFiles) -> int:
    """The claim's descriptor, or DaemonRunning naming the daemon that holds it. A start that lost
    waits for the winner's record to name it, and tries again if the winner gives up."""
    deadline = time.monotonic() + NAME_WAIT_S
    while True:
        try:
            fd = claim.try_claim(paths.lock)
        except OSError as exc:
            raise DaemonFailed(f"cannot create the daemon's lock file {paths.lock}: {exc.strerror}") from None
        if fd is not None:
            return fd
        record = _live(paths)
        if record is not None:
            raise _already(record)
        if time.monotonic() > deadline:
            raise DaemonRunning(
                "another command is starting a daemon for this index, or one runs whose pid file is gone"
                f" (it holds {paths.lock})",
                hint="`tansaku mcp status` in a moment",
            )
        time.sleep(claim.POLL_S)


def _write_record(paths: DaemonFiles, fd: int, record: dict[str, Any]) -> None:
    text = json.dumps(record)
    temporary = paths.pid.with_suffix(".pid.tmp")  # only the claim's holder writes it
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(paths.pid)
    claim.write(fd, text)


def start(index_name: str | None, argv: list[str], url: str, token: str | None) -> DaemonInfo:
    """Run ``tansaku ARGV`` (the foreground server's command) in the background and wait until
    /health answers from that very process."""
    paths = files(index_name)
    paths.pid.parent.mkdir(parents=True, exist_ok=True)
    fd = _take_claim(paths)
    try:
        current = _live(paths)  # a daemon an older tansaku started holds no claim
        if current is not None:
            raise _already(current)
        return _spawn(index_name, paths, fd, argv, url, token)
    finally:
        os.close(fd)  # the daemon has its own copy: the claim now lives exactly as long as it does


def _spawn(
    index_name: str | None, paths: DaemonFiles, fd: int, argv: list[str], url: str, token: str | None
) -> DaemonInfo:
    argv, secrets = _secrets_apart(argv)
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
            pass_fds=(fd,),  # the claim, held for the daemon's life
            env={**os.environ, **secrets} if secrets else None,
        )
    loc = locations(index_name)
    record = {
        "pid": process.pid,
        "start_ticks": _start_ticks(process.pid),
        "url": url,
        "port": int(url.rsplit(":", 1)[1]),
        "config": str(loc.config_file),
        "index": served_index(index_name),
        "log": str(paths.log),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    _write_record(paths, fd, record)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            paths.pid.unlink(missing_ok=True)  # still ours to remove: the claim is held until we return
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


def _remove_pid_file(paths: DaemonFiles) -> None:
    """Remove the pid file under the claim, so that a start beginning now cannot lose its new one."""
    with claim.claimed(paths.lock, STOP_TIMEOUT_S) as held:
        if not held:
            raise DaemonRunning(
                f"left the pid file {paths.pid}: another command is starting a daemon for this index",
                hint="`tansaku mcp status` in a moment",
            )
        try:
            paths.pid.unlink(missing_ok=True)
        except OSError as exc:
            raise DaemonFailed(f"cannot remove the pid file {paths.pid}: {exc.strerror}") from None


def stop(index_name: str | None) -> DaemonInfo:
    paths = files(index_name)
    pid_file = _inspect(paths.pid)
    record = _live(paths)
    base = {"pid_file": str(paths.pid), "log_file": str(paths.log), "config": None, "index": None}
    if record is None:
        pid: int | None = None
        if pid_file.problem:
            message = f"removed the pid file {paths.pid}: it was not a pid record ({pid_file.problem})"
        elif pid_file.record is not None:
            pid = pid_file.record["pid"]
            message = f"removed a stale pid file: pid {pid} is not our server any more"
        else:
            raise DaemonNotRunning(
                "no daemon is running for this index", hint="start one with `tansaku mcp --http --daemon`"
            )
        _remove_pid_file(paths)
        return DaemonInfo(False, pid, None, started=None, message=message, **base)
    _terminate(record["pid"])
    _remove_pid_file(paths)
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
