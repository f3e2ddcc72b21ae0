"""`tansaku collection ...` and `tansaku ls`."""

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


def register(commands: Any) -> None:
    group = commands.add_parser("collection", help="add, list, show, rename, remove collections")
    add_index_option(group)
    sub = group.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True

    add = sub.add_parser("add", help="register a folder as a collection and index it now")
    add.add_argument(
        "path",
        nargs="?",
        help="the folder to index (required for --type files; claude: ~/.claude/projects, codex: ~/.codex)",
    )
    add.add_argument(
        "--type",
        choices=("files", "claude", "codex"),
        default="files",
        help="files (the default), or agent session transcripts: claude (Claude Code) or codex (Codex CLI)",
    )
    add.add_argument(
        "--no-redact",
        dest="redact",
        action="store_false",
        help="transcripts: index secrets (API keys, tokens, passwords) as they are instead of redacting them",
    )
    add.add_argument(
        "--name", help="collection name (default: the folder's name, or the transcript type); [A-Za-z0-9_-]"
    )
    add.add_argument(
        "--mask",
        action="append",
        default=[],
        metavar="GLOB",
        help="files to index (repeatable; comma lists and {a,b} groups; default **/*.md;"
        " transcripts: **/*.jsonl)",
    )
    add.add_argument(
        "--formats",
        action="append",
        default=[],
        metavar="LIST",
        help="also index these document formats: pdf, html, docx, epub (a comma list; adds their"
        " masks, e.g. **/*.pdf, to --mask or to the default **/*.md; pdf needs the 'docs' extra)",
    )
    add.add_argument("--ignore", action="append", default=[], metavar="GLOB", help="files or folders to skip")
    add.add_argument(
        "--chunk-strategy",
        choices=("regex", "auto"),
        default="regex",
        help="auto: cut code files at definitions (tree-sitter, the 'code' extra); default regex",
    )
    add.add_argument("--dry-run", action="store_true", help="show what would be indexed; change nothing")
    _common(add, _add)

    _common(sub.add_parser("list", help="list collections"), _list)

    show = sub.add_parser("show", help="everything about one collection")
    complete_with(show.add_argument("name"), collection_names)
    _common(show, _show)

    rename = sub.add_parser("rename", help="rename a collection (its contexts follow)")
    complete_with(rename.add_argument("old"), collection_names)
    rename.add_argument("new")
    _common(rename, _rename)

    remove = sub.add_parser(
        "remove", help="unregister a collection and drop its index rows (files untouched)"
    )
    complete_with(remove.add_argument("name"), collection_names)
    _common(remove, _remove)

    include = sub.add_parser("include", help="search this collection again by default")
    complete_with(include.add_argument("name"), collection_names)
    _common(include, lambda args, out: _set_include(args, out, True))

    exclude = sub.add_parser("exclude", help="skip this collection unless -c names it")
    complete_with(exclude.add_argument("name"), collection_names)
    _common(exclude, lambda args, out: _set_include(args, out, False))

    hook = sub.add_parser(
        "set-update", help="set the shell command run before this collection is updated (none: clear)"
    )
    complete_with(hook.add_argument("name"), collection_names)
    hook.add_argument("cmd", nargs="?", default=None, help="run with bash -c in the collection folder")
    _common(hook, _set_update)

    strategy = sub.add_parser(
        "set-chunk-strategy",
        help="how this collection's files are chunked: regex, or auto (code at definitions)",
    )
    complete_with(strategy.add_argument("name"), collection_names)
    strategy.add_argument("strategy", choices=("regex", "auto"))
    _common(strategy, _set_chunk_strategy)

    ls = commands.add_parser("ls", help="list collections, or the files of COLLECTION[/SUB]")
    complete_with(ls.add_argument("target", nargs="?", metavar="COLLECTION[/SUB]"), collection_names)
    _common(ls, _ls)


def _common(parser: argparse.ArgumentParser, handler: Any) -> None:
    add_index_option(parser)
    add_format_options(parser, ADMIN_FORMATS)
    parser.set_defaults(handler=handler)


def _add(args: argparse.Namespace, out: Output) -> int:
    if args.type == "files" and args.path is None:
        from ..errors import UsageError

        raise UsageError(
            "collection add needs a PATH", hint="give the folder to index, or --type claude|codex"
        )
    if args.type != "files" and args.formats:
        from ..errors import UsageError

        raise UsageError("--formats is for folders of files, not transcripts", hint="leave out --formats")
    progress = DelayedProgress(enabled=sys.stdout.isatty() and out.fmt == "cli")
    if args.type != "files":
        try:
            report = api_for(args).add_transcript_collection(
                args.type,
                args.path,
                name=args.name,
                masks=args.mask,
                ignore=args.ignore,
                redact=args.redact,
                dry_run=args.dry_run,
                progress=progress,
            )
        finally:
            progress.close()
        out.render(report)
        return 0 if report.ok else 4
    try:
        report = api_for(args).add_collection(
            args.path,
            name=args.name,
            masks=args.mask,
            ignore=args.ignore,
            chunk_strategy=args.chunk_strategy,
            dry_run=args.dry_run,
            progress=progress,
            formats=args.formats,
        )
    finally:
        progress.close()
    out.render(report)
    return 0 if report.ok else 4


def _list(args: argparse.Namespace, out: Output) -> int:
    out.render(api_for(args).collections())
    return 0


def _show(args: argparse.Namespace, out: Output) -> int:
    out.render(api_for(args).collection(args.name))
    return 0


def _rename(args: argparse.Namespace, out: Output) -> int:
    collection = api_for(args).rename_collection(args.old, args.new)
    out.render(
        {"renamed": args.old, "to": collection.name, "message": f"renamed {args.old} to {collection.name}"}
    )
    return 0


def _remove(args: argparse.Namespace, out: Output) -> int:
    removed = api_for(args).remove_collection(args.name)
    out.render(
        {
            "removed": args.name,
            "documents": removed,
            "message": f"removed collection {args.name} ({removed} documents dropped from the index; "
            "files untouched)",
        }
    )
    return 0


def _set_include(args: argparse.Namespace, out: Output, include: bool) -> int:
    api_for(args).set_include(args.name, include)
    state = "included in" if include else "excluded from"
    out.render(
        {"collection": args.name, "include": include, "message": f"{args.name} is {state} unscoped searches"}
    )
    return 0


def _set_update(args: argparse.Namespace, out: Output) -> int:
    collection = api_for(args).set_update_command(args.name, args.cmd)
    message = (
        f"{args.name}: before each update, run: {collection.update}"
        if collection.update
        else f"{args.name}: update hook cleared"
    )
    out.render({"collection": args.name, "update": collection.update, "message": message})
    return 0


def _set_chunk_strategy(args: argparse.Namespace, out: Output) -> int:
    api_for(args).set_chunk_strategy(args.name, args.strategy)
    message = f"{args.name}: chunk strategy {args.strategy}; the next `tansaku update` re-chunks its files"
    out.render({"collection": args.name, "chunk_strategy": args.strategy, "message": message})
    return 0


def _ls(args: argparse.Namespace, out: Output) -> int:
    out.render(api_for(args).ls(args.target))
    return 0
