"""`tansaku bench`: run a judged query set and print ranking metrics per mode and kind."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .common import Output, add_format_options, add_index_option, api_for, collection_names, complete_with


def register(commands: Any) -> None:
    bench = commands.add_parser(
        "bench", help="measure ranking quality on a judged query set (Hit@k, MRR@10, nDCG@10, latency)"
    )
    bench.add_argument("query_set", metavar="SET.jsonl", help="judged queries (see docs/evals.md)")
    complete_with(
        bench.add_argument(
            "-c",
            "--collection",
            action="append",
            default=[],
            dest="collections",
            metavar="NAME",
            help="collection to search (default: the set's corpus field); repeat it to search several,"
            " whose judged paths are then written COLLECTION/PATH",
        ),
        collection_names,
    )
    bench.add_argument(
        "--level",
        choices=("turn", "run", "session", "project"),
        help="transcript collections: search and vsearch aggregate to this level, and a hit counts"
        " when its session file is judged relevant",
    )
    bench.add_argument(
        "--mode",
        choices=("search", "vsearch", "query-fused", "query-expanded", "query", "all"),
        default="all",
        help="ranking mode(s) to measure (query-fused: query --no-expand --no-rerank;"
        " query-expanded: query --expand --no-rerank; query: query --expand)",
    )
    bench.add_argument(
        "--record", metavar="FILE", help="also write the full JSON report (with per-query ranks)"
    )
    add_index_option(bench)
    add_format_options(bench, ("cli", "json"))
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace, out: Output) -> int:
    from ..eval.harness import MODES, default_collection, run_bench

    set_path = Path(args.query_set)
    collection = ",".join(dict.fromkeys(args.collections)) or default_collection(set_path)
    modes = MODES if args.mode == "all" else (args.mode,)
    report = run_bench(api_for(args), set_path, collection, modes, level=args.level)
    if args.record:
        from ..render.jsonfmt import to_data

        Path(args.record).write_text(
            json.dumps(to_data(report), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
    out.render(report)
    return 0
