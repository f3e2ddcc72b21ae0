"""`tansaku search`, `tansaku get`, `tansaku multi-get`."""

from __future__ import annotations

import argparse
from typing import Any

from .. import limits, options
from ..options import MAX_WHOLE_NUMBER, SCRIPT_LIMIT, TERMINAL_LIMIT
from .common import (
    Output,
    add_format_options,
    add_index_option,
    add_query_argument,
    api_for,
    collection_names,
    complete_with,
)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    if value > MAX_WHOLE_NUMBER:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_WHOLE_NUMBER:,}")
    return value


def _score(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def add_result_options(
    parser: argparse.ArgumentParser, *, min_score: float, min_score_help: str, all_help: str
) -> None:
    """The result options every search mode shares (search, vsearch, and later query)."""
    parser.add_argument(
        "-n",
        type=positive_int,
        dest="limit",
        help=f"results to show ({TERMINAL_LIMIT} in cli, {SCRIPT_LIMIT} otherwise)",
    )
    parser.add_argument("--all", action="store_true", help=all_help)
    parser.add_argument("--min-score", type=_score, default=min_score, help=min_score_help)
    parser.add_argument("--full", action="store_true", help="include the whole document instead of a snippet")
    parser.add_argument(
        "--line-numbers", action="store_true", help="prefix snippet lines with their line numbers"
    )
    complete_with(parser.add_argument(
        "-c", "--collection", action="append", default=[], dest="collections", metavar="NAME",
        help="search only this collection (repeatable; excluded collections too)",
    ), collection_names)  # fmt: skip
    parser.add_argument(
        "--full-path", action="store_true", help="show disk paths instead of tansaku:// paths"
    )
    parser.add_argument(
        "--all-copies",
        action="store_true",
        help="list every path of a text found at several (copies, symlinks, overlapping collections)"
        " and every language or version of a page (docs/fr/, page.ja.html, docs/3.11/); by default"
        " each is shown once, with 'also at: PATHS' or 'also in: LANGUAGES'",
    )
    add_field_options(parser)


def add_field_options(parser: argparse.ArgumentParser) -> None:
    """--where and --fields: front-matter fields (YAML or TOML) of Markdown files."""
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="only documents whose front matter has FIELD=VALUE (any element of a list; any case);"
        " also FIELD!=VALUE, and FIELD>=, <=, >, < a date (2024-05-01) or number; repeatable, all"
        " must hold; filters before -n",
    )
    parser.add_argument("--fields", action="store_true", help="show each result's front-matter fields")


def add_transcript_options(parser: argparse.ArgumentParser) -> None:
    """Levels and filters for transcript collections (claude, codex); file collections ignore them."""
    group = parser.add_argument_group("transcripts (collections of --type claude or codex)")
    group.add_argument(
        "--level",
        choices=("turn", "run", "session", "project"),
        help="one result per turn (the default), run (a prompt and its answer), session or project,"
        " with the best hit, the number of matching turns and their time span",
    )
    group.add_argument(
        "--role",
        action="append",
        default=[],
        choices=("user", "assistant", "tool"),
        dest="roles",
        help="only turns by this role (repeatable)",
    )
    group.add_argument(
        "--since",
        metavar="WHEN",
        help="only turns at or after WHEN: a date (2025-11-30), an ISO time, or 7d, 12h",
    )
    group.add_argument(
        "--until", metavar="WHEN", help="only turns before WHEN (a date includes that day), or 7d, 12h ago"
    )
    group.add_argument(
        "--project", metavar="TEXT", help="only sessions whose working directory contains TEXT"
    )


def result_limit(args: argparse.Namespace, out: Output) -> int | None:
    return options.result_limit(all=args.all, limit=args.limit, scripted=out.fmt != "cli")


