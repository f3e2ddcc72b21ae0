"""Where a cold PostgreSQL update spends its time (issue 40's "Cold update").

    .venv/bin/python evals/profile_pg_update.py [--files 10000] [--profile OUT.pstats] [--sqlite]

Not a test. Starts a throwaway server (bench_backends.py's, fsync off, every statement logged
with its duration), runs ``collection add`` of evals/corpus_gen.py's corpus of N files into an
empty database (under cProfile with ``--profile``), then prints the wall time, the load average
and the server's own time per statement (grouped by its text with the literals left out, from
``log_min_duration_statement = 0``) and the server's counters after the load (WAL, checkpoints,
buffers read against hit, autovacuum runs, ``postings``' sizes). ``--sqlite`` times the same
``collection add`` on SQLite first (the ratio's other side, at the same moment).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import unquote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_backends  # noqa: E402


def statement_times(log: Path) -> list[tuple[float, int, str]]:
    """(total ms, count, statement) from a server log of log_min_duration_statement = 0."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    pattern = re.compile(r"duration: ([0-9.]+) ms\s+(?:statement|execute [^:]*): (.*)")
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        found = pattern.search(line)
        if not found:
            continue
        text = re.sub(r"'(?:[^']|'')*'", "?", found.group(2))
        text = re.sub(r"\b\d+\b", "N", text)[:160]
        entry = totals[text]
        entry[0] += float(found.group(1))
        entry[1] += 1
    return sorted(((ms, int(n), text) for text, (ms, n) in totals.items()), reverse=True)


# What the server did during the load: WAL and its full-page images, checkpoints (requested ones
# are max_wal_size's), pages read from outside shared_buffers, autovacuum, and postings' bytes.
COUNTERS = (
    ("wal", "SELECT wal_records, wal_fpi, pg_size_pretty(wal_bytes) FROM pg_stat_wal"),
    ("checkpoints", "SELECT num_timed, num_requested, buffers_written FROM pg_stat_checkpointer"),
    ("buffers hit / read", "SELECT sum(blks_hit), sum(blks_read) FROM pg_stat_database"),
    (
        "autovacuum / autoanalyze",
        "SELECT coalesce(sum(autovacuum_count), 0), coalesce(sum(autoanalyze_count), 0)"
        " FROM pg_stat_user_tables",
    ),
    (
        "postings: all / heap / primary key",
        "SELECT pg_size_pretty(pg_total_relation_size('postings')),"
        " pg_size_pretty(pg_relation_size('postings')), pg_size_pretty(pg_relation_size('postings_pkey'))",
    ),
    ("database", "SELECT pg_size_pretty(pg_database_size(current_database()))"),
)


def counters(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for name, sql in COUNTERS:
            print(f"{name}: {', '.join(str(value) for value in conn.execute(sql).fetchone())}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--profile", help="write cProfile's stats here")
    parser.add_argument("--sqlite", action="store_true", help="time SQLite's cold update first")
    parser.add_argument("--no-log", action="store_true", help="do not log every statement")
    parser.add_argument("--settings", default="", help="more -c name=value for the server")
    args = parser.parse_args()
    root, _ = bench_backends.synthetic(args.files)
    settings = args.settings
    if not args.no_log:
        settings += " -c log_min_duration_statement=0"
    from tansaku.api import Tansaku

    work = Path(tempfile.mkdtemp(prefix="tansaku-pgprof-"))
    os.environ["TANSAKU_CONFIG_DIR"] = str(work / "config")
    os.environ["TANSAKU_INDEX_PATH"] = str(work / "index.sqlite")
    with bench_backends.throwaway_server(settings.strip()) as base:
        if args.sqlite:
            started = time.perf_counter()
            Tansaku().add_collection(str(root), name="c", masks=["**/*.md"])
            print(f"sqlite cold update {time.perf_counter() - started:.1f} s (load {bench_backends.load()})")
        url = bench_backends.fresh_database(base, "prof")
        api = Tansaku(url)
        profiler = cProfile.Profile() if args.profile else None
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        api.add_collection(str(root), name="c", masks=["**/*.md"])  # each index its own list
        if profiler:
            profiler.disable()
            profiler.dump_stats(args.profile)
        took = time.perf_counter() - started
        print(f"postgresql cold update {took:.1f} s (load {bench_backends.load()})")
        counters(url)
        if not args.no_log:
            folder = Path(unquote(base.split("host=", 1)[1]))
            rows = statement_times(folder / "log")
            print(f"server time in statements: {sum(r[0] for r in rows) / 1000:.1f} s")
            for ms, n, text in rows[:25]:
                print(f"{ms / 1000:8.2f} s {n:7d}  {text}")


if __name__ == "__main__":
    main()
