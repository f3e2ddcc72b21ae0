"""`tansaku mcp --http` as a real subprocess: every JSON endpoint, and what it refuses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .made_files import marked_up_page
from .serve_support import Server, free_port, http_server, request, tansaku

LONG_TOKEN = "t" * 40  # --allow-remote needs 32 characters or more

pytestmark = [pytest.mark.subprocess, pytest.mark.both_backends]


@pytest.fixture
def server(indexed: Path, tmp_path: Path) -> Iterator[Server]:
    with http_server(tmp_path) as running:
        yield running


def test_start_banner_names_endpoint_config_index_and_stop(server: Server, index_backend: str):
    text = server.output()
    assert f"serving on {server.url}" in text and f"{server.url}/mcp" in text
    index = os.environ["TANSAKU_INDEX_PATH"] if index_backend == "sqlite" else "index:  postgresql://"
    assert os.environ["TANSAKU_CONFIG_DIR"] in text and index in text
    assert "foreground" in text and "Ctrl-C" in text


def test_health_and_status(server: Server):
    health = server.get("/health").json()
    assert health["ok"] is True and health["pid"] == server.process.pid and health["mode"] == "foreground"
    status = server.get("/status").json()
    assert [c["collection"]["name"] for c in status["collections"]] == ["sample"]


def test_search_answers_the_cli_json(server: Server):
    reply = server.post("/search", {"query": "restore", "n": 3})
    assert reply.status == 200
    data = reply.json()
    assert data["mode"] == "search" and data["limit"] == 3
    assert data["results"][0]["path"] == "guides/backups.md"
    assert data["results"][0]["docid"].startswith("#")
    # Defaults are the CLI's for --json: 20 results at most.
    assert server.post("/search", {"query": "the"}).json()["limit"] == 20
    assert server.post("/search", {"query": "the", "all": True}).json()["limit"] is None


def test_query_and_query_documents_without_models(server: Server):
    data = server.post("/query", {"query": "restore", "no_expand": True, "no_rerank": True}).json()
    assert data["mode"] == "query" and data["used"] == "keyword"
    assert data["results"][0]["path"] == "guides/backups.md"
    doc = server.post(
        "/query", {"searches": [{"type": "lex", "query": "restore"}], "no_expand": True, "no_rerank": True}
    ).json()
    assert doc["results"][0]["path"] == "guides/backups.md"
    eleven = [{"type": "lex", "query": f"w{i}"} for i in range(11)]
    too_many = server.post("/query", {"searches": eleven})
    assert too_many.status == 400 and too_many.json()["error"]["code"] == "USAGE"


def test_vsearch_without_vectors_says_what_to_run(server: Server):
    reply = server.post("/vsearch", {"query": "restore"})
    assert reply.status in (404, 503)
    assert reply.json()["error"]["code"] in ("NO_VECTORS", "MODEL_MISSING")


def test_get_and_multi_get(server: Server, indexed: Path):
    got = server.get("/get?ref=sample/guides/backups.md&from=6&l=2").json()
    assert got["from_line"] == 6 and len(got["lines"]) == 2
    assert got["lines"][0] == "## Restoring a file"
    missing = server.get("/get?ref=sample/nope.md")
    assert missing.status == 404 and missing.json()["error"]["code"] == "DOC_NOT_FOUND"
    multi = server.post("/multi-get", {"pattern": "sample/guides/*.md", "l": 1}).json()
    assert multi["documents"] and all(len(d["lines"]) == 1 for d in multi["documents"])


def test_multi_get_measures_a_page_by_its_text(indexed: Path, tmp_path: Path, cli):
    folder = tmp_path / "pages"
    folder.mkdir()
    marked_up_page(folder / "howto.html")  # ~20 KB on disk, ~4 KB of text
    assert cli("collection", "add", folder, "--name", "pages", "--formats", "html").exit_code == 0
    with http_server(tmp_path) as server:
        fits = server.post("/multi-get", {"pattern": "pages/*.html"}).json()
        assert [d["virtual_path"] for d in fits["documents"]] == ["tansaku://pages/howto.html"]
        assert fits["skipped"] == [] and fits["max_bytes"] == 10240
        tight = server.post("/multi-get", {"pattern": "pages/*.html", "max_bytes": 1000})
        assert tight.status == 200 and tight.json()["documents"] == []
        [skipped] = tight.json()["skipped"]
        why = f"its text is {skipped['text_bytes']} bytes, over --max-bytes 1000"
        assert skipped["reason"].startswith(why) and skipped["text_bytes"] < 10240
        assert [w["code"] for w in tight.json()["warnings"]] == ["ALL_SKIPPED"]
    run = tansaku("multi-get", "pages/*.html", "--max-bytes", "1000")
    assert run.returncode == 1 and "nothing printed" in run.stdout + run.stderr


def test_bad_requests_are_400_with_the_cli_error(server: Server):
    unknown = server.post("/search", {"query": "x", "bogus": 1})
    assert unknown.status == 400 and "bogus" in unknown.json()["error"]["message"]
    assert server.post("/search", {"query": "x", "n": 0}).status == 400
    assert server.post("/search", {}).status == 400
    not_json = request(
        server.url + "/search", method="POST", raw=b"query=x", headers={"Content-Type": "text/plain"}
    )
    assert not_json.status == 400


@pytest.mark.parametrize(
    "ref",
    [
        "../../etc/passwd",
        "/etc/passwd",
        "sample/../../etc/passwd",
        "tansaku://sample/../x.md",
        "~/.ssh/id_rsa",
    ],
)
def test_get_refuses_paths_outside_the_collections(server: Server, ref: str):
    reply = server.get("/get?" + _query(ref=ref))
    assert reply.status == 403 and reply.json()["error"]["code"] == "PATH_REFUSED"
    multi = server.post("/multi-get", {"pattern": f"sample/README.md,{ref}"})
    assert multi.status == 403


def test_a_symlink_out_of_the_root_is_never_served(indexed: Path, tmp_path: Path, cli):
    secret = tmp_path / "secret.md"
    secret.write_text("# top secret\n", encoding="utf-8")
    (indexed / "leak.md").symlink_to(secret)
    assert cli("update").exit_code == 0
    with http_server(tmp_path) as server:
        assert server.get("/get?ref=sample/leak.md").status == 404
        assert server.get("/get?" + _query(ref=str(secret))).status == 403
        assert "top secret" not in server.post("/search", {"query": "secret"}).body.decode()


def test_foreign_origin_and_mismatched_host_get_403(server: Server):
    foreign = server.get("/health", headers={"Origin": "http://evil.example"})
    assert foreign.status == 403 and foreign.json()["error"]["code"] == "ORIGIN_REFUSED"
    assert server.post("/search", {"query": "x"}, headers={"Origin": "https://evil.example"}).status == 403
    port = server.url.rsplit(":", 1)[1]
    rebound = server.get("/status", headers={"Host": f"evil.example:{port}"})
    assert rebound.status == 403 and rebound.json()["error"]["code"] == "HOST_REFUSED"
    assert server.get("/status", headers={"Host": "127.0.0.1:1"}).status == 403
    assert server.post("/mcp", {"jsonrpc": "2.0"}, headers={"Origin": "http://evil.example"}).status == 403
    # Loopback origins and names are the server itself.
    assert server.get("/health", headers={"Origin": f"http://localhost:{port}"}).status == 200
    assert server.get("/health", headers={"Host": f"localhost:{port}"}).status == 200


def _raw_post(server: Server, path: str, head: str, chunks: list[bytes]) -> str:
    """Send a request by hand (the server answers 413 before reading a body it will refuse, which
    a normal client reports as a broken pipe) and return the status line."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        start = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        sock.sendall(f"{start}{head}\r\n".encode())
        try:
            for chunk in chunks:
                sock.sendall(chunk)
        except OSError:
            pass  # closed as soon as it answered
        return sock.recv(200).decode(errors="replace").split("\r\n", 1)[0]