def register(commands: Any) -> None:
    search = commands.add_parser("search", help="keyword search (BM25); no model needed")
    add_query_argument(
        search,
        help='words, "phrases", -word (excludes a word), prefix*, names (os.path.join), options'
        " (-x; --user after a lone --); any word that is not an option; the first"
        f" {limits.MAX_QUERY_TERMS} distinct terms are searched (QUERY_TRUNCATED counts the rest)",
        meaning=(
            " (it excludes documents containing laptop, unless the index lists -laptop as a"
            ' command-line option; -"laptop" always excludes; --flag and -x are searched for)'
        ),
    )
    add_result_options(
        search,
        min_score=0.0,
        min_score_help="drop results scoring below this (0..1)",
        all_help="show every match",
    )
    add_transcript_options(search)
    add_index_option(search)
    add_format_options(search)
    search.set_defaults(handler=_search)

    get = commands.add_parser(
        "get", help="print a document (or part of it) by path, tansaku:// path or #docid"
    )
    get.add_argument(
        "ref",
        metavar="REF[:FROM[:COUNT]]",
        help="a document, optionally from line FROM (COUNT lines); a PDF's page: REF:page=N",
    )
    get.add_argument(
        "--from", type=positive_int, dest="from_line", metavar="LINE", help="first line (1-based)"
    )
    get.add_argument("-l", type=positive_int, dest="max_lines", metavar="N", help="at most N lines")
    get.add_argument(
        "--max-bytes", type=positive_int, help="at most this many bytes (default 262144), cut at a line"
    )
    get.add_argument(
        "--no-line-numbers", dest="line_numbers", action="store_false", help="raw text, no numbers"
    )
    get.add_argument("--full-path", action="store_true", help="show the disk path")
    turns = get.add_argument_group(
        "transcripts (a turn's path, SESSION.jsonl:LINE as search prints it: that turn, with context)"
    )
    turns.add_argument(
        "-C",
        "--context",
        type=int,
        metavar="K",
        help="turns shown before and after it (default 3); -l caps the messages, --max-bytes their text",
    )
    turns.add_argument(
        "--raw",
        action="store_true",
        help="the source file's own text, secrets included (read from disk again)",
    )
    add_index_option(get)
    add_format_options(get)
    get.set_defaults(handler=_get)

    multi = commands.add_parser(
        "multi-get", help="print several documents: a glob over tansaku:// paths, a comma list, or docids"
    )
    multi.add_argument(
        "pattern",
        help="e.g. 'notes/**/*.md', 'tansaku://notes/a.md,#a1b2c3'; at most"
        f" {limits.MAX_MULTI_GET_REFS} comma items, similar paths suggested for the first"
        f" {limits.MAX_SUGGESTED_MISSES} misses",
    )
    multi.add_argument(
        "-l", type=positive_int, dest="max_lines", metavar="N", help="at most N lines per file"
    )
    multi.add_argument(
        "--max-bytes",
        type=positive_int,
        default=10 * 1024,
        help="skip (and list) documents whose text is larger than this many bytes (the text"
        " printed, e.g. an HTML page's words, not the file); default 10240. Exit 1 when every"
        " match is skipped",
    )
    multi.add_argument(
        "--no-line-numbers", dest="line_numbers", action="store_false", help="raw text, no numbers"
    )
    multi.add_argument("--full-path", action="store_true", help="show disk paths")
    add_index_option(multi)
    add_format_options(multi)
    multi.set_defaults(handler=_multi_get)

    register_chunks(commands)


def register_chunks(commands: Any) -> None:
    chunks = commands.add_parser(
        "chunks", help="show how a document is cut into chunks (line ranges, tokens, heading paths)"
    )
    chunks.add_argument("ref", metavar="REF", help="path, tansaku:// path or #docid")
    chunks.add_argument(
        "--chunk-strategy",
        choices=("regex", "auto"),
        help="show chunks for this strategy (default: the collection's)",
    )
    chunks.add_argument("--full-path", action="store_true", help="show the disk path")
    add_index_option(chunks)
    add_format_options(chunks)
    chunks.set_defaults(handler=_chunks)


def _chunks(args: argparse.Namespace, out: Output) -> int:
    result = api_for(args).chunks(args.ref, chunk_strategy=args.chunk_strategy)
    out.render(result, full_path=args.full_path)
    return 0


def _search(args: argparse.Namespace, out: Output) -> int:
    limit = result_limit(args, out)
    result = api_for(args).search_levels(
        " ".join(args.query),
        collections=args.collections,
        level=args.level,
        roles=args.roles,
        since=args.since,
        until=args.until,
        project=args.project,
        limit=limit,
        min_score=args.min_score,
        full=args.full,
        where=args.where,
        fields=args.fields,
        all_copies=args.all_copies,
    )
    out.render(result, line_numbers=args.line_numbers, full_path=args.full_path)
    return 0


def _get(args: argparse.Namespace, out: Output) -> int:
    result = api_for(args).get(
        args.ref,
        from_line=args.from_line,
        max_lines=args.max_lines,
        max_bytes=args.max_bytes,
        raw=args.raw,
        context=args.context,
    )
    out.render(result, line_numbers=args.line_numbers, full_path=args.full_path)
    return 0


def _multi_get(args: argparse.Namespace, out: Output) -> int:
    result = api_for(args).multi_get(args.pattern, max_lines=args.max_lines, max_bytes=args.max_bytes)
    out.render(result, line_numbers=args.line_numbers, full_path=args.full_path)
    # Documents matched but none was printed (each over --max-bytes): not a quiet success.
    return 1 if result.skipped and not result.documents else 0
