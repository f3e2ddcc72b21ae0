"""Transcript indexing and search figures, whole-process (what a user waits for).

    .venv/bin/python evals/bench_transcripts.py [--sessions N] [--messages N] [--queries N]

Generates the corpus (evals/corpus_transcripts.py) in a temporary folder, then times with the real
CLI (``bin/tansaku``, a fresh process each time, its own config and index):
- cold ``collection add --type claude`` + ``--type codex`` (the first update of both);
- ``update`` after appending 1% new lines to the 20 most recent sessions (append mode);
- ``search --level L`` for each level, p50/p95 over the queries (two-word queries from the
  corpus vocabulary).
Prints one JSON object; the issue's targets at 2,000 sessions / 500,000 messages on 2 cores:
cold <= 5 min, append <= 10 s, search p50 <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_transcripts as corpus

REPO = Path(__file__).resolve().parent.parent
TANSAKU = REPO / "bin" / "tansaku"


def run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([str(TANSAKU), *args], env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"tansaku {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return took, done.stdout


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="tansaku-bench-transcripts-"))
    work.mkdir(parents=True, exist_ok=True)
    root = work / "corpus"
    started = time.perf_counter()
    records = corpus.generate(root, args.sessions, args.messages)
    generated = time.perf_counter() - started
    env = {
        **os.environ,
        "TANSAKU_CONFIG_DIR": str(work / "config"),
        "TANSAKU_INDEX_PATH": str(work / "index.sqlite"),
        "NO_COLOR": "1",
    }
    cold_claude, _ = run(["collection", "add", "--type", "claude", str(root / "claude"), "--json"], env)
    cold_codex, out = run(["collection", "add", "--type", "codex", str(root / "codex"), "--json"], env)
    status = json.loads(run(["status", "--json"], env)[1])
    appended = corpus.append(root, args.sessions, 0.01)
    append_s, out = run(["update", "--json"], env)
    report = json.loads(out)
    rng = random.Random(7)
    queries = [" ".join(rng.sample(corpus.WORDS, 2)) for _ in range(args.queries)]
    search: dict[str, dict[str, float]] = {}
    for level in ("turn", "run", "session", "project"):
        times = [run(["search", q, "--level", level, "--json"], env)[0] for q in queries]
        search[level] = {
            "p50_s": round(statistics.median(times), 3),
            "p95_s": round(percentile(times, 0.95), 3),
        }
    print(
        json.dumps(
            {
                "sessions": args.sessions,
                "records": records,
                "turns": sum(c["chunks"] for c in status["collections"]),
                "index_mb": round(status["index_bytes"] / 2**20, 1),
                "generate_s": round(generated, 1),
                "cold_update_s": round(cold_claude + cold_codex, 2),
                "appended_lines": appended,
                "append_update_s": round(append_s, 2),
                "append_sessions": sum(len(c["appended"]) for c in report["collections"]),
                "search": search,
                "cpus": os.cpu_count(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
