"""`tansaku query`: keyword and vector search fused into one ranking."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from ..limits import MAX_QUERY_TERMS
from ..options import check_pack_options
from .common import Output, add_format_options, add_index_option, add_query_argument, api_for
from .search import add_result_options, add_transcript_options, positive_int, result_limit

# Kept in step with hybrid/steps.py (a test checks), not imported: a plain `tansaku query` would
# pay for importing it before parsing its arguments.
DEFAULT_RERANK_BUDGET = 0.75

# The defaults of `query --pack` (issue 10). Kept here rather than imported from hybrid/pack.py so
# that a plain `tansaku query` does not pay for importing the pack logic.
DEFAULT_MAX_ITEMS = 8
DEFAULT_MAX_BYTES = 10 * 1024


def register(commands: Any) -> None:
    query = commands.add_parser(
        "query", help="hybrid search: keyword and vector results fused (vectors optional)"
    )
    add_query_argument(
        query,
        help='words, "phrases", -word, names, options, as for search; any word that is not an option;'
        " or a query document: lines typed lex: (keyword), vec: or hyde: (vectors), intent: (not searched);"
        f" the first {MAX_QUERY_TERMS} distinct terms are searched (QUERY_TRUNCATED counts the rest)",
        meaning=" (keyword search excludes documents containing laptop; the vector side embeds the text)",
    )
    add_result_options(
        query,
        min_score=0.0,
        min_score_help="drop results whose fused score (0..1) is below this",
        all_help="show every fused candidate",
    )
    add_transcript_options(query)
    query.add_argument(
        "-C",
        "--candidate-limit",
        type=positive_int,
        default=40,
        metavar="N",
        help="documents each list contributes to the fusion (default 40)",
    )
    query.add_argument(
        "--intent",
        metavar="TEXT",
        help="what the query is for (e.g. 'python 3.12 standard library'): steers expansion, the"
        " passages reranked and the reranking; never searched itself",
    )
    expansion = query.add_mutually_exclusive_group()
    expansion.add_argument(
        "--expand",
        action="store_const",
        const=True,
        dest="expand",
        help="expand the query with the generate model even on a CPU, where it is off by default"
        " (it did not pay there: docs/models.md)",
    )
    expansion.add_argument(
        "--no-expand",
        action="store_const",
        const=False,
        dest="expand",
        help="do not expand the query with the generate model (no model is loaded); by default"
        " it expands with a model on an endpoint or a GPU, or as [query] expand says",
    )
    reranking = query.add_mutually_exclusive_group()
    reranking.add_argument(
        "--rerank",
        action="store_const",
        const=True,
        dest="rerank",
        help="rerank with the rerank model, and warn when it is missing or short of time; by default"
        " it reranks with a model on an endpoint or a GPU, or on a CPU when the model is here (a"
        " skip for time is then a note), or as [query] rerank says",
    )
    reranking.add_argument(
        "--no-rerank",
        action="store_const",
        const=False,
        dest="rerank",
        help="do not rerank: results keep their fused order (no model is loaded)",
    )
    query.add_argument(
        "--rerank-budget",
        type=_seconds,
        metavar="SECONDS",
        help=f"time the reranker may take (default {DEFAULT_RERANK_BUDGET:g}, or TANSAKU_RERANK_BUDGET);"
        " candidates it does not reach keep their fused order, with RERANK_PARTIAL; a budget"
        " the reranker's measured speed says covers fewer than two passages scores none",
    )
    query.add_argument(
        "--explain",
        action="store_true",
        help="show, per result, each list's rank and score, the list weights and why, RRF parts",
    )
    pack = query.add_argument_group("context pack")
    pack.add_argument(
        "--pack",
        action="store_true",
        help="return the best passages whole, each with its citation, within --max-items and"
        " --max-bytes, instead of results (an item that does not fit is left out, never cut)",
    )
    pack.add_argument(
        "--max-items",
        type=positive_int,
        metavar="N",
        help=f"--pack: at most N passages (default {DEFAULT_MAX_ITEMS})",
    )
    pack.add_argument(
        "--max-bytes",
        type=positive_int,
        metavar="B",
        help=f"--pack: at most B bytes of passage text, UTF-8 (default {DEFAULT_MAX_BYTES})",
    )
    add_index_option(query)
    add_format_options(query)
    query.set_defaults(handler=_query)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds: {text!r}")
    return value


def _model_options(args: argparse.Namespace) -> dict[str, Any]:
    levels = {
        "level": args.level,
        "roles": tuple(args.roles or ()),
        "since": args.since,
        "until": args.until,
        "project": args.project,
    }
    return {
        "intent": args.intent,
        "expand": args.expand,
        "rerank": args.rerank,
        "rerank_budget": args.rerank_budget,
        "levels": levels if any(levels.values()) else None,
        "where": args.where,
        "all_copies": args.all_copies,
    }


def _query(args: argparse.Namespace, out: Output) -> int:
    check_pack_options(
        pack=args.pack,
        limit=args.limit,
        all=args.all,
        full=args.full,
        explain=args.explain,
        max_items=args.max_items,
        max_bytes=args.max_bytes,
    )
    if args.pack:
        return _pack(args, out)
    result = api_for(args).query(
        " ".join(args.query),
        collections=args.collections,
        limit=result_limit(args, out),
        min_score=args.min_score,
        full=args.full,
        candidate_limit=args.candidate_limit,
        explain=args.explain,
        fields=args.fields,
        **_model_options(args),
    )
    out.render(result, line_numbers=args.line_numbers, full_path=args.full_path)
    return 0


def _pack(args: argparse.Namespace, out: Output) -> int:
    if args.fields:
        raise UsageError("--pack does not take --fields", hint="a pack cites passages; search with --fields")
    result = api_for(args).pack(
        " ".join(args.query),
        collections=args.collections,
        max_items=args.max_items or DEFAULT_MAX_ITEMS,
        max_bytes=args.max_bytes or DEFAULT_MAX_BYTES,
        min_score=args.min_score,
        candidate_limit=args.candidate_limit,
        **_model_options(args),
    )
    out.render(result, line_numbers=args.line_numbers, full_path=args.full_path)
    return 0
