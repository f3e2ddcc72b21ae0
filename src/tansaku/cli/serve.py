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
    mcp.add_argument(
        "--open",
        action="store_true",
        help="--http: open the search page in the browser once the server answers",
    )
    # Set on the command the daemon runs, so that it says what it is.
    mcp.add_argument("--as-daemon", action="store_true", help=argparse.SUPPRESS)
    add_index_option(mcp)
    add_format_options(mcp, ("cli", "json"))
    mcp.set_defaults(handler=_mcp)

    ui = commands.add_parser(
        "ui",
        help="open the search page in the browser (starts the server, a daemon, if none runs for this index)",
        description="Print the search page's address and open it in the browser (Python's webbrowser:"
        " BROWSER, else the system's). The daemon that `tansaku mcp --http --daemon` starts is used"
        " when it runs for this index; otherwise one is started on --port, and keeps serving until"
        " `tansaku mcp stop`.",
    )
    ui.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"the port of a server it starts (default {DEFAULT_PORT}); a running daemon keeps its own",
    )
    ui.add_argument("--no-open", action="store_true", help="print the address only; open no browser")
    add_index_option(ui)
    add_format_options(ui, ("cli", "json"))
    ui.set_defaults(handler=_ui)


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


def _shown(index: str | None) -> str | None:
    """``--index`` as a command shown to people may repeat it: a database URL without its
    password (libpq reads it from PGPASSWORD or ~/.pgpass), quoted for the shell (``?``, ``&``)."""
    from ..store.backend import is_database_url

    if not is_database_url(index):
        return index
    import shlex

    from ..store.postgres.connection import password_apart

    assert index is not None
    return shlex.quote(password_apart(index)[0])


def _mcp(args: argparse.Namespace, out: Output) -> int:
    from ..errors import UsageError

    index = getattr(args, "index", None)
    if args.action:
        from ..serve import daemon

        info = daemon.status(index) if args.action == "status" else daemon.stop(index)
        out.render(dataclasses.asdict(info))
        return 0 if args.action == "stop" or info.running else 1
    if not args.http:
        flags = (("--daemon", args.daemon), ("--allow-remote", args.allow_remote), ("--open", args.open))
        given = [f for f, on in flags if on]
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
        info = daemon.start(index, _daemon_argv(settings, index), settings.url, settings.token)
        lines = [
            f"started the tansaku daemon: {info.url}/mcp (pid {info.pid})",
            f"  search page: {info.url}/",
            f"  log:    {info.log_file}",
            f"  config: {info.config}",
            f"  index:  {info.index}",
            "  stop:   tansaku mcp stop" + (f" --index {_shown(index)}" if index else ""),
        ]
        opened = _open(f"{info.url}/", args.open)
        if opened is not None:
            lines.append(_opened_line(opened))
        out.render({**dataclasses.asdict(info), "opened": opened, "message": "\n".join(lines)})
        return 0
    try:
        serve(index, settings, daemon.in_use_by(index), open_page=args.open)
    except KeyboardInterrupt:
        sys.stderr.write("stopped\n")
    return 0


def _daemon_argv(settings: Any, index: str | None) -> list[str]:
    """The foreground server's command line that the daemon runs."""
    from ..errors import UsageError

    if settings.port == 0:
        raise UsageError(
            "a server in the background needs a fixed --port", hint=f"the default is {DEFAULT_PORT}"
        )
    argv = ["mcp", "--http", "--host", settings.host, "--port", str(settings.port), "--as-daemon"]
    argv += ["--allow-remote"] if settings.allow_remote else []
    argv += ["--request-timeout", f"{settings.deadline_s:g}"]
    argv += ["--index", index] if index else []
    return argv


def _open(url: str, wanted: bool) -> bool | None:
    """Whether a browser took the page (None: not asked to open one)."""
    if not wanted:
        return None
    from ..serve.browser import open_page

    return open_page(url)


def _opened_line(opened: bool) -> str:
    return (
        "  opened in your browser"
        if opened
        else "  no browser could be opened here: open the address yourself"
    )


def _ui(args: argparse.Namespace, out: Output) -> int:
    _require_server_stack()
    from ..serve import daemon
    from ..serve.http import Settings, check_settings

    index = getattr(args, "index", None)
    stop = "tansaku mcp stop" + (f" --index {_shown(index)}" if index else "")
    running, found = daemon.running(index), None
    if running is not None:
        pid, base = running["pid"], str(running.get("url"))
        how = f"the tansaku daemon already serving this index (pid {pid}; stop: `{stop}`)"
    else:
        settings = check_settings(
            Settings(DEFAULT_HOST, args.port, mode="daemon", deadline_s=DEFAULT_REQUEST_TIMEOUT_S)
        )
        found = _server_on_port(settings, index)
        if found is not None:
            pid, base = found.pid, settings.url
            how = f"the tansaku server already serving this index there (pid {pid}, {found.mode})"
        else:
            info = daemon.start(index, _daemon_argv(settings, index), settings.url, settings.token)
            pid, base = info.pid, str(info.url)
            how = f"started the tansaku daemon (pid {pid}; log: {info.log_file}; stop: `{stop}`)"
    url = f"{base}/"
    opened = _open(url, not args.no_open)
    lines = [f"search page: {url}", f"  {how}"] + ([] if opened is None else [_opened_line(opened)])
    started = running is None and found is None
    out.render({"url": url, "pid": pid, "started": started, "opened": opened, "message": "\n".join(lines)})
    return 0


def _server_on_port(settings: Any, index: str | None) -> Any:
    """A tansaku server (say one in the foreground) already on the port: used when it serves this
    index; one serving another index is a clear error, not a daemon that fails to bind."""
    from ..serve.daemon import served_index
    from ..serve.http import PortInUse
    from ..serve.locate import tansaku_at

    found = tansaku_at(settings.url, settings.token)
    if found is None:
        return None
    if found.index == served_index(index):
        return found
    raise PortInUse(
        f"port {settings.port} is taken by the tansaku server of another index"
        f" ({found.index}, pid {found.pid})",
        hint="choose another --port for this index's page",
        port=settings.port,
    )
