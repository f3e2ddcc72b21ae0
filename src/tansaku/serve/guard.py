"""What a server refuses before any request reaches the index.

- References that point outside every collection (``..``, absolute or home paths): ``get`` reads
  stored text only, but a server must not even resolve a caller's disk path.
- HTTP requests from a web page (a foreign ``Origin``), through DNS rebinding (a ``Host`` other
  than the bound one), without the bearer token where one is required, or with an oversized body.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from ..errors import TansakuError
from ..paths import VIRTUAL_PREFIX

MAX_BODY_BYTES = 1024 * 1024  # far above any query or pattern; enough to stop a memory flood
TOKEN_ENV = "TANSAKU_HTTP_TOKEN"
# A token guessed online at a thousand tries a second: 32 characters of [A-Za-z0-9_-] are 192 bits.
MIN_REMOTE_TOKEN_CHARS = 32

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

# /health, and the page's files (page.PUBLIC_PATHS, not imported: that module needs starlette).
_TOKENLESS_PATHS = frozenset(
    {"/health", "/", "/page/app.js", "/page/app.css", "/favicon.svg", "/favicon.ico"}
)
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


class PathRefused(TansakuError):
    code = "PATH_REFUSED"
    exit_code = 2


def check_ref(ref: str) -> str:
    """``ref`` unchanged if it can only name an indexed document; PATH_REFUSED otherwise."""
    text = ref.strip()
    rest = text[len(VIRTUAL_PREFIX) :] if text.startswith(VIRTUAL_PREFIX) else text
    parts = rest.replace("\\", "/").split("/")
    if text.startswith(("/", "~", "\\")) or _DRIVE.match(text) or ".." in parts or "\x00" in text:
        raise PathRefused(
            f"refused {ref!r}: a server reads only indexed documents, by virtual path, "
            "collection-relative path or docid",
            hint="use tansaku://COLLECTION/PATH or #docid (see the search results)",
        )
    return ref


def check_refs(pattern: str) -> str:
    from ..retrieve.get import split_comma_list

    for item in split_comma_list(pattern):
        check_ref(item)
    return pattern


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("0.0.0.0", "::", "")


def allowed_hosts(host: str, port: int) -> set[str]:
    """The Host headers that name this server (a browser tricked by DNS rebinding sends another)."""
    names = {host, f"[{host}]" if ":" in host else host}
    if is_loopback(host):
        names |= {"localhost", "127.0.0.1", "[::1]"}
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:
        hosts |= names
    return hosts


def loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.hostname is not None and is_loopback(parts.hostname)


def _reply(status: int, code: str, message: str) -> Callable[[Send], Awaitable[None]]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()

    async def send_it(send: Send) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return send_it


class Guard:
    """ASGI middleware in front of every route, /mcp included.

    ``hosts`` None accepts any Host: a server bound to every address cannot know the names it is
    reached by, and there the bearer token (which a rebinding page cannot send) is the defence.
    """

    def __init__(
        self, app: App, *, hosts: set[str] | None, token: str | None, max_body: int = MAX_BODY_BYTES
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.token = token
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = self._refusal(headers, scope.get("path", ""))
        if refusal is not None:
            await refusal(send)
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            await self._too_large(send)
            return
        # The whole body is read here, within the limit, before any route sees it: an oversized
        # chunked body is a 413 on every route (/mcp included), and a body nested too deeply
        # for a JSON parser is refused once, for every route, instead of failing inside one.
        body = await self._read_body(receive)
        if body is None:
            await self._too_large(send)
            return
        if headers.get("content-type", "").lower().startswith("application/json") and too_deep(body):
            await _reply(
                400,
                "USAGE",
                f"the JSON body is nested more than {MAX_JSON_DEPTH} levels deep",
            )(send)
            return
        await self.app(scope, _replay(body, receive), send)

    def _refusal(self, headers: dict[str, str], path: str) -> Callable[[Send], Awaitable[None]] | None:
        origin = headers.get("origin")
        if origin and not loopback_origin(origin):
            return _reply(
                403, "ORIGIN_REFUSED", f"requests from {origin} are refused (not a loopback origin)"
            )
        if self.hosts is not None and headers.get("host", "").lower() not in self.hosts:
            return _reply(403, "HOST_REFUSED", "the Host header does not name this server")
        if (
            self.token is not None
            and path not in _TOKENLESS_PATHS  # /health, and the page, which holds no data
            and not bearer_matches(headers.get("authorization", ""), self.token)
        ):
            return _reply(401, "TOKEN_REQUIRED", f"send Authorization: Bearer <{TOKEN_ENV}>")
        return None

    async def _too_large(self, send: Send) -> None:
        await _reply(413, "BODY_TOO_LARGE", f"request bodies are limited to {self.max_body} bytes")(send)

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The request's body, or None once it passes the limit (a body sent in chunks without a
        length is counted as it arrives)."""
        parts: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(parts)  # the client went away; the route sees an empty body
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body:
                return None
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the buffered body once, then the client's own messages (a
    disconnect, which is how a route learns that its client went away)."""
    sent = False

    async def replayed() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


MAX_JSON_DEPTH = 64  # far deeper than any request's fields; a parser's own limit is about 1,000


def too_deep(body: bytes) -> bool:
    """Whether the JSON body nests arrays and objects deeper than MAX_JSON_DEPTH. Counting the
    brackets first keeps the common case to two C-speed counts."""
    if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH:
        return False
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def new_token() -> str:
    """A fresh token for --allow-remote: 43 URL-safe characters (256 random bits)."""
    return secrets.token_urlsafe(32)


def bearer_matches(authorization: str, token: str) -> bool:
    """``Authorization: Bearer TOKEN``, the scheme in any case (RFC 7235), the token compared in
    constant time."""
    scheme, _, given = authorization.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
