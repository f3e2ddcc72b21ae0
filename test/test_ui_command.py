"""`tansaku ui` and `tansaku mcp --http --open`: the address printed, the page served, the browser
asked to open it (a BROWSER command that only records the address: no real browser opens)."""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .serve_support import free_port, http_server, request, tansaku

pytestmark = [pytest.mark.subprocess, pytest.mark.both_backends]


@pytest.fixture
def recorder(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A BROWSER that writes the address it was given to a file, and the file."""
    seen = tmp_path / "opened.txt"
    script = tmp_path / "fake-browser"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {seen}\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"BROWSER": str(script), "DISPLAY": "", "WAYLAND_DISPLAY": ""}, seen


def _opened(seen: Path, timeout: float = 10) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not seen.exists():
        time.sleep(0.05)
    return seen.read_text().split() if seen.exists() else []


@pytest.fixture
def port(indexed: Path, index_path: Path) -> Iterator[int]:
    chosen = free_port()
    yield chosen
    if (index_path.parent / "mcp-index.pid").exists():
        tansaku("mcp", "stop", timeout=30)
    record = index_path.parent / "mcp-index.lock"
    if record.exists():
        try:
            pid = json.loads(record.read_text())["pid"]
            os.kill(pid, signal.SIGKILL)
        except (ValueError, KeyError, ProcessLookupError):
            pass


def test_ui_starts_the_daemon_opens_the_page_and_reuses_it(port: int, recorder):
    env, seen = recorder
    first = tansaku("ui", "--port", str(port), "--json", env=env)
    assert first.returncode == 0, first.stderr
    info = json.loads(first.stdout)
    url = f"http://127.0.0.1:{port}/"
    assert info["url"] == url and info["started"] is True and info["opened"] is True
    assert _opened(seen) == [url]
    page = request(url)
    assert page.status == 200 and '<input id="q"' in page.body.decode()
    assert request(url + "health").json()["pid"] == info["pid"]

    # A second `ui` finds the running daemon, whatever --port says, and starts nothing.
    again = tansaku("ui", "--port", str(free_port()), "--no-open", env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"search page: {url}\n")
    assert f"already serving this index (pid {info['pid']}" in again.stdout
    assert _opened(seen, timeout=0.5) == [url]  # --no-open opened nothing more


def _normalised(text: str, port: int, pid: int, log: str) -> str:
    return text.replace(str(port), "PORT").replace(str(pid), "PID").replace(log, "LOG")


def test_ui_output_formats(port: int, recorder, index_path: Path, snapshot: Any):
    env, _ = recorder
    started = tansaku("ui", "--port", str(port), "--json", env=env)
    info = json.loads(started.stdout)
    log = str(index_path.parent / "mcp-index.log")
    reused = tansaku("ui", "--no-open", env=env)
    shown = {
        "started (json)": _normalised(started.stdout, port, info["pid"], log),
        "running (cli)": _normalised(reused.stdout, port, info["pid"], log),
    }
    assert shown == snapshot


def test_ui_without_a_browser_still_prints_the_address(port: int, tmp_path: Path):
    env = {"BROWSER": str(tmp_path / "no-such-browser"), "DISPLAY": "", "WAYLAND_DISPLAY": "", "TERM": ""}
    result = tansaku("ui", "--port", str(port), env=env)
    assert result.returncode == 0, result.stderr
    assert f"search page: http://127.0.0.1:{port}/" in result.stdout
    assert "open the address yourself" in result.stdout


def test_ui_uses_a_foreground_server_of_this_index_and_refuses_another_index_s(
    indexed: Path, tmp_path: Path, index_path: Path, index_backend: str
):
    # Another index: another SQLite file; beside a database, the SQLite index of `--index other`.
    other_index: tuple[str, ...] = ("--index", "other") if index_backend == "postgresql" else ()
    served = str(index_path) if index_backend == "sqlite" else "postgresql://"
    with http_server(tmp_path) as server:
        port = server.url.rsplit(":", 1)[1]
        used = tansaku("ui", "--port", port, "--no-open", "--json")
        assert used.returncode == 0, used.stderr
        info = json.loads(used.stdout)
        assert info["pid"] == server.process.pid and info["started"] is False
        assert "already serving this index there" in info["message"] and "foreground" in info["message"]
        other = tansaku(
            *other_index,
            "ui",
            "--port",
            port,
            "--no-open",
            "--json",
            env={"TANSAKU_INDEX_PATH": str(tmp_path / "other.sqlite")},
        )
        assert other.returncode == 4
        error = json.loads(other.stderr)["error"]
        assert error["code"] == "PORT_IN_USE" and served in error["message"]
    assert not (index_path.parent / "mcp-index.pid").exists()  # no daemon was started


def test_ui_port_zero_is_refused(indexed: Path):
    result = tansaku("ui", "--port", "0", "--no-open")
    assert result.returncode == 2 and "fixed --port" in result.stderr


def test_mcp_http_open_opens_the_page_of_a_foreground_server(indexed: Path, tmp_path: Path, recorder):
    env, seen = recorder
    with http_server(tmp_path, "--open", env=env) as server:
        assert _opened(seen) == [server.url + "/"]


def test_mcp_http_daemon_open_opens_the_page_once_the_daemon_answers(port: int, recorder):
    env, seen = recorder
    started = tansaku("mcp", "--http", "--daemon", "--port", str(port), "--open", "--json", env=env)
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    assert info["opened"] is True and f"search page: http://127.0.0.1:{port}/" in info["message"]
    assert _opened(seen) == [f"http://127.0.0.1:{port}/"]


def test_open_needs_http(indexed: Path):
    result = tansaku("mcp", "--open")
    assert result.returncode == 2 and "--open needs --http" in result.stderr
