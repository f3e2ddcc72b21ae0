"""`tansaku update`, `tansaku status`, `tansaku context ...`, `tansaku completion SHELL`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import (
    DelayedProgress,
    Output,
    add_format_options,
    add_index_option,
    api_for,
    collection_names,
    complete_with,
)

ADMIN_FORMATS = ("cli", "json")
SHELLS = ("bash", "zsh", "fish")
# How each shell's start-up file loads the code `tansaku completion SHELL` prints.
_LOAD_COMPLETION = (
    'eval "$(tansaku completion bash)"  # in ~/.bashrc',
    'eval "$(tansaku completion zsh)"  # in ~/.zshrc, after compinit',
    "tansaku completion fish | source  # in ~/.config/fish/config.fish",
)


def register(commands: Any) -> None:
    update = commands.add_parser("update", help="re-index collections (runs their pre-update hooks first)")
    complete_with(
        update.add_argument(
            "-c",
            "--collection",
            action="append",
            default=[],
            dest="collections",
            metavar="NAME",
            help="only this collection (repeatable); default: all",
        ),
        collection_names,
    )
    update.add_argument(
        "--dry-run", action="store_true", help="show what would change and which hooks would run"
    )
    update.add_argument(
        "--watch",
        action="store_true",
        help="stay in the foreground and update again whenever files of the collections change"
        " (Ctrl-C stops; needs the watch extra)",
    )
    update.add_argument(
        "--chunk-strategy",
        choices=("regex", "auto"),
        help="chunk with this strategy from now on (saved as the updated collections' setting)",
    )
    _common(update, _update)

    _common(commands.add_parser("status", help="index health and what is pending (read-only)"), _status)

    context = commands.add_parser("context", help="notes that tell a reader what a folder is")
    add_index_option(context)
    sub = context.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    add = sub.add_parser("add", help="attach TEXT to PATH ('/', '.', COLLECTION/SUB or tansaku://...)")
    add.add_argument("args", nargs="+", metavar="[PATH] TEXT")
    _common(add, _context_add)
    _common(sub.add_parser("list", help="all contexts, most general first"), _context_list)
    rm = sub.add_parser("rm", help="remove the context at PATH")
    rm.add_argument("path")
    _common(rm, _context_rm)
    _common(
        sub.add_parser("check", help="collections and top-level folders without a context"), _context_check
    )

    # Here rather than in a module of its own: every module main() imports costs each search
    # about 0.4 ms to load, and this command needs no more than a parser entry.
    completion = commands.add_parser(
        "completion",
        help="print the code that turns on Tab completion in bash, zsh or fish",
        description="Print the code that makes SHELL complete tansaku's commands, options, option\n"
        "values and collection names. Load it from the shell's start-up file:\n\n"
        + "\n".join(f"  {line}" for line in _LOAD_COMPLETION),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    completion.add_argument("shell", choices=SHELLS, help="the shell to print code for")
    completion.set_defaults(handler=_completion)


def _common(parser: argparse.ArgumentParser, handler: Any) -> None:
    add_index_option(parser)
    add_format_options(parser, ADMIN_FORMATS)
    parser.set_defaults(handler=handler)


def _update(args: argparse.Namespace, out: Output) -> int:
    if args.watch:
        return _watch(args, out)
    progress = DelayedProgress(enabled=sys.stdout.isatty() and out.fmt == "cli")
    try:
        report = api_for(args).update(
            args.collections, dry_run=args.dry_run, progress=progress, chunk_strategy=args.chunk_strategy
        )
    finally:
        progress.close()
    out.render(report)
    return 0 if report.ok else 4


def _watch(args: argparse.Namespace, out: Output) -> int:
    from ..errors import UsageError

    if args.dry_run or args.chunk_strategy:
        raise UsageError("--watch takes neither --dry-run nor --chunk-strategy")
    api = api_for(args)
    if out.fmt == "cli":
        out.stderr.write("watching for changes; Ctrl-C stops\n")
        out.stderr.flush()
    runs = api.watch(args.collections, on_update=lambda report: _emit(report, out))
    if out.fmt == "cli":
        out.stderr.write(f"stopped watching after {runs} update{'s' if runs != 1 else ''}\n")
    return 0


def _emit(report: Any, out: Output) -> None:
    """One report per update; in JSON one object per line, so that a reader can follow the stream."""
    if out.fmt != "json":
        out.render(report)
        return
    import json

    from ..render import render

    out.stdout.write(json.dumps(json.loads(render(report, "json")), ensure_ascii=False) + "\n")
    out.stdout.flush()


def _status(args: argparse.Namespace, out: Output) -> int:
    out.render(api_for(args).status())
    return 0


def _context_add(args: argparse.Namespace, out: Output) -> int:
    if len(args.args) == 1:
        path, text = ".", args.args[0]
    elif len(args.args) == 2:
        path, text = args.args
    else:
        from ..errors import UsageError

        raise UsageError("context add takes [PATH] TEXT: quote the text if it has spaces")
    context = api_for(args).add_context(path, text)
    out.render({"path": context.path, "text": context.text, "message": f"context set for {context.path}"})
    return 0


def _context_list(args: argparse.Namespace, out: Output) -> int:
    out.render(api_for(args).contexts())
    return 0


def _context_rm(args: argparse.Namespace, out: Output) -> int:
    context = api_for(args).remove_context(args.path)
    out.render({"path": context.path, "removed": True, "message": f"removed the context at {context.path}"})
    return 0


def _context_check(args: argparse.Namespace, out: Output) -> int:
    missing = api_for(args).check_contexts()
    if missing:
        message = "no context yet for:\n" + "\n".join(f"  {p}" for p in missing)
        message += "\nadd one with `tansaku context add PATH TEXT`"
    else:
        message = "every collection and top-level folder has a context"
    out.render({"missing": missing, "message": message})
    return 0


def _completion(args: argparse.Namespace, out: Output) -> int:
    # The answering side is main.complete(); this only prints what makes the shell call it.
    import argcomplete

    out.stdout.write(argcomplete.shellcode(["tansaku"], shell=args.shell))
    out.stdout.flush()
    return 0
