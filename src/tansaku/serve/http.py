"""HTTP: MCP Streamable HTTP at /mcp and plain JSON endpoints, on starlette + uvicorn (the stack
the MCP SDK brings), behind guard.Guard.

JSON endpoints answer what the CLI prints with ``--json``: the same data on success, and the
same ``{"error": {...}}`` object on failure, with an HTTP status chosen from the error's exit
code (not found 404, bad input 400, index unusable 503).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import __version__
from ..errors import TansakuError, UsageError
from . import connections, guard, page
from .requests import DEFAULT_DEADLINE_S, Service, split_shown

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8181
_STATUS_BY_EXIT = {1: 404, 2: 400, 3: 503, 4: 500}
_STATUS_BY_CODE = {"PATH_REFUSED": 403, "REQUEST_TIMEOUT": 503}


class PortInUse(TansakuError):
    code = "PORT_IN_USE"
    exit_code = 4


class RemoteRefused(TansakuError):
    code = "REMOTE_REFUSED"
    exit_code = 2


@dataclass(frozen=True)
class Settings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allow_remote: bool = False
    token: str | None = None
    mode: str = "foreground"  # or "daemon": said by /health and on start
    deadline_s: float = DEFAULT_DEADLINE_S  # a request's work stops here (REQUEST_TIMEOUT)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def check_settings(settings: Settings) -> Settings:
    """Refuse a network-facing server without --allow-remote, and without a token at all."""
    token = settings.token if settings.token is not None else (os.environ.get(guard.TOKEN_ENV) or None)
    if not guard.is_loopback(settings.host):
        if not settings.allow_remote:
            raise RemoteRefused(
                f"{settings.host} is not a loopback address: your documents would be served to the network",
                hint=f"add --allow-remote and set {guard.TOKEN_ENV}, or bind 127.0.0.1",
            )
        if not token or len(token) < guard.MIN_REMOTE_TOKEN_CHARS:
            said = (
                f"needs a token of at least {guard.MIN_REMOTE_TOKEN_CHARS} characters"
                if token
                else "needs a bearer token"
            )
            raise RemoteRefused(
                f"--allow-remote {said}: set {guard.TOKEN_ENV}",
                hint=f"for example this one, made now: export {guard.TOKEN_ENV}={guard.new_token()}",
            )
    return replace(settings, token=token)


def bind(settings: Settings, in_use_by: Callable[[int], str]) -> socket.socket:
    """The listening socket, bound before the app starts so a busy port is our clear error."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((settings.host, settings.port))
    except OSError as exc:
        sock.close()
        raise PortInUse(
            f"cannot listen on {settings.host}:{settings.port}: {exc.strerror}{in_use_by(settings.port)}",
            hint="choose another --port, or stop what uses it",
            port=settings.port,
        ) from exc
    if family in (socket.AF_INET, socket.AF_INET6):
        # Accepted connections inherit this. Given a socket, uvicorn leaves Nagle on, and a
        # keep-alive client then waits ~40 ms (delayed ACK) for every response's second write.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(128)
    return sock


def _error(exc: TansakuError, service: Service) -> JSONResponse:
    status = _STATUS_BY_CODE.get(exc.code, _STATUS_BY_EXIT.get(exc.exit_code, 400))
    return JSONResponse(service.error_data(exc), status_code=status)


async def _json_body(request: Request) -> dict[str, Any]:
    if not request.headers.get("content-type", "").lower().startswith("application/json"):
        # A web page can POST text/plain without a preflight; JSON always needs one.
        raise UsageError("send the request as JSON (Content-Type: application/json)")
    body = await request.body()  # read within the limit by the guard, which answers 413 past it
    try:
        data = json.loads(body or b"{}")
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"the body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError("the body must be a JSON object")
    return data


def _endpoint(
    service: Service, operation: str, read: Callable[[Request], Awaitable[dict[str, Any]]]
) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        try:
            fields, shown_fields = split_shown(operation, await read(request))
            answer = await _unless_gone(request, service.run(operation, fields, shown_fields))
        except TansakuError as exc:
            return _error(exc, service)
        if answer is None:  # the client went away: its work was stopped, and nobody reads a reply
            return Response(status_code=499)
        return JSONResponse(answer.data)

    return handle


async def _unless_gone(request: Request, work: Awaitable[Any]) -> Any:
    """``work``'s result, or None as soon as the client disconnects (which cancels the work)."""
    import anyio

    result: list[Any] = []
    failed: list[TansakuError] = []

    async def run_work() -> None:
        try:
            result.append(await work)
        except TansakuError as exc:  # raised below, not as a task group's ExceptionGroup
            failed.append(exc)
        group.cancel_scope.cancel()

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(run_work)
        group.start_soon(watch)
    if failed:
        raise failed[0]
    return result[0] if result else None


