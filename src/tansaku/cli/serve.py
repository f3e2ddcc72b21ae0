"""`tansaku mcp`: the MCP server over stdio, or HTTP (foreground or daemon), and the daemon's
status and stop. Parsing and printing only; the servers live in tansaku.serve, imported by the
handlers so that no other command pays for the MCP SDK, starlette or uvicorn."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from .common import Output, add_format_options, add_index_option

DEFAULT_HOST = "127.0.0.1"  # kept in step with serve/http.py (a test checks), not imported
DEFAULT_PORT = 8181
DEFAULT_REQUEST_TIMEOUT_S = 30.0  # kept in step with serve/requests.py (a test checks), not imported


def register(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve MCP to agents (stdio), or MCP and a JSON API over HTTP (--http); read-only",
        description="Without an action: serve MCP over stdio (what an agent's config runs). "
        "With --http: serve MCP Streamable HTTP at /mcp and JSON endpoints, in the foreground or, "
        "with --daemon, in the background. `mcp status` and `mcp stop` manage the daemon.",
    )
    mcp.add_argument(
        "action",
        nargs="?",
        choices=("status", "stop"),
        help="status: is the daemon running; stop: stop the daemon this index started",
    )
    mcp.add_argument("--http", action="store_true", help="serve HTTP instead of stdio")
    mcp.add_argument("--host", default=DEFAULT_HOST, help=f"--http: address to bind (default {DEFAULT_HOST})")
    mcp.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"--http: port (default {DEFAULT_PORT}; 0 = any free)",
    )
    mcp.add_argument(
        "--daemon",
        action="store_true",
        help="--http: run in the background (pid and log in the cache folder)",
    )
    mcp.add_argument(
        "--allow-remote",
        action="store_true",
        help="--http: allow a non-loopback --host; needs a bearer token in TANSAKU_HTTP_TOKEN",
    )
    mcp.add_argument(
        "--request-timeout",
        type=_seconds,
        default=DEFAULT_REQUEST_TIMEOUT_S,
        metavar="SECONDS",
        help=f"--http: a request's work stops after this long, with REQUEST_TIMEOUT "
        f"(default {DEFAULT_REQUEST_TIMEOUT_S:g})",
    )
    # Set on the command the daemon runs, so that it says what it is.
    mcp.add_argument("--as-daemon", action="store_true", help=argparse.SUPPRESS)
    add_index_option(mcp)
    add_format_options(mcp, ("cli", "json"))
    mcp.set_defaults(handler=_mcp)


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be 0 to 65535")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("must be more than 0 and at most 3600")
    return value


def _require_server_stack() -> None:
    """A clear error when the server's libraries are missing (an install made with --no-deps)."""
    from importlib.util import find_spec

    from ..errors import UsageError

    missing = [name for name in ("mcp", "starlette", "uvicorn") if find_spec(name) is None]
    if missing:
        raise UsageError(
            f"`tansaku mcp` needs {', '.join(missing)}, which this installation lacks",
            hint="pip install 'tansaku[serve]' (or reinstall tansaku with its dependencies)",
        )


def _mcp(args: argparse.Namespace, out: Output) -> int:
    from ..errors import UsageError

    index = getattr(args, "index", None)
    if args.action:
        from ..serve import daemon

        info = daemon.status(index) if args.action == "status" else daemon.stop(index)
        out.render(dataclasses.asdict(info))
        return 0 if args.action == "stop" or info.running else 1
    if not args.http:
        given = [f for f, on in (("--daemon", args.daemon), ("--allow-remote", args.allow_remote)) if on]
        if given:
            raise UsageError(f"{', '.join(given)} needs --http")
        _require_server_stack()
        from ..serve.mcp import run_stdio

        run_stdio(index)
        return 0
    _require_server_stack()
    from ..serve import daemon
    from ..serve.http import Settings, check_settings, serve

    settings = check_settings(
        Settings(
            args.host,
            args.port,
            args.allow_remote,
            mode="daemon" if args.as_daemon else "foreground",
            deadline_s=args.request_timeout,
        )
    )
    if args.daemon:
        if settings.port == 0:
            raise UsageError("--daemon needs a fixed --port", hint=f"the default is {DEFAULT_PORT}")
        argv = ["mcp", "--http", "--host", settings.host, "--port", str(settings.port), "--as-daemon"]
        argv += ["--allow-remote"] if settings.allow_remote else []
        argv += ["--request-timeout", f"{settings.deadline_s:g}"]
        argv += ["--index", index] if index else []
        info = daemon.start(index, argv, settings.url, settings.token)
        lines = [
            f"started the tansaku daemon: {info.url}/mcp (pid {info.pid})",
            f"  log:    {info.log_file}",
            f"  config: {info.config}",
            f"  index:  {info.index}",
            "  stop:   tansaku mcp stop" + (f" --index {index}" if index else ""),
        ]
        out.render({**dataclasses.asdict(info), "message": "\n".join(lines)})
        return 0
    try:
        serve(index, settings, daemon.in_use_by(index))
    except KeyboardInterrupt:
        sys.stderr.write("stopped\n")
    return 0
