"""A loopback stand-in for the Hugging Face hub, for tests that must not leave the machine.

It answers the two requests huggingface_hub's ``hf_hub_download`` makes for a plain (non-Xet)
file: ``HEAD /{owner}/{repo}/resolve/{revision}/{filename}`` for the metadata (``X-Repo-Commit``,
``ETag``, ``Content-Length``) and ``GET`` of the same URL, honouring ``Range`` for resumed
downloads. Every request is logged, so tests can assert what was (or was not) asked for, and a
download can be cut after N bytes once to exercise the resume path.
"""

from __future__ import annotations

import hashlib
import re
import socket
import struct
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<filename>.+)$")
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


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


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None
    bytes_sent: int


class HubServer:
    """``with HubServer() as hub: hub.add("owner/repo", "f.gguf", data); hub.endpoint``."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], bytes] = {}
        self.requests: list[Request] = []
        self._cut_after: int | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, repo_id: str, filename: str, data: bytes) -> None:
        self.files[(repo_id, filename)] = data

    def cut_next_download(self, after_bytes: int) -> None:
        """Drop the connection of the next GET after sending ``after_bytes`` of the body."""
        self._cut_after = after_bytes

    def downloads(self) -> list[Request]:
        return [r for r in self.requests if r.method == "GET"]

    def _log(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _take_cut(self) -> int | None:
        with self._lock:
            cut, self._cut_after = self._cut_after, None
            return cut

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
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

        def _serve(self, body: bool) -> None:
            path = urlsplit(self.path).path
            range_header = self.headers.get("Range")
            match = _RESOLVE.match(path)
            data = hub.files.get((match["repo"], unquote(match["filename"]))) if match else None
            if data is None:
                hub._log(Request(self.command, path, range_header, 0))
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("X-Error-Message", "Entry not found")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
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
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("X-Repo-Commit", COMMIT)
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.end_headers()
            if not body:
                hub._log(Request(self.command, path, range_header, 0))
                return
            cut = hub._take_cut()
            if cut is not None and cut < len(chunk):
                self.wfile.write(chunk[:cut])
                self.wfile.flush()
                hub._log(Request(self.command, path, range_header, cut))
                # Promised Content-Length, delivered less: the client sees a dropped connection.
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.wfile.write(chunk)
            hub._log(Request(self.command, path, range_header, len(chunk)))

    return Handler
