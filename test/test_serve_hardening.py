"""What a hostile page, a careless client or a slow one does to the HTTP server, on a real server
process: bad numbers and bodies are 4xx (never 500), slow clients are dropped, MCP sessions are
capped, tokens are long enough and their scheme is case-insensitive, and a reference is never
resolved against the server's working folder."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .serve_support import Server, free_port, http_server, request, tansaku, tool_error

pytestmark = pytest.mark.subprocess

LONG_TOKEN = "k" * 40
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def server(indexed: Path, tmp_path: Path):
    with http_server(tmp_path) as running:
        yield running


def _raw(server: Server, payload: bytes, *, read_for: float = 15.0) -> bytes:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=read_for) as sock:
        sock.sendall(payload)
        chunks = []
        while True:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks)


def _mcp(server: Server, body: dict, session: str | None = None) -> tuple[int, dict, dict]:
    headers = {**MCP_HEADERS, **({"mcp-session-id": session} if session else {})}
    reply = server.post("/mcp", body, headers=headers)
    text = reply.body.decode()
    if "data:" in text:  # an event stream of one message
        # split on the stream's own line ends only: str.splitlines also breaks at U+0085
        text = next(line[5:] for line in re.split(r"\r?\n", text) if line.startswith("data:"))
    lowered = {k.lower(): v for k, v in reply.headers.items()}
    return reply.status, lowered, (json.loads(text) if text.strip() else {})


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def _initialize(server: Server) -> str:
    status, headers, _ = _mcp(server, INITIALIZE)
    assert status == 200, status
    session = headers["mcp-session-id"]
    _mcp(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


def _tool(server: Server, session: str, name: str, arguments: dict) -> dict:
    status, _, body = _mcp(
        server,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}},
        session,
    )
    assert status == 200, body
    return body["result"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/search", b'{"query": "x", "n": 1000000000000000000000000000000}'),
        ("/query", b'{"query": "x", "limit": 99999999999999999999999}'),
        ("/query", b'{"query": "x", "rerank_budget": 1e999}'),
        ("/query", b'{"query": "x", "rerank_budget": 100000000000000000000000000' + b"0" * 400 + b"}"),
        ("/multi-get", b'{"pattern": "sample/*.md", "max_bytes": 100000000000000000000000}'),
    ],
)
def test_numbers_out_of_range_are_400_not_500(server: Server, path: str, body: bytes):
    reply = request(server.url + path, method="POST", raw=body)
    assert reply.status == 400, reply.body
    assert reply.json()["error"]["code"] == "USAGE"


def test_a_huge_line_number_in_get_is_400(server: Server):
    reply = server.get("/get?ref=sample/guides/backups.md&from=" + "9" * 40)
    assert reply.status == 400 and reply.json()["error"]["code"] == "USAGE"


def test_mcp_tools_refuse_huge_numbers_with_the_cli_error(server: Server):
    session = _initialize(server)
    result = _tool(server, session, "search", {"query": "restore", "limit": 10**30})
    assert tool_error(result)["code"] == "USAGE"
    assert "SQLite" not in json.dumps(result)


@pytest.mark.parametrize("path", ["/search", "/mcp"])
def test_a_deeply_nested_body_is_400_not_500(server: Server, path: str):
    reply = request(server.url + path, method="POST", raw=b"[" * 100_000, headers=MCP_HEADERS)
    assert reply.status == 400, reply.body
    assert reply.json()["error"]["code"] == "USAGE"


def test_a_chunked_oversized_body_to_mcp_is_413(server: Server):
    chunk = b"x" * 65536
    head = (
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).format(host=server.url.removeprefix("http://"))
    payload = head.encode() + b"".join([b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 32) + b"0\r\n\r\n"
    assert _raw(server, payload).startswith(b"HTTP/1.1 413")


def test_idle_and_half_sent_connections_are_closed(server: Server):
    from tansaku.serve.connections import READ_TIMEOUT_S

    host, port = server.url.removeprefix("http://").split(":")
    idle = socket.create_connection((host, int(port)))
    half = socket.create_connection((host, int(port)))
    half.sendall(b"POST /search HTTP/1.1\r\nHost: " + f"{host}:{port}".encode() + b"\r\nContent-Le")
    started = time.monotonic()
    try:
        for sock in (idle, half):
            sock.settimeout(READ_TIMEOUT_S + 10)
            assert sock.recv(1024) == b""  # closed by the server, not by our timeout
        assert time.monotonic() - started < READ_TIMEOUT_S + 5
        assert server.get("/health").status == 200
    finally:
        idle.close()
        half.close()


def test_mcp_sessions_are_capped(server: Server):
    from tansaku.serve.connections import MAX_MCP_SESSIONS

    sessions = [_initialize(server) for _ in range(MAX_MCP_SESSIONS)]
    status, _, _ = _mcp(server, INITIALIZE)
    assert status == 503
    closed = request(server.url + "/mcp", method="DELETE", headers={"mcp-session-id": sessions[0]})
    assert closed.status in (200, 204)
    assert _initialize(server)


def test_the_bearer_scheme_is_case_insensitive(indexed: Path, tmp_path: Path):
    env = {"TANSAKU_HTTP_TOKEN": LONG_TOKEN}
    with http_server(tmp_path, env=env) as server:
        for scheme in ("Bearer", "bearer", "BEARER"):
            reply = server.get("/status", headers={"Authorization": f"{scheme} {LONG_TOKEN}"})
            assert reply.status == 200, scheme
        assert server.get("/status", headers={"Authorization": f"Basic {LONG_TOKEN}"}).status == 401
        assert server.get("/status", headers={"Authorization": f"bearer {LONG_TOKEN}x"}).status == 401


def test_allow_remote_refuses_a_short_token_and_offers_a_long_one(indexed: Path):
    refused = tansaku(
        "mcp",
        "--http",
        "--host",
        "0.0.0.0",
        "--port",
        str(free_port()),
        "--allow-remote",
        "--json",
        env={"TANSAKU_HTTP_TOKEN": "a"},
    )
    error = json.loads(refused.stderr)["error"]
    assert refused.returncode == 2 and error["code"] == "REMOTE_REFUSED"
    assert "at least 32 characters" in error["message"]
    offered = error["hint"].rsplit("=", 1)[1]
    assert len(offered) >= 32 and offered not in tansaku("--version").stdout


def test_a_relative_ref_is_never_resolved_against_the_servers_folder(indexed: Path, tmp_path: Path):
    # The server runs in the collection's parent folder, where "sample/guides/backups.md" is a
    # file on disk; under another name ("docs/...") it must not be found through that folder.
    folder = indexed.parent
    os.symlink(indexed, folder / "docs")
    port = free_port()
    log = tmp_path / "cwd-server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tansaku", "mcp", "--http", "--port", str(port)],
            cwd=folder,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        from .serve_support import wait_healthy

        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, process, log)
        assert request(url + "/get?ref=sample/guides/backups.md").status == 200
        missed = request(url + "/get?ref=docs/guides/backups.md")
        assert missed.status == 404, missed.body
        assert missed.json()["error"]["code"] == "DOC_NOT_FOUND"
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_mcp_without_the_server_libraries_is_a_clear_error(indexed: Path):
    hide = (
        "import sys; sys.modules['mcp'] = None; from tansaku.cli.main import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    for args in (["mcp"], ["mcp", "--http", "--port", str(free_port())]):
        result = subprocess.run(
            [sys.executable, "-c", hide, *args, "--json"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        error = json.loads(result.stderr)["error"]
        assert "mcp" in error["message"] and "tansaku[serve]" in error["hint"]
        assert "Traceback" not in result.stderr


def test_every_tool_schema_lists_exactly_the_fields_its_request_takes():
    # The MCP `get` tool's error listed full_path and line_numbers, which its schema left out.
    from tansaku.serve.mcp import TOOLS
    from tansaku.serve.requests import OPERATIONS

    for tool in TOOLS:
        assert set(tool.input_schema["properties"]) == set(OPERATIONS[tool.name].fields), tool.name
        for name, schema in tool.input_schema["properties"].items():
            if schema.get("type") == "integer":
                assert schema["maximum"] <= 2**63 - 1, (tool.name, name)


def _slow_operation(stopped: list[str]):
    """An operation that works in small steps, checking its bound between them, as the library's
    loops do; it records how it ended."""
    from tansaku import limits
    from tansaku.serve.requests import Operation

    def run(api, fields):
        try:
            for _ in range(600):  # 30 s at most, whatever happens
                limits.check()
                time.sleep(0.05)
        except (limits.WorkCancelled, limits.WorkExpired) as exc:
            stopped.append(exc.code)
            raise
        stopped.append("finished")
        return {"ok": True}

    return Operation(run, frozenset(), False, False)


def test_a_request_past_its_deadline_is_stopped_and_answered(indexed: Path, monkeypatch):
    import anyio

    from tansaku.errors import TansakuError
    from tansaku.serve import requests

    stopped: list[str] = []
    monkeypatch.setitem(requests.OPERATIONS, "slow", _slow_operation(stopped))
    service = requests.Service(deadline_s=0.3)
    started = time.monotonic()
    with pytest.raises(TansakuError) as raised:
        anyio.run(service.run, "slow", {})
    assert raised.value.code == "REQUEST_TIMEOUT"
    assert time.monotonic() - started < 3
    deadline = time.monotonic() + 3
    while not stopped and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stopped == ["REQUEST_TIMEOUT"]


def test_a_request_whose_caller_goes_away_stops_working(indexed: Path, monkeypatch):
    import anyio

    from tansaku.serve import requests

    stopped: list[str] = []
    monkeypatch.setitem(requests.OPERATIONS, "slow", _slow_operation(stopped))
    service = requests.Service(deadline_s=30)

    async def call_and_hang_up() -> None:
        with anyio.move_on_after(0.3):  # the client goes away: its task is cancelled
            await service.run("slow", {})

    anyio.run(call_and_hang_up)
    deadline = time.monotonic() + 3
    while not stopped and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stopped == ["REQUEST_CANCELLED"]