async def _query_params(request: Request) -> dict[str, Any]:
    return dict(request.query_params)


async def _nothing(request: Request) -> dict[str, Any]:
    return {}


def routes(service: Service, settings: Settings) -> list[Route]:
    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "pid": os.getpid(), "version": __version__, "mode": settings.mode})

    post = ["POST"]
    return [
        Route("/health", health, methods=["GET"]),
        Route("/status", _endpoint(service, "status", _nothing), methods=["GET"]),
        Route("/get", _endpoint(service, "get", _query_params), methods=["GET"]),
        Route("/session", _endpoint(service, "session", _query_params), methods=["GET"]),
        Route("/models", _endpoint(service, "models", _nothing), methods=["GET"]),
        Route("/search", _endpoint(service, "search", _json_body), methods=post),
        Route("/vsearch", _endpoint(service, "vsearch", _json_body), methods=post),
        Route("/query", _endpoint(service, "query", _json_body), methods=post),
        Route("/multi-get", _endpoint(service, "multi_get", _json_body), methods=post),
        *page.page_routes(),
    ]


def app(service: Service, settings: Settings) -> guard.Guard:
    from mcp.server.transport_security import TransportSecuritySettings

    from .mcp import build

    server = build(service)
    inner = server.streamable_http_app(
        streamable_http_path="/mcp",
        # Guard checks Host and Origin for every route (with 403, the SDK's own check answers 421).
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=guard.MAX_BODY_BYTES,
        session_idle_timeout=connections.MCP_SESSION_IDLE_S,
        max_sessions=connections.MAX_MCP_SESSIONS,
        host=settings.host,
        custom_starlette_routes=routes(service, settings),
    )
    hosts = None if guard.is_wildcard(settings.host) else guard.allowed_hosts(settings.host, settings.port)
    return guard.Guard(inner, hosts=hosts, token=settings.token)


def banner(service: Service, settings: Settings) -> str:
    api = service.api
    stop = "`tansaku mcp stop`" if settings.mode == "daemon" else "Ctrl-C (or SIGTERM)"
    lines = [
        f"tansaku {__version__} serving on {settings.url} (pid {os.getpid()}, {settings.mode})",
        f"  search page: {settings.url}/",
        f"  MCP (Streamable HTTP): {settings.url}/mcp",
        "  JSON: POST /search /vsearch /query /multi-get, GET /get /session /status /models /health",
        f"  config: {api.config_path}",
        f"  index:  {api.backend.location}",
        f"  stop:   {stop}",
    ]
    if settings.token:
        lines.append(f"  requests need: Authorization: Bearer ${guard.TOKEN_ENV}")
    return "\n".join(lines) + "\n"


# The server runs requests side by side, a worker per core. A vector search whose product is
# also split over every core by numpy's OpenBLAS only waits on the others' threads, which spin:
# 22 ms of CPU per vsearch with OpenBLAS's 2 threads, 14 ms with 1 (in process, 10,000 files,
# 53,991 vectors; wall time 11 against 14 ms with nothing else running).
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> None:
    """One OpenBLAS thread unless the user set their own; read when numpy first loads, so this
    must run before any request (numpy is not imported until a vector search needs it)."""
    os.environ.setdefault(BLAS_THREADS_ENV, "1")


def serve(
    index_name: str | None,
    settings: Settings,
    in_use_by: Callable[[int], str],
    *,
    open_page: bool = False,
) -> None:
    """Run in the foreground until SIGINT or SIGTERM; with ``open_page``, open the search page in
    the browser once the port is bound (a request that comes first waits in the listen queue)."""
    import uvicorn

    one_blas_thread()

    settings = check_settings(settings)
    sock = bind(settings, in_use_by)
    if settings.port == 0:  # the OS chose one: say which
        settings = replace(settings, port=sock.getsockname()[1])
    if not guard.is_loopback(settings.host):
        sys.stderr.write(
            f"warning: serving {settings.host} beyond this machine; every request needs the bearer token\n"
        )
    service = Service(index_name, deadline_s=settings.deadline_s)
    application = app(service, settings)
    sys.stdout.write(banner(service, settings))
    sys.stdout.flush()
    if open_page:
        from .browser import open_page_soon

        open_page_soon(settings.url + "/")
    config = uvicorn.Config(
        application,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=3,
        access_log=False,
        http=connections.protocol_class(),
        timeout_keep_alive=int(connections.KEEP_ALIVE_S),
        limit_concurrency=connections.MAX_CONNECTIONS,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        service.api.close()
