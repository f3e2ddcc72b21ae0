"""How long `tansaku query` takes, whole-process and warm, with the time of each stage.

    python evals/bench_query.py --generate GEMMA.gguf --rerank GEMMA.gguf [--embed MINILM.gguf]

Runs 20 queries of ``evals/sets/python-docs-v1.jsonl`` (spread over its kinds) against the
python-docs collection of the eval index (``evals/run_evals.py`` builds it; it must be embedded),
on a private copy of the index so that the caches start empty and the eval index is untouched:

1. whole-process, nothing cached: ``tansaku query Q -c python-docs --json --explain`` per query
   (no expansion, rerank score or stored prompt state to start with; the first query stores the
   few-shot prompt's state, which the next processes then restore);
2. whole-process again: the expansions and rerank scores now come from the index's cache;
3. warm in-process, nothing cached (cache emptied): one ``Tansaku`` answering every query, as a
   server would, after one warm-up query that is not counted;
4. warm in-process again, cached.

Reports p50/p95 of the wall time of each phase, the median per stage (probe, expansion,
embedding, retrieval, fusion, rerank), and the reranker's prompt tokens per second, with what the
default rerank budget buys at that rate and at the rate of a model ``--scale`` times larger.
Writes JSON to ``--out`` when given. Uses whatever cores the machine has (the figures in
RESULTS-query.md are from 2).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "evals" / "cache"
SET = ROOT / "evals" / "sets" / "python-docs-v1.jsonl"
COLLECTION = "python-docs"
STAGES = ("probe", "expansion", "embedding", "retrieval", "fusion", "rerank")


def pick_queries(count: int) -> list[str]:
    """``count`` queries, round-robin over the set's kinds, in file order within a kind."""
    by_kind: dict[str, list[str]] = {}
    for line in SET.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            by_kind.setdefault(entry["kind"], []).append(entry["query"])
    picked: list[str] = []
    while len(picked) < count and any(by_kind.values()):
        for queue in by_kind.values():
            if queue and len(picked) < count:
                picked.append(queue.pop(0))
    return picked


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def clear_cache(index: Path) -> None:
    with sqlite3.connect(index) as conn:
        # The stored prompt state too: the first expansion of a run makes it, the others reuse it.
        # So with the reranker's recorded speed: the first query measures it.
        conn.execute(
            "DELETE FROM llm_cache WHERE kind IN ('expand', 'rerank', 'prefix-state', 'rerank-speed')"
        )


def stage_times(explain: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {s["stage"]: s for s in explain.get("stages", [])}


def whole_process(queries: list[str], env: dict[str, str], extra: list[str]) -> list[dict[str, Any]]:
    runs = []
    for query in queries:
        command = [str(ROOT / ".venv" / "bin" / "tansaku"), "query", "-c", COLLECTION]
        # After --, a query word such as --save-exact is text, not a mistyped option (issue 36).
        command += ["--json", "--explain", *extra, "--", *query.split()]
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"query failed ({done.returncode}): {query}\n{done.stderr}")
        data = json.loads(done.stdout)
        runs.append(_run(query, wall, data))
    return runs


def _run(query: str, wall: float, data: dict[str, Any]) -> dict[str, Any]:
    explain = data.get("explain") or {}
    return {
        "query": query,
        "seconds": wall,
        "used": data.get("used"),
        "warnings": sorted({w["code"] for w in data.get("warnings", [])}),
        "stages": stage_times(explain),
    }


def in_process(queries: list[str], extra: dict[str, Any]) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT / "src"))
    from tansaku.api import Tansaku
    from tansaku.render.jsonfmt import to_data

    api = Tansaku()
    api.query("warm-up query that loads every model", collections=[COLLECTION], explain=True, **extra)
    runs = []
    for query in queries:
        started = time.perf_counter()
        result = api.query(query, collections=[COLLECTION], explain=True, **extra)
        wall = time.perf_counter() - started
        data = {
            "used": result.used,
            "warnings": [{"code": w.code} for w in result.warnings],
            "explain": to_data(result.explain),
        }
        runs.append(_run(query, wall, data))
    return runs


