"""`tansaku embed` and `tansaku vsearch`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..limits import MAX_MODEL_QUERY_CHARS, MAX_QUERY_TERMS
from .common import (
    DelayedProgress,
    Output,
    add_format_options,
    add_index_option,
    add_query_argument,
    api_for,
    collection_names,
    complete_with,
)
from .progress_log import DEFAULT_INTERVAL_S, INTERVAL_ENV, LineProgress, progress_interval
from .search import add_result_options, add_transcript_options, result_limit

EXIT_INTERRUPTED = 130


def register(commands: Any) -> None:
    embed = commands.add_parser(
        "embed",
        help="compute vectors for chunks that have none (local model or configured endpoint)",
        description="Compute vectors for chunks that have none, with the embed model (a local file,"
        " or an OpenAI-compatible endpoint when one is configured). On a"
        " terminal a progress bar shows how far it is; otherwise (a log, a pipe) a line on stderr"
        f" every {DEFAULT_INTERVAL_S:g} s ({INTERVAL_ENV} sets the seconds) gives done, total,"
        " rate and time left.",
    )
    complete_with(embed.add_argument(
        "-c", "--collection", action="append", default=[], dest="collections", metavar="NAME",
        help="only this collection (repeatable); default: all",
    ), collection_names)  # fmt: skip
    embed.add_argument(
        "-f", "--force", action="store_true", help="recompute every vector of these collections"
    )
    passes = embed.add_mutually_exclusive_group()
    passes.add_argument(
        "--quick-only", action="store_const", const="only", dest="quick",
        help="only give each chunk without a vector a quick one (its title, headings and the"
        " first words of each paragraph: minutes, not hours), and leave the full vectors for a"
        " later `tansaku embed`",
    )  # fmt: skip
    passes.add_argument(
        "--no-quick", action="store_const", const="off", dest="quick",
        help="no quick pass: by default, when 500 or more chunks are pending (TANSAKU_QUICK_MIN_CHUNKS),"
        " every one gets a quick vector before the full ones, so searches work from the start",
    )  # fmt: skip
    embed.set_defaults(quick="auto")
    embed.add_argument("-v", "--verbose", action="store_true", help="show llama.cpp's own log lines")
    embed.add_argument(
        "-y", "--yes", action="store_true",
        help="agree to send chunk text to the configured endpoint when it is another machine"
        " (asked once per endpoint; recorded as [models] remote_ok)",
    )  # fmt: skip
    add_index_option(embed)
    add_format_options(embed, ("cli", "json"))
    embed.set_defaults(handler=_embed)

    vsearch = commands.add_parser("vsearch", help="search by meaning (vectors from `tansaku embed`)")
    add_query_argument(
        vsearch,
        help="what you are looking for, in your own words; any word that is not an option; the first"
        f" {MAX_QUERY_TERMS} words (at most {MAX_MODEL_QUERY_CHARS} characters) are embedded",
        meaning=" (the whole query text is embedded)",
    )
    add_result_options(
        vsearch,
        min_score=0.3,
        min_score_help="cosine similarity floor (default 0.3)",
        all_help="show every result above --min-score",
    )
    vsearch.add_argument("-v", "--verbose", action="store_true", help="show llama.cpp's own log lines")
    add_transcript_options(vsearch)
    add_index_option(vsearch)
    add_format_options(vsearch)
    vsearch.set_defaults(handler=_vsearch)


def _embed(args: argparse.Namespace, out: Output) -> int:
    progress = embed_progress(out.fmt)
    try:
        report = api_for(args).embed(
            args.collections,
            force=args.force,
            progress=progress,
            verbose=args.verbose,
            consent=args.yes,
            quick=args.quick,
        )
    finally:
        progress.close()
    out.render(report)
    if report.interrupted:
        return EXIT_INTERRUPTED
    return 4 if any(c.failed for c in report.collections) else 0


def embed_progress(fmt: str) -> DelayedProgress | LineProgress:
    """A bar redrawn in place on a terminal (the cli format), else a line every few seconds on
    stderr: a log or a pipe gets how far the run is, not nothing and not every redraw."""
    if sys.stderr.isatty() and fmt == "cli":
        return DelayedProgress(enabled=True)
    return LineProgress(sys.stderr, progress_interval())


def _vsearch(args: argparse.Namespace, out: Output) -> int:
    result = api_for(args).vsearch_levels(
        " ".join(args.query),
        collections=args.collections,
        level=args.level,
        roles=args.roles,
        since=args.since,
        until=args.until,
        project=args.project,
        limit=result_limit(args, out),
        min_score=args.min_score,
        full=args.full,
        verbose=args.verbose,
        where=args.where,
        fields=args.fields,
        all_copies=args.all_copies,
    )
    out.render(result, line_numbers=args.line_numbers, full_path=args.full_path)
    return 0