@pytest.mark.parametrize("path", ["/search", "/query", "/mcp"])
def test_oversized_bodies_get_413(server: Server, path: str):
    declared = _raw_post(server, path, f"Content-Length: {2 * 1024 * 1024}\r\n", [b"{" + b" " * 1000])
    assert declared.startswith("HTTP/1.1 413")


def test_a_chunked_oversized_body_gets_413(server: Server):
    chunk = b"x" * 65536
    chunks = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 20 + [b"0\r\n\r\n"]
    assert _raw_post(server, "/search", "Transfer-Encoding: chunked\r\n", chunks).startswith("HTTP/1.1 413")


def test_non_loopback_needs_allow_remote_and_a_token(indexed: Path, tmp_path: Path):
    port = str(free_port())
    refused = tansaku(
        "mcp", "--http", "--host", "0.0.0.0", "--port", port, "--json", env={"TANSAKU_HTTP_TOKEN": ""}
    )
    assert refused.returncode == 2 and json.loads(refused.stderr)["error"]["code"] == "REMOTE_REFUSED"
    assert "--allow-remote" in json.loads(refused.stderr)["error"]["hint"]
    no_token = tansaku(
        "mcp",
        "--http",
        "--host",
        "0.0.0.0",
        "--port",
        port,
        "--allow-remote",
        "--json",
        env={"TANSAKU_HTTP_TOKEN": ""},
    )
    assert (
        no_token.returncode == 2 and "TANSAKU_HTTP_TOKEN" in json.loads(no_token.stderr)["error"]["message"]
    )


def test_with_a_token_every_request_needs_it(indexed: Path, tmp_path: Path):
    env = {"TANSAKU_HTTP_TOKEN": LONG_TOKEN}
    with http_server(tmp_path, "--allow-remote", env=env, host="0.0.0.0") as server:
        assert "warning" in server.output()
        assert server.get("/status").status == 401
        assert server.get("/status", headers={"Authorization": "Bearer wrong"}).status == 401
        assert server.post("/mcp", {"jsonrpc": "2.0"}).status == 401
        ok = server.post("/search", {"query": "restore"}, headers={"Authorization": f"Bearer {LONG_TOKEN}"})
        assert ok.status == 200 and ok.json()["results"]


def test_a_port_in_use_is_a_clear_error(indexed: Path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = str(busy.getsockname()[1])
        result = tansaku("mcp", "--http", "--port", port, "--json")
    assert result.returncode == 4
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "PORT_IN_USE" and port in error["message"]


def test_the_cli_defaults_match_the_server_defaults():
    from tansaku.cli import serve as cli_serve
    from tansaku.serve import http

    assert (cli_serve.DEFAULT_HOST, cli_serve.DEFAULT_PORT) == (http.DEFAULT_HOST, http.DEFAULT_PORT)
    assert cli_serve.DEFAULT_REQUEST_TIMEOUT_S == http.DEFAULT_DEADLINE_S


def test_other_commands_never_import_the_server_stack(indexed: Path):
    probe = (
        "import io, sys\n"
        "from tansaku.cli.main import main, build_parser\n"
        "real, sys.stdout = sys.stdout, io.StringIO()\n"
        "main(['search', 'restore', '--json'])\n"
        "build_parser()\n"
        "sys.stdout = real\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'starlette', 'uvicorn', 'anyio'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=os.environ, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stderr


def _query(**fields: str) -> str:
    from urllib.parse import urlencode

    return urlencode(fields)
