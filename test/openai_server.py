"""Loopback OpenAI-compatible servers for the endpoint tests: a scripted one, and llama.cpp's.

``ScriptedServer`` is a real HTTP server (stdlib ``http.server`` in a thread) that answers
``/v1/embeddings`` with deterministic vectors and ``/v1/models`` with its model, unless the test
queued something else for the next requests (or set ``otherwise``, for every request after the
queue): an HTTP status (with headers such as Retry-After), a pause longer than the client's
timeout, vectors of other dimensions, one given vector for every text (NaN, infinite, zeros), or
a body streamed from a generator without a Content-Length (``streamed`` then says how many bytes
the client took before it hung up). Every request is logged, so tests can assert what was sent
(or that nothing was).

``llama_server`` starts llama-cpp-python's own server (``python -m llama_cpp.server``) on a free
loopback port, serving one GGUF file, and stops it afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Logged:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Script:
    """What the next request gets instead of the default answer."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    pause: float = 0.0
    dims: int | None = None
    vector: list[float] | None = None  # every text gets this vector (json.dumps writes NaN as NaN)
    stream: Callable[[], Iterator[bytes]] | None = None  # the body, sent as made, then the socket closes


def fake_vector(text: str, dims: int) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    values = [((digest[i % len(digest)] + i) % 17) - 8.0 for i in range(dims)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


class ScriptedServer:
    def __init__(self, model: str = "fake-embed", dims: int = 8, host: str = "127.0.0.1") -> None:
        self.model, self.dims = model, dims
        self.log: list[Logged] = []
        self.queue: list[Script] = []
        self.otherwise: Script | None = None  # the answer once the queue is empty
        self.streamed: list[int] = []  # bytes of each streamed body written before it ended
        # A request with a text containing this is refused as too long (HTTP 400).
        self.too_long: str | None = None
        # Answers of other routes, by path: body -> (status, payload).
        self.routes: dict[str, Callable[[Any], tuple[int, Any]]] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server._answer(self, None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except json.JSONDecodeError:
                    body = raw
                server._answer(self, body)

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def url(self, host: str = "127.0.0.1", model: str | None = None) -> str:
        return f"http://{host}:{self.port}/v1#{model or self.model}"

    def then(self, *scripts: Script) -> None:
        with self._lock:
            self.queue.extend(scripts)

    def posts(self, path: str) -> list[Logged]:
        return [r for r in self.log if r.method == "POST" and r.path == path]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _answer(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        with self._lock:
            self.log.append(Logged(handler.command, handler.path, dict(handler.headers), body))
            script = self.queue.pop(0) if self.queue else (self.otherwise or Script())
        if script.pause:
            time.sleep(script.pause)
        if script.stream is not None:
            self._stream(handler, script.stream)
            return
        status, payload = script.status, script.body
        if status == 200 and payload is None:
            status, payload = self._default(handler.path, body, script.dims or self.dims)
            if script.vector is not None and status == 200 and "data" in payload:
                for item in payload["data"]:
                    item["embedding"] = list(script.vector)
        data = json.dumps(payload).encode("utf-8")
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for name, value in script.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): nothing to answer

    def _stream(self, handler: BaseHTTPRequestHandler, blocks: Callable[[], Iterator[bytes]]) -> None:
        """HTTP/1.0 style: no Content-Length, the body ends when the connection closes."""
        written = 0
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Connection", "close")
            handler.end_headers()
            for block in blocks():
                handler.wfile.write(block)
                written += len(block)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading and closed
        finally:
            handler.close_connection = True
            with self._lock:
                self.streamed.append(written)

    def _default(self, path: str, body: Any, dims: int) -> tuple[int, Any]:
        if path in self.routes:
            return self.routes[path](body)
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
        if path == "/v1/embeddings" and isinstance(body, dict):
            if body.get("model") != self.model:
                error = {"message": f"model '{body.get('model')}' not found", "code": "model_not_found"}
                return 404, {"error": error}
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            if self.too_long and any(self.too_long in t for t in texts):
                error = {"message": "the input is longer than the context", "code": "context_length_exceeded"}
                return 400, {"error": error}
            data = [
                {"object": "embedding", "index": i, "embedding": fake_vector(t, dims)}
                for i, t in enumerate(texts)
            ]
            tokens = sum(len(t.split()) for t in texts)
            return 200, {
                "object": "list",
                "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        return 404, {"error": {"message": f"no route {path}"}}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def llama_server(model_path: Path, alias: str, log: Path, **settings: Any) -> Iterator[str]:
    """llama-cpp-python's server for one GGUF file on a free loopback port; yields its /v1 URL."""
    port = free_port()
    config = {
        "host": "127.0.0.1",
        "port": port,
        "models": [
            {"model": str(model_path), "model_alias": alias, "n_threads": 2, "verbose": False, **settings}
        ],
    }
    config_file = log.with_suffix(".json")
    config_file.write_text(json.dumps(config), encoding="utf-8")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--config_file", str(config_file)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited ({process.returncode}): {log.read_text()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(base + "/models", timeout=2) as answer:
                    answer.read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"llama_cpp.server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# Fixtures for the modules that drive tansaku against a scripted endpoint (conftest.py makes them
# known; a module asks for the environment with ``pytest.mark.usefixtures("no_model_env")``).
@pytest.fixture
def no_model_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No model of this machine and no remote setting of the developer's: one retry only."""
    from tansaku.models import registry

    monkeypatch.setenv("TANSAKU_MODEL_DIR", str(tmp_path / "models"))
    for role in registry.ROLES:
        monkeypatch.delenv(registry.env_var(role), raising=False)
    for name in ("TANSAKU_API_KEY", "TANSAKU_REMOTE_TIMEOUT", "TANSAKU_REMOTE_QUERY_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TANSAKU_REMOTE_RETRIES", "1")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    running = ScriptedServer()
    yield running
    running.close()


@pytest.fixture
def remote_embed(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", server.url())
    return server.url()
