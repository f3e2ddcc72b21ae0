"""Entry point: parse arguments, call the library, render, map errors to exit codes.

argparse (stdlib) rather than a richer framework: a keyword search has to start in well under
150 ms, and every import here is paid by every command. Heavy modules are imported by the command
that needs them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from . import admin, bench, collections, models, search, vectors
from .common import CommandParser, Output, add_index_option

EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tansaku",
        description="Local-first search for your own documents (探索: search).",
        epilog="Run `tansaku COMMAND --help` for a command's options. Docs: docs/cli-reference.md",
    )
    parser.add_argument("--version", action="version", version=f"tansaku {__version__}")
    add_index_option(parser, top_level=True)
    # CommandParser lets search and vsearch take query words that start with - (see common.py).
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    commands.required = True
    collections.register(commands)
    search.register(commands)
    admin.register(commands)
    vectors.register(commands)
    models.register(commands)
    bench.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Output.from_args(args)
    try:
        return int(args.handler(args, out) or 0)
    except KeyboardInterrupt:
        out.error_text("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `tansaku search ... | head` closing the pipe early is not an error worth a traceback.
        sys.stderr.close()
        return 0
    except Exception as exc:  # one place maps errors to messages and exit codes
        from ..errors import TansakuError

        if isinstance(exc, TansakuError):
            out.error(exc)
            return exc.exit_code
        if os.environ.get("TANSAKU_DEBUG"):
            raise
        out.internal_error(exc)
        return EXIT_INTERNAL


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
