"""Chunking benchmark: chunks/s and MB/s on the 10,000-file corpus and on a Python code corpus.

    .venv/bin/python evals/bench_chunking.py [--corpus DIR] [--runs 3] [--code-files 2000]
                                             [--update-runs 1] [--json OUT]

Not a test (CI does not run it). In one process, with every file already read into memory, it times
``tansaku.chunking.chunk_text`` with the default parameters (900 / 135 / 200):

- the Markdown corpus (``evals/corpus_gen.py``, generated into ``evals/cache/corpus-10k`` when
  missing) with the ``regex`` and ``auto`` strategies (``auto`` is regex for Markdown: same work);
- a code corpus: the first ``--code-files`` ``.py`` files (sorted by path) under the venv's
  ``site-packages``, with ``regex`` and ``auto`` (tree-sitter break points);
- for comparison, the cold update: ``bin/tansaku collection add CORPUS`` on an empty temporary
  index (``--update-runs`` times; 0 skips it), which chunks too once the indexer does, and the
  cold update without chunking from ``evals/cache/bench-foundation.json`` (or ``--baseline``).

Each strategy is timed ``--runs`` times; the first run (which pays the lazy imports) and the median
are reported. The target: chunking the Markdown corpus adds at most 30% to a cold update.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

EVALS = Path(__file__).resolve().parent
REPO = EVALS.parent
TANSAKU = REPO / "bin" / "tansaku"
SITE_PACKAGES = (
    REPO / ".venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
)
sys.path.insert(0, str(EVALS))

import corpus_gen  # noqa: E402  (a sibling script, not a package)

from tansaku.chunking import ChunkParams, chunk_text  # noqa: E402

TARGET_SHARE = 0.30
FOUNDATION = EVALS / "cache" / "bench-foundation.json"  # bench_foundation.py's figures, if run


def foundation_cold_update() -> float | None:
    """The cold update measured by bench_foundation.py (before chunking was part of it), if any."""
    try:
        return float(json.loads(FOUNDATION.read_text(encoding="utf-8"))["figures"]["cold_update"]["value"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass
class Timing:
    corpus: str
    strategy: str
    files: int
    megabytes: float
    chunks: int
    first_s: float
    median_s: float
    runs: int
    strategies_used: dict[str, int]
    warnings: int
    oversized: int

    @property
    def mb_per_s(self) -> float:
        return self.megabytes / self.median_s

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.median_s


def markdown_corpus(corpus: Path) -> list[tuple[str, str]]:
    """The files tansaku would index (hidden entries excluded), sorted, as (path, text)."""
    docs: list[tuple[str, str]] = []
    for folder, dirs, names in os.walk(corpus):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.endswith(".md") and not name.startswith("."):
                path = Path(folder, name)
                docs.append((str(path), path.read_text(encoding="utf-8")))
    return docs


def code_corpus(root: Path, limit: int) -> list[tuple[str, str]]:
    docs: list[tuple[str, str]] = []
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        try:
            docs.append((str(path), path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
        if len(docs) >= limit:
            break
    return docs


def time_chunking(label: str, docs: list[tuple[str, str]], strategy: str, runs: int) -> Timing:
    params = ChunkParams(strategy=strategy)
    seconds: list[float] = []
    chunks = warnings = oversized = 0
    used: Counter[str] = Counter()
    for run in range(runs):
        started = time.perf_counter()
        results = [chunk_text(text, path, params) for path, text in docs]
        seconds.append(time.perf_counter() - started)
        if run == 0:
            for result in results:
                chunks += len(result.chunks)
                warnings += len(result.warnings)
                oversized += sum(c.oversized for c in result.chunks)
                used[result.strategy_used] += 1
    size = sum(len(text.encode("utf-8", "surrogatepass")) for _, text in docs) / 1e6
    return Timing(
        label,
        strategy,
        len(docs),
        size,
        chunks,
        seconds[0],
        statistics.median(seconds),
        runs,
        dict(used),
        warnings,
        oversized,
    )


def cold_update(corpus: Path, runs: int) -> list[float]:
    """``collection add`` on an empty index in a temporary config, as bench_foundation.py does."""
    out: list[float] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="tansaku-bench-chunking-") as tmp:
            env = dict(os.environ)
            env["TANSAKU_CONFIG_DIR"] = str(Path(tmp, "config"))
            env["TANSAKU_INDEX_PATH"] = str(Path(tmp, "index.sqlite"))
            env.pop("TANSAKU_DEBUG", None)
            started = time.perf_counter()
            proc = subprocess.run(
                [str(TANSAKU), "collection", "add", str(corpus), "--name", "bench"],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                check=False,
            )
            elapsed = time.perf_counter() - started
            if proc.returncode != 0:
                print(f"  ! collection add failed: {proc.stderr.decode()[:300]}", file=sys.stderr)
                return out
            out.append(elapsed)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=None, help=f"default: {corpus_gen.DEFAULT_OUT}")
    parser.add_argument("--runs", type=int, default=3, help="timed passes per corpus and strategy")
    parser.add_argument("--code-files", type=int, default=2000)
    parser.add_argument("--update-runs", type=int, default=1, help="cold `collection add` runs; 0 skips")
    parser.add_argument(
        "--baseline",
        type=float,
        default=None,
        help=f"cold update seconds without chunking (default: from {FOUNDATION.name} when present)",
    )
    parser.add_argument("--json", type=Path, dest="json_out", metavar="OUT", help="write the figures here")
    args = parser.parse_args(argv)

    corpus = args.corpus
    if corpus is None:
        corpus = corpus_gen.DEFAULT_OUT
        corpus_gen.ensure_corpus(corpus, quiet=True)
    corpus = corpus.resolve()
    print(f"reading {corpus} ...", file=sys.stderr)
    markdown = markdown_corpus(corpus)
    code = code_corpus(SITE_PACKAGES, args.code_files)

    timings = [
        time_chunking("markdown", markdown, "regex", args.runs),
        time_chunking("markdown", markdown, "auto", args.runs),
        time_chunking("python", code, "regex", args.runs),
        time_chunking("python", code, "auto", args.runs),
    ]
    updates = cold_update(corpus, args.update_runs) if args.update_runs > 0 else []

    print(f"\nchunk_text with {ChunkParams().fingerprint()}, {args.runs} runs each (first / median):")
    print(
        f"{'corpus':10} {'strategy':8} {'files':>6} {'MB':>6} {'chunks':>7} {'first s':>8} {'median s':>9}"
        f" {'MB/s':>6} {'chunks/s':>9}  strategies used"
    )
    for t in timings:
        used = ", ".join(f"{k} {v}" for k, v in sorted(t.strategies_used.items()))
        print(
            f"{t.corpus:10} {t.strategy:8} {t.files:6d} {t.megabytes:6.1f} {t.chunks:7d} {t.first_s:8.3f}"
            f" {t.median_s:9.3f} {t.mb_per_s:6.1f} {t.chunks_per_s:9.0f}  {used}"
            + (f"; {t.warnings} warnings" if t.warnings else "")
            + (f"; {t.oversized} oversized" if t.oversized else "")
        )
    verdict: dict[str, object] = {}
    worst = max(t.first_s for t in timings[:2])
    baseline = args.baseline if args.baseline is not None else foundation_cold_update()
    if updates:
        update = statistics.median(updates)
        verdict["cold_update_s"] = update
        print(
            f"\ncold update now (collection add, chunking included, {len(updates)} run(s), median):"
            f" {update:.2f} s; chunking is {worst / update:.0%} of it"
        )
    if baseline:
        share = worst / baseline
        verdict |= {"baseline_update_s": baseline, "chunking_s": worst, "share": share}
        verdict["ok"] = share <= TARGET_SHARE
        print(
            f"chunking the Markdown corpus (slowest first run): {worst:.2f} s = {share:.0%} of the"
            f" {baseline:.2f} s cold update without chunking"
            f" (target <= {TARGET_SHARE:.0%}: {'ok' if share <= TARGET_SHARE else 'MISSED'})"
        )
    if args.json_out:
        data = {
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "params": ChunkParams().fingerprint(),
            "timings": [
                asdict(t) | {"mb_per_s": t.mb_per_s, "chunks_per_s": t.chunks_per_s} for t in timings
            ],
            "cold_update_runs_s": updates,
            "verdict": verdict,
        }
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
