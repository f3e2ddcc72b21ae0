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
from types import ModuleType

from .. import __version__
from . import admin, bench, collections, doctor, models, query, search, serve, sessions, skill, vectors
from .common import CommandParser, Output, add_index_option

EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

# The registering modules, in the order their commands are listed by --help.
_GROUPS: tuple[ModuleType, ...] = (
    collections,
    search,
    sessions,
    admin,
    doctor,
    vectors,
    query,
    models,
    bench,
    serve,
    skill,
)
# Which module registers each command. Building all ~40 parsers costs ~13 ms, most of a search's
# start-up, so a run registers only its own command's group (test_startup_cost checks that this
# map names every command).
_COMMAND_GROUPS: dict[str, ModuleType] = {
    "collection": collections,
    "ls": collections,
    "search": search,
    "get": search,
    "multi-get": search,
    "chunks": search,
    "session": sessions,
    "update": admin,
    "status": admin,
    "context": admin,
    "doctor": doctor,
    "embed": vectors,
    "vsearch": vectors,
    "query": query,
    "models": models,
    "bench": bench,
    "mcp": serve,
    "ui": serve,
    "completion": admin,
    "skill": skill,
}


def _command_group(argv: Sequence[str]) -> ModuleType | None:
    """The module that registers the command `argv` runs, or None when every group is needed.

    None for anything but a known command word, optionally after top-level `--index NAME` or
    `--index=NAME`: -h (whose help lists every command), --version, an abbreviated --index, a
    missing command or an unknown word all get the full parser, so that argparse's help and
    error messages (which list the command choices) stay exactly what they were.
    """
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--index":
            if i + 1 < len(argv) and argv[i + 1].startswith("-"):
                return None  # argparse will reject the missing value; let it do so in full
            i += 2
        elif word.startswith("--index="):
            i += 1
        else:
            return _COMMAND_GROUPS.get(word)  # an option such as -h or --version: not a key
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The tansaku parser; given the words to parse, only with the sub-parsers they can reach.

    Without `argv` (docgen, tests) every command is registered.
    """
    parser = CommandParser(
        prog="tansaku",
        description="Local-first search for your own documents (探索: search).",
        epilog="Run `tansaku COMMAND --help` for a command's options. Docs: docs/cli-reference.md",
    )
    parser.add_argument("--version", action="version", version=f"tansaku {__version__}")
    add_index_option(parser, top_level=True)
    # CommandParser lets search and vsearch take query words that start with - (see common.py).
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    commands.required = True
    group = None if argv is None else _command_group(argv)
    for module in (group,) if group is not None else _GROUPS:
        module.register(commands)
    return parser


def complete() -> None:
    """Answer a shell's Tab press (`tansaku completion SHELL` installs the code that asks).

    The shell runs tansaku with `_ARGCOMPLETE` set and the line so far in COMP_LINE;
    argcomplete writes the candidates where the shell reads them and exits the process.
    argcomplete is imported only here, so ordinary commands never load it. The parser is the
    full one: the narrowed parser is chosen from the command word, which is still in COMP_LINE.
    search, vsearch and query sort their words before argparse sees them (CommandParser);
    argcomplete still finds the option being completed after a query word (test_completion).
    """
    import argcomplete

    argcomplete.autocomplete(build_parser())


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None and "_ARGCOMPLETE" in os.environ:
        # Only a real process: a caller passing argv wants its own words run, whatever the env.
        complete()
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words)
    args = parser.parse_args(words)
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
