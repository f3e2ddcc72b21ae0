"""`tansaku session read`: a transcript session's messages, in place, bounded."""

from __future__ import annotations

import argparse
from typing import Any

from .common import Output, add_format_options, add_index_option, api_for
from .search import positive_int


def register(commands: Any) -> None:
    group = commands.add_parser("session", help="read agent session transcripts (claude, codex collections)")
    add_index_option(group)
    sub = group.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True

    read = sub.add_parser(
        "read", help="a session's messages with ids, roles, times and source lines (redacted unless --raw)"
    )
    read.add_argument(
        "session",
        metavar="SESSION",
        help="a session id (or a unique prefix), or its tansaku:// or COLLECTION/PATH path",
    )
    read.add_argument(
        "--from-line", type=positive_int, default=1, metavar="N", help="start at line N of the source file"
    )
    read.add_argument("--limit", type=positive_int, metavar="K", help="at most K messages (default 50)")
    read.add_argument(
        "--run", type=int, metavar="R", help="only run R (a prompt and what followed; 0: before the first)"
    )
    read.add_argument(
        "--max-bytes",
        type=positive_int,
        metavar="B",
        help="at most B bytes of message text (default 65536); messages are never cut, the page ends before",
    )
    read.add_argument(
        "--raw",
        action="store_true",
        help="the source file's own text, secrets included (read from disk again)",
    )
    read.add_argument("--full-path", action="store_true", help="show the disk path")
    add_index_option(read)
    add_format_options(read)
    read.set_defaults(handler=_read)


def _read(args: argparse.Namespace, out: Output) -> int:
    result = api_for(args).read_session(
        args.session,
        from_line=args.from_line,
        limit=args.limit,
        run=args.run,
        max_bytes=args.max_bytes,
        raw=args.raw,
    )
    out.render(result, full_path=args.full_path)
    return 0
