"""`tansaku query`: keyword and vector search fused into one ranking."""

from __future__ import annotations

import argparse
from typing import Any

from .common import Output, add_format_options, add_index_option, add_query_argument, api_for
from .search import add_result_options, positive_int, result_limit


def register(commands: Any) -> None:
    query = commands.add_parser(
        "query", help="hybrid search: keyword and vector results fused (vectors optional)"
    )
    add_query_argument(
        query,
        help='words, "phrases", -word, names, options, as for search; any word that is not an option',
        meaning=" (keyword search excludes documents containing laptop; the vector side embeds the text)",
    )
    add_result_options(
        query,
        min_score=0.0,
        min_score_help="drop results whose fused score (0..1) is below this",
        all_help="show every fused candidate",
    )
    query.add_argument(
        "-C",
        "--candidate-limit",
        type=positive_int,
        default=40,
        metavar="N",
        help="documents each list contributes to the fusion (default 40)",
    )
    query.add_argument(
        "--explain",
        action="store_true",
        help="show, per result, each list's rank and score, the list weights and why, RRF parts",
    )
    add_index_option(query)
    add_format_options(query)
    query.set_defaults(handler=_query)


def _query(args: argparse.Namespace, out: Output) -> int:
    result = api_for(args).query(
        " ".join(args.query),
        collections=args.collections,
        limit=result_limit(args, out),
        min_score=args.min_score,
        full=args.full,
        candidate_limit=args.candidate_limit,
        explain=args.explain,
    )
    out.render(result, line_numbers=args.line_numbers, full_path=args.full_path)
    return 0
