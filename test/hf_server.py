"""A loopback stand-in for the Hugging Face hub, for tests that must not leave the machine.

It answers the requests huggingface_hub makes for a file: ``HEAD`` and ``GET`` of
``/{owner}/{repo}/resolve/{revision}/{filename}``. A plain file is served from that URL with
``X-Repo-Commit``, ``ETag`` and ``Content-Length``. A file added with ``lfs=True`` is served the way
the hub serves LFS and Xet files: the resolve URL answers ``302`` with ``X-Linked-Etag`` (the
file's SHA-256), ``X-Linked-Size`` and a ``Location`` on another origin (``localhost`` instead of
``127.0.0.1``, standing in for the CDN), which serves the bytes. Every ``GET`` of bytes honours
``Range``. Every request is logged, so tests can assert what was (or was not) asked for; the next
download can be cut after N bytes (a dropped connection) or stalled after N bytes (the rest
trickles out slowly, so a test can kill the client mid-file).
"""

from __future__ import annotations

import hashlib
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<filename>.+)$")
_CDN = re.compile(r"^/cdn/(?P<key>[0-9a-f]{64})$")
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
TRICKLE_BYTES, TRICKLE_PAUSE_S = 4096, 0.05


def tiny_gguf(embedding_length: int = 384, elements: int = 16384) -> bytes:
    """A valid GGUF v3 file: architecture and embedding length, one f32 tensor of ``elements``.

    The default is 64 KiB; pass more elements for a file larger than huggingface_hub's 10 MiB
    read chunk, which a resume test needs (bytes of an unfinished chunk are not kept).
    """

    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    header = b"GGUF" + struct.pack("<IQQ", 3, 1, 2)
    kv = string("general.architecture") + struct.pack("<I", 8) + string("bert")
    kv += string("bert.embedding_length") + struct.pack("<II", 4, embedding_length)
    tensor_info = string("weight") + struct.pack("<IQIQ", 1, elements, 0, 0)  # 1-D, f32, offset 0
    head = header + kv + tensor_info
    head += b"\0" * (-len(head) % 32)  # tensor data starts at the default 32-byte alignment
    pattern = bytes(range(256))  # any bit pattern is some f32; the values never matter here
    return head + (pattern * (elements * 4 // 256 + 1))[: elements * 4]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None
    bytes_sent: int
    status: int = 200
    host: str = ""  # the Host header: 127.0.0.1:PORT for the hub, localhost:PORT for its "CDN"
    authorized: bool = False  # whether an Authorization header came with it


@dataclass(frozen=True)
class HubFile:
    data: bytes
    etag: str  # what the hub reports: the SHA-256 of the data unless a test says otherwise
    lfs: bool


class HubServer:
    """``with HubServer() as hub: hub.add("owner/repo", "f.gguf", data); hub.endpoint``."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], HubFile] = {}
        self.requests: list[Request] = []
        self._cut_after: int | None = None
        self._stall_after: int | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._closing = threading.Event()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(
        self, repo_id: str, filename: str, data: bytes, *, etag: str | None = None, lfs: bool = False
    ) -> None:
        """Serve ``data``; adding the same name again replaces the file (a new revision on the hub)."""
        self.files[(repo_id, filename)] = HubFile(data, etag or sha256(data), lfs)

    def cut_next_download(self, after_bytes: int) -> None:
        """Drop the connection of the next GET after sending ``after_bytes`` of the body."""
        self._cut_after = after_bytes

    def stall_next_download(self, after_bytes: int) -> None:
        """Send the next GET's first ``after_bytes`` at once, then the rest slowly (4 KiB per 50 ms)."""
        self._stall_after = after_bytes

    def downloads(self) -> list[Request]:
        """Requests for bytes: GETs answered 200 or 206 (the 302s of LFS files aside)."""
        return [r for r in self.requests if r.method == "GET" and r.status in (200, 206)]

    def _log(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _take(self) -> tuple[int | None, int | None]:
        with self._lock:
            taken = self._cut_after, self._stall_after
            self._cut_after = self._stall_after = None
            return taken

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()


def _handler(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real hub; huggingface_hub pools connections

        def log_message(self, format: str, *args: object) -> None:  # keep pytest output clean
            pass

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def do_GET(self) -> None:
            self._serve(body=True)

        def _request(self, path: str, bytes_sent: int, status: int) -> Request:
            return Request(
                self.command,
                path,
                self.headers.get("Range"),
                bytes_sent,
                status,
                self.headers.get("Host", ""),
                "Authorization" in self.headers,
            )

        def _serve(self, body: bool) -> None:
            path = urlsplit(self.path).path
            file: HubFile | None = None
            if match := _RESOLVE.match(path):
                file = hub.files.get((match["repo"], unquote(match["filename"])))
                if file is not None and file.lfs:
                    return self._redirect(path, file)
            elif match := _CDN.match(path):
                file = next((f for f in hub.files.values() if f.lfs and sha256(f.data) == match["key"]), None)
            if file is None:
                hub._log(self._request(path, 0, 404))
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("X-Error-Message", "Entry not found")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._send(path, file, body)

        def _redirect(self, path: str, file: HubFile) -> None:
            # As the hub answers for an LFS file: the metadata rides on the redirect to the CDN.
            hub._log(self._request(path, 0, 302))
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{hub.port}/cdn/{sha256(file.data)}")
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("X-Linked-Etag", f'"{file.etag}"')
            self.send_header("X-Linked-Size", str(len(file.data)))
            self.send_header("ETag", '"0000000000000000000000000000000000000000"')  # the pointer file's
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _send(self, path: str, file: HubFile, body: bool) -> None:
            data = file.data
            range_header = self.headers.get("Range")
            start, end = 0, len(data) - 1
            status = 200
            if body and range_header and (m := _RANGE.match(range_header)):
                start = int(m[1])
                end = int(m[2]) if m[2] else end
                status = 206
            chunk = data[start : end + 1]
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(chunk)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", f'"{file.etag}"')
            if not file.lfs:
                self.send_header("X-Repo-Commit", COMMIT)
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.end_headers()
            if not body:
                hub._log(self._request(path, 0, status))
                return
            cut, stall = hub._take()
            if cut is not None and cut < len(chunk):
                self.wfile.write(chunk[:cut])
                self.wfile.flush()
                hub._log(self._request(path, cut, status))
                # Promised Content-Length, delivered less: the client sees a dropped connection.
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            sent = 0
            try:
                if stall is not None:
                    self.wfile.write(chunk[:stall])
                    self.wfile.flush()
                    sent = min(stall, len(chunk))
                    while sent < len(chunk) and not hub._closing.is_set():
                        time.sleep(TRICKLE_PAUSE_S)
                        self.wfile.write(chunk[sent : sent + TRICKLE_BYTES])
                        self.wfile.flush()
                        sent = min(sent + TRICKLE_BYTES, len(chunk))
                else:
                    self.wfile.write(chunk)
                    sent = len(chunk)
            except OSError:  # the client went away (killed) mid-file
                self.close_connection = True
            hub._log(self._request(path, sent, status))

    return Handler
