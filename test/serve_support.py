"""Helpers for the server tests: real `tansaku mcp` subprocesses on free ports, always stopped."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the serve extra is not installed: pip install -e '.[serve]'")

START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tansaku(
    *args: str, env: dict[str, str] | None = None, timeout: float = 90
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tansaku", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@dataclass
class Reply:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    url: str,
    *,
    method: str = "GET",
    data: Any = None,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60,
) -> Reply:
    body = raw if raw is not None else (json.dumps(data).encode() if data is not None else None)
    sent = {"Content-Type": "application/json"} if body is not None else {}
    req = urllib.request.Request(url, data=body, method=method, headers={**sent, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return Reply(response.status, response.read(), dict(response.headers))
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, exc.read(), dict(exc.headers))


@dataclass
class Server:
    process: subprocess.Popen
    url: str
    log: Path

    def post(self, path: str, data: Any, **kw: Any) -> Reply:
        return request(self.url + path, method="POST", data=data, **kw)

    def get(self, path: str, **kw: Any) -> Reply:
        return request(self.url + path, **kw)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def wait_healthy(url: str, process: subprocess.Popen | None, log: Path, headers: dict | None = None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"server exited {process.returncode}: {log.read_text()}")
        try:
            if request(url + "/health", headers=headers, timeout=2).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"no /health within {START_TIMEOUT_S} s: {log.read_text()}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@contextmanager
def http_server(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, host: str = "127.0.0.1"
) -> Iterator[Server]:
    port = free_port()
    log = tmp_path / f"server-{port}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tansaku", "mcp", "--http", "--host", host, "--port", str(port), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        token = (env or {}).get("TANSAKU_HTTP_TOKEN")
        wait_healthy(url, process, log, {"Authorization": f"Bearer {token}"} if token else None)
        yield Server(process, url, log)
    finally:
        stop(process)


def tool_error(result: Any) -> dict[str, Any]:
    """The CLI's error object of an MCP tool error (an SDK result or the raw JSON one): an error
    result has no structuredContent, its last text block holds ``{"error": {...}}``."""
    if isinstance(result, dict):
        assert result["isError"] is True and "structuredContent" not in result, result
        return json.loads(result["content"][-1]["text"])["error"]
    assert result.is_error and result.structured_content is None, result
    return json.loads(result.content[-1].text)["error"]


def without_timings(data: Any) -> Any:
    """Results with the wall-clock fields removed: the only part two runs may differ in."""
    if isinstance(data, dict):
        return {k: without_timings(v) for k, v in data.items() if not k.endswith("_ms") and k != "timings"}
    if isinstance(data, list):
        return [without_timings(v) for v in data]
    return data