def summarise(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [r["seconds"] for r in runs]
    stages = {}
    for stage in STAGES:
        values = [r["stages"][stage]["seconds"] for r in runs if stage in r["stages"]]
        if values:
            stages[stage] = {"median": statistics.median(values), "runs": len(values)}
    tokens = sum(r["stages"].get("rerank", {}).get("tokens", 0) for r in runs)
    model_seconds = sum(r["stages"].get("rerank", {}).get("model_seconds", 0.0) for r in runs)
    warnings: dict[str, int] = {}
    for r in runs:
        for code in r["warnings"]:
            warnings[code] = warnings.get(code, 0) + 1
    return {
        "phase": name,
        "p50": percentile(walls, 0.5),
        "p95": percentile(walls, 0.95),
        "stages": stages,
        "rerank_tokens": tokens,
        "rerank_model_seconds": model_seconds,
        "rerank_tokens_per_second": tokens / model_seconds if model_seconds else None,
        "warnings": warnings,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--generate", required=True, help="GGUF for query expansion")
    parser.add_argument("--rerank", required=True, help="GGUF for reranking")
    parser.add_argument("--embed", help="embedding GGUF (default: TANSAKU_EMBED_MODEL)")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--budget", type=float, help="--rerank-budget (default: the command's)")
    parser.add_argument("--scale", type=float, default=2.2, help="how much slower a 0.6B reranker reads")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()

    source = CACHE / "evals.sqlite"
    if not source.exists():
        raise SystemExit("no eval index: run `python evals/run_evals.py` (with --embed-model) first")
    work = Path(tempfile.mkdtemp(prefix="tansaku-bench-query-"))
    index = work / "index.sqlite"
    with sqlite3.connect(source) as src, sqlite3.connect(index) as dst:
        src.backup(dst)  # a consistent copy even while the eval index is open elsewhere
    clear_cache(index)  # run_evals may have cached these queries' expansions
    env = dict(os.environ)
    env.update(
        TANSAKU_CONFIG_DIR=str(CACHE / "tansaku-config"),
        TANSAKU_INDEX_PATH=str(index),
        TANSAKU_GENERATE_MODEL=str(Path(args.generate).resolve()),
        TANSAKU_RERANK_MODEL=str(Path(args.rerank).resolve()),
    )
    if args.embed:
        env["TANSAKU_EMBED_MODEL"] = str(Path(args.embed).resolve())
    os.environ.update(env)
    queries = pick_queries(args.queries)
    extra_cli = ["--rerank-budget", str(args.budget)] if args.budget is not None else []
    extra_api = {"rerank_budget": args.budget} if args.budget is not None else {}
    try:
        phases = [summarise("whole-process, nothing cached", whole_process(queries, env, extra_cli))]
        phases.append(summarise("whole-process, cached", whole_process(queries, env, extra_cli)))
        clear_cache(index)
        phases.append(summarise("warm in-process, nothing cached", in_process(queries, extra_api)))
        phases.append(summarise("warm in-process, cached", in_process(queries, extra_api)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(phases, args)
    if args.out:
        args.out.write_text(json.dumps({"queries": queries, "phases": phases}, indent=2) + "\n")


def report(phases: list[dict[str, Any]], args: argparse.Namespace) -> None:
    from tansaku.hybrid.steps import DEFAULT_RERANK_BUDGET

    budget = DEFAULT_RERANK_BUDGET if args.budget is None else args.budget
    print(f"cores: {os.cpu_count()}; queries: {args.queries}; rerank budget: {budget:g} s")
    print("| phase | p50 s | p95 s | " + " | ".join(f"{s} (median s)" for s in STAGES) + " |")
    print("|---|---|---|" + "---|" * len(STAGES))
    for phase in phases:
        cells = [f"{phase['stages'][s]['median']:.3f}" if s in phase["stages"] else "-" for s in STAGES]
        print(f"| {phase['phase']} | {phase['p50']:.2f} | {phase['p95']:.2f} | " + " | ".join(cells) + " |")
    for phase in phases:
        rate = phase["rerank_tokens_per_second"]
        if rate:
            per_passage = phase["rerank_tokens"] / max(
                1, sum(1 for r in phase["runs"] if "rerank" in r["stages"])
            )
            print(
                f"{phase['phase']}: reranker read {phase['rerank_tokens']} prompt tokens"
                f" at {rate:.0f} tokens/s"
                f" ({per_passage:.0f} per query); a {args.scale:g}x slower model reads"
                f" {rate / args.scale:.0f} tokens/s, so the {budget:g} s budget covers about"
                f" {budget * rate / args.scale:.0f} tokens"
            )
        if phase["warnings"]:
            print(f"{phase['phase']}: warnings {phase['warnings']}")


if __name__ == "__main__":
    main()
