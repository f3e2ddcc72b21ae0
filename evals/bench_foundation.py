"""Foundation benchmark: indexing and keyword-search speed on a 10,000-file Markdown corpus.

    .venv/bin/python evals/bench_foundation.py [--corpus DIR] [--runs 20] [--json OUT]

Not a test (CI does not run it). It measures, through the real entry point ``bin/tansaku`` in
subprocesses (and the library in-process for the last figure):

- cold update: ``bin/tansaku collection add CORPUS --name bench`` on an empty index, 3 times with
  fresh index and config files (the OS file cache is warm: the corpus is read once beforehand);
- no-change update: ``bin/tansaku update`` on the built index, 10 times after one warm-up run;
- whole-process search: ``bin/tansaku search QUERY --format cli > /dev/null``, ``--runs`` times per
  query, English and Chinese queries apart (median and p90 over all their runs);
- in-process search: ``Tansaku().search(q, limit=5)`` over a few hundred queries after a warm-up
  call, English and Chinese apart (p50 and p95).

Everything runs against a temporary ``TANSAKU_CONFIG_DIR`` and ``TANSAKU_INDEX_PATH``; the user's
real config and index are never touched. Without ``--corpus`` the deterministic corpus from
``corpus_gen.py`` is generated (once) into ``evals/cache/corpus-10k``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import platform
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

EVALS = Path(__file__).resolve().parent
REPO = EVALS.parent
TANSAKU = REPO / "bin" / "tansaku"
sys.path.insert(0, str(EVALS))

import corpus_gen  # noqa: E402  (a sibling script, not a package)

COLLECTION = "bench"
ENGLISH_QUERIES = (
    "backup",
    "kernel",
    "compression ratio",
    "sqlite transaction",
    '"incremental backup"',
)
CHINESE_QUERIES = ("压缩", "权限", "备份", "文件 权限", "压缩文件")

TARGETS = {  # seconds; a 2-core machine
    "cold_update": 20.0,
    "nochange_update": 0.7,
    "search_process_en": 0.150,
    "search_process_zh": 0.300,
    "search_inprocess_en": 0.020,
    "search_inprocess_zh": 0.020,
}
UPDATE_COUNTS = re.compile(
    r"added (\d+), updated (\d+), moved (\d+), unchanged (\d+), removed (\d+), skipped (\d+)"
)


# --- statistics --------------------------------------------------------------------------------


def percentile(samples: Sequence[float], p: float) -> float:
    """Nearest-rank percentile: the smallest sample with at least p% of the samples at or below it."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def summary(samples: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "median": statistics.median(samples),
        "p90": percentile(samples, 90),
        "p95": percentile(samples, 95),
        "min": min(samples),
        "max": max(samples),
    }


# --- running tansaku ---------------------------------------------------------------------------


@dataclass
class Sandbox:
    """A temporary config dir and index file: the only tansaku state the benchmark touches.

    With ``pycache`` set, Python keeps bytecode there (``PYTHONPYCACHEPREFIX``) even when the
    environment says ``PYTHONDONTWRITEBYTECODE``: an installed tansaku has its ``.pyc`` files, and
    without them every run recompiles the package (~20 ms). Nothing is written under ``src/``.
    """

    root: Path
    pycache: Path | None = None

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def index_path(self) -> Path:
        return self.root / "index.sqlite"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["TANSAKU_CONFIG_DIR"] = str(self.config_dir)
        env["TANSAKU_INDEX_PATH"] = str(self.index_path)
        env.pop("TANSAKU_DEBUG", None)
        if self.pycache is not None:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(self.pycache)
        return env

    def with_pycache(self, pycache: Path | None) -> Sandbox:
        return Sandbox(self.root, pycache)

    def index_bytes(self) -> int:
        return sum(
            p.stat().st_size
            for p in (self.index_path, Path(f"{self.index_path}-wal"), Path(f"{self.index_path}-shm"))
            if p.exists()
        )


@dataclass
class Run:
    seconds: float
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Observations:
    notes: list[str] = field(default_factory=list)

    def add(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)
            print(f"  ! {note}", file=sys.stderr)


def run_tansaku(
    args: Sequence[str], sandbox: Sandbox, *, capture: bool = True, no_bytecode: bool = False
) -> Run:
    """One whole ``bin/tansaku`` process, timed from spawn to exit. Without capture stdout is /dev/null."""
    env = sandbox.env()
    if no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    started = time.perf_counter()
    proc = subprocess.run(
        [str(TANSAKU), *args],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - started
    out = proc.stdout.decode("utf-8", "replace") if capture else ""
    return Run(seconds, proc.returncode, out, proc.stderr.decode("utf-8", "replace"))


def check_run(run: Run, what: str, obs: Observations) -> None:
    if run.returncode != 0:
        obs.add(f"{what}: exit code {run.returncode}; stderr: {run.stderr.strip()[:300]}")
    elif run.stderr.strip():
        obs.add(f"{what}: printed to stderr: {run.stderr.strip()[:300]}")


def update_counts(text: str) -> dict[str, int] | None:
    found = UPDATE_COUNTS.search(text)
    if not found:
        return None
    keys = ("added", "updated", "moved", "unchanged", "removed", "skipped")
    return dict(zip(keys, map(int, found.groups()), strict=True))


def corpus_files(corpus: Path) -> tuple[list[Path], int]:
    """The Markdown files tansaku should index (hidden entries excluded, as its walk does) and their bytes."""
    files: list[Path] = []
    for folder, dirs, names in os.walk(corpus):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        files += [Path(folder, n) for n in names if n.endswith(".md") and not n.startswith(".")]
    return files, sum(f.stat().st_size for f in files)


def prime_file_cache(files: Sequence[Path]) -> float:
    started = time.perf_counter()
    for path in files:
        path.read_bytes()
    return time.perf_counter() - started


# --- the measurements --------------------------------------------------------------------------


@dataclass
class Figure:
    key: str
    label: str
    value: float  # seconds: the figure compared with the target
    stat: str  # which statistic ``value`` is
    spread: str  # human-readable spread
    command: str
    samples: list[float]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> float:
        return TARGETS[self.key]

    @property
    def passed(self) -> bool:
        return self.value <= self.target


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.01:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds * 1000:.1f} ms"


def bench_cold_update(
    corpus: Path, work: Path, pycache: Path | None, repeats: int, expected: int, obs: Observations
) -> tuple[Figure, Sandbox]:
    args = ["collection", "add", str(corpus), "--name", COLLECTION]
    samples: list[float] = []
    sizes: list[int] = []
    sandbox = Sandbox(work / "cold-0", pycache)
    for i in range(repeats):
        if i:
            shutil.rmtree(sandbox.root)  # keep one index on disk at a time
        sandbox = Sandbox(work / f"cold-{i}", pycache)
        sandbox.root.mkdir()
        run = run_tansaku(args, sandbox)
        check_run(run, "collection add", obs)
        counts = update_counts(run.stdout)
        if counts is None:
            obs.add(f"collection add: no counts in its output: {run.stdout.strip()[:300]!r}")
        elif counts["added"] != expected or counts["skipped"] or counts["updated"] or counts["removed"]:
            obs.add(f"collection add: expected {expected} added, nothing else; got {counts}")
        samples.append(run.seconds)
        sizes.append(sandbox.index_bytes())
        print(f"  cold update {i + 1}/{repeats}: {_fmt(run.seconds)}", file=sys.stderr)
    figure = Figure(
        key="cold_update",
        label="cold update (collection add, empty index)",
        value=statistics.median(samples),
        stat="median",
        spread=f"min {_fmt(min(samples))}, max {_fmt(max(samples))} (n={len(samples)})",
        command=f"bin/tansaku {shlex.join(args)}",
        samples=samples,
        extra={"index_bytes": sizes[-1], "documents": expected},
    )
    return figure, sandbox


def bench_nochange_update(sandbox: Sandbox, repeats: int, expected: int, obs: Observations) -> Figure:
    warm = run_tansaku(["update"], sandbox)
    check_run(warm, "update", obs)
    samples: list[float] = []
    for _ in range(repeats):
        run = run_tansaku(["update"], sandbox)
        check_run(run, "update", obs)
        counts = update_counts(run.stdout)
        if (
            counts is None
            or counts["unchanged"] != expected
            or any(counts[k] for k in ("added", "updated", "moved", "removed", "skipped"))
        ):
            obs.add(f"no-change update: expected {expected} unchanged and nothing else; got {counts}")
        samples.append(run.seconds)
    return Figure(
        key="nochange_update",
        label="no-change update",
        value=statistics.median(samples),
        stat="median",
        spread=f"min {_fmt(min(samples))}, max {_fmt(max(samples))} (n={len(samples)}); "
        f"first run after add {_fmt(warm.seconds)}",
        command="bin/tansaku update",
        samples=samples,
        extra={"first_run_after_add": warm.seconds},
    )


def bench_search_process(
    sandbox: Sandbox, key: str, label: str, queries: Sequence[str], runs: int, obs: Observations
) -> Figure:
    for query in queries:  # one warm-up each, also a check that it runs cleanly
        check_run(run_tansaku(["search", query, "--format", "cli"], sandbox), f"search {query!r}", obs)
    samples: list[float] = []
    per_query: dict[str, list[float]] = {q: [] for q in queries}
    for _ in range(runs):
        for query in queries:  # round robin, so drift in machine load hits every query alike
            run = run_tansaku(["search", query, "--format", "cli"], sandbox, capture=False)
            check_run(run, f"search {query!r}", obs)
            samples.append(run.seconds)
            per_query[query].append(run.seconds)
    stats = summary(samples)
    return Figure(
        key=key,
        label=label,
        value=stats["median"],
        stat="median",
        spread=f"p90 {_fmt(stats['p90'])}, min {_fmt(stats['min'])}, max {_fmt(stats['max'])} "
        f"(n={len(samples)}: {len(queries)} queries x {runs})",
        command="bin/tansaku search QUERY --format cli > /dev/null; QUERY in "
        + ", ".join(shlex.quote(q) for q in queries),
        samples=samples,
        extra={
            "p90": stats["p90"],
            "per_query_median": {q: statistics.median(v) for q, v in per_query.items()},
        },
    )


def bench_search_no_bytecode(sandbox: Sandbox, runs: int, obs: Observations) -> dict[str, float]:
    """English whole-process search with no bytecode cache at all (``PYTHONDONTWRITEBYTECODE=1``)."""
    bare = sandbox.with_pycache(None)
    samples: list[float] = []
    for _ in range(runs):
        for query in ENGLISH_QUERIES:
            env_run = run_tansaku(["search", query, "--format", "cli"], bare, capture=False, no_bytecode=True)
            check_run(env_run, f"search {query!r} (no bytecode cache)", obs)
            samples.append(env_run.seconds)
    return summary(samples)


def source_digest() -> str:
    """A digest of the package source, to notice edits made while the benchmark runs."""
    digest = hashlib.sha256()
    for path in sorted((REPO / "src").rglob("*.py")):
        try:
            digest.update(path.relative_to(REPO).as_posix().encode() + b"\0" + path.read_bytes())
        except OSError:
            digest.update(b"?")
    return digest.hexdigest()


def english_query_pool(rng: random.Random) -> list[str]:
    """One-word, two-word and phrase queries over the corpus vocabulary (topic and general words)."""
    vocab = corpus_gen.Vocabulary.build()
    topic_words = sorted({w for words, _ in vocab.topics.values() for w in words})
    general = vocab.english[150:1500]
    pool = rng.sample(topic_words, 50) + rng.sample(general, 20)
    for words, _ in vocab.topics.values():
        pool.append(" ".join(rng.sample(words, 2)))
    pool += [f'"{phrase}"' for _, phrases in vocab.topics.values() for phrase in phrases[:1]]
    rng.shuffle(pool)
    return pool


def chinese_query_pool(rng: random.Random) -> list[str]:
    vocab = corpus_gen.Vocabulary.build()
    pool = rng.sample(vocab.chinese, 60)
    for words in vocab.chinese_topics.values():
        a, b = rng.sample(words, 2)
        pool += [f"{a} {b}", a + b]  # two words, and the same written as one compound
    rng.shuffle(pool)
    return pool


def bench_search_inprocess(
    sandbox: Sandbox, calls: int, obs: Observations
) -> tuple[Figure, Figure, dict[str, Any]]:
    os.environ["TANSAKU_CONFIG_DIR"] = str(sandbox.config_dir)
    os.environ["TANSAKU_INDEX_PATH"] = str(sandbox.index_path)
    sys.path.insert(0, str(REPO / "src"))  # the same source bin/tansaku runs
    started = time.perf_counter()
    from tansaku.api import Tansaku

    import_seconds = time.perf_counter() - started
    api = Tansaku()
    rng = random.Random(20240601)
    pools = {"en": english_query_pool(rng), "zh": chinese_query_pool(rng)}
    first: dict[str, float] = {}
    for lang, warm_query in (("en", ENGLISH_QUERIES[0]), ("zh", CHINESE_QUERIES[0])):
        t0 = time.perf_counter()
        api.search(warm_query, limit=5)
        first[lang] = time.perf_counter() - t0
    figures = []
    details: dict[str, Any] = {"import_seconds": import_seconds, "first_call_seconds": first}
    for lang, pool in pools.items():
        samples: list[float] = []
        per_query: dict[str, list[float]] = {}
        zero_hits: set[str] = set()
        for i in range(calls):
            query = pool[i % len(pool)]
            t0 = time.perf_counter()
            result = api.search(query, limit=5)
            seconds = time.perf_counter() - t0
            samples.append(seconds)
            per_query.setdefault(query, []).append(seconds)
            if not result.hits:
                zero_hits.add(query)
        if zero_hits:
            obs.add(f"in-process {lang}: no hits for {sorted(zero_hits)}")
        stats = summary(samples)
        slowest = sorted(per_query.items(), key=lambda kv: -statistics.median(kv[1]))[:5]
        key = f"search_inprocess_{lang}"
        figures.append(
            Figure(
                key=key,
                label=f"in-process search p50, {'English' if lang == 'en' else 'Chinese'}",
                value=stats["median"],
                stat="p50",
                spread=f"p95 {_fmt(stats['p95'])}, max {_fmt(stats['max'])} "
                f"(n={calls} over {len(pool)} queries)",
                command="Tansaku().search(q, limit=5)",
                samples=samples,
                extra={
                    "p95": stats["p95"],
                    "slowest_queries_median": {q: statistics.median(v) for q, v in slowest},
                },
            )
        )
    return figures[0], figures[1], details


# --- machine facts and output ------------------------------------------------------------------


def _command_output(args: Sequence[str]) -> str | None:
    try:
        proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _shown_python() -> str:
    """The interpreter as typed from the repo root: ``.venv/bin/python`` rather than an absolute path."""
    exe = Path(sys.executable)
    try:
        return exe.relative_to(REPO).as_posix()
    except ValueError:
        return str(exe)


def machine_facts() -> dict[str, Any]:
    import sqlean

    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = _command_output(["git", "rev-parse", "--short", "HEAD"])
    dirty = _command_output(["git", "status", "--porcelain", "--untracked-files=no", "--", "src"])
    tansaku_version = _command_output([str(TANSAKU), "--version"])
    return {
        "date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nproc": _command_output(["nproc"]) or str(len(os.sched_getaffinity(0))),
        "cpu": cpu,
        "memory": _meminfo(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "sqlite": sqlean.sqlite_version,
        "tansaku": tansaku_version,
        "git_commit": (commit + ("+dirty(src)" if dirty else "")) if commit else "unknown (no commit)",
    }


def _meminfo() -> str | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError):
        pass
    return None


def table(figures: Sequence[Figure]) -> list[str]:
    rows = [["figure", "value", "spread", "target", "result", "command"]]
    for f in figures:
        rows.append(
            [
                f.label,
                f"{_fmt(f.value)} ({f.stat})",
                f.spread,
                f"<= {_fmt(f.target)}",
                "pass" if f.passed else "FAIL",
                f.command,
            ]
        )
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows[1:]]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=None, help=f"default: {corpus_gen.DEFAULT_OUT}")
    parser.add_argument("--runs", type=int, default=20, help="whole-process runs per search query")
    parser.add_argument("--json", type=Path, dest="json_out", metavar="OUT", help="write the figures here")
    parser.add_argument("--cold-repeats", type=int, default=3)
    parser.add_argument("--update-repeats", type=int, default=10)
    parser.add_argument("--inprocess-calls", type=int, default=300, help="per language, after a warm-up")
    parser.add_argument("--keep", action="store_true", help="keep the temporary index and config")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="run bin/tansaku with the environment's bytecode settings instead of a sandboxed .pyc cache",
    )
    args = parser.parse_args(argv)

    if args.corpus is None:
        stamp: dict[str, object] | None = corpus_gen.ensure_corpus(corpus_gen.DEFAULT_OUT)
        corpus = corpus_gen.DEFAULT_OUT.resolve()
    else:
        corpus = args.corpus.resolve()
        stamp = corpus_gen.read_stamp(corpus)
    if not corpus.is_dir():
        parser.error(f"no corpus folder at {corpus}")
    files, corpus_bytes = corpus_files(corpus)
    facts = machine_facts()
    print(f"corpus: {corpus}: {len(files)} Markdown files, {corpus_bytes / 1e6:.1f} MB", file=sys.stderr)
    prime_seconds = prime_file_cache(files)

    obs = Observations()
    src_before = source_digest()
    work = Path(tempfile.mkdtemp(prefix="tansaku-bench-"))
    try:
        print(f"sandbox: {work}", file=sys.stderr)
        pycache = None if args.no_bytecode_cache else work / "pycache"
        if pycache is not None:  # compile once up front, into the sandbox, so no timed run pays for it
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "tansaku")],
                env=Sandbox(work, pycache).env(),
                check=True,
            )
        cold, sandbox = bench_cold_update(corpus, work, pycache, args.cold_repeats, len(files), obs)
        print("  no-change update ...", file=sys.stderr)
        nochange = bench_nochange_update(sandbox, args.update_repeats, len(files), obs)
        print("  whole-process search ...", file=sys.stderr)
        search_en = bench_search_process(
            sandbox,
            "search_process_en",
            "whole-process search, English",
            ENGLISH_QUERIES,
            args.runs,
            obs,
        )
        search_zh = bench_search_process(
            sandbox,
            "search_process_zh",
            "whole-process search, Chinese",
            CHINESE_QUERIES,
            args.runs,
            obs,
        )
        no_bytecode = None
        if pycache is not None:
            print("  whole-process search without a bytecode cache (informational) ...", file=sys.stderr)
            no_bytecode = bench_search_no_bytecode(sandbox, max(1, args.runs // 4), obs)
        print("  in-process search ...", file=sys.stderr)
        inproc_en, inproc_zh, inproc_details = bench_search_inprocess(sandbox, args.inprocess_calls, obs)
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    if source_digest() != src_before:
        obs.add("the source under src/ changed while the benchmark ran: figures may mix two versions")
    figures = [cold, nochange, search_en, search_zh, inproc_en, inproc_zh]
    bytecode = (
        "the environment's bytecode settings"
        if pycache is None
        else "a bytecode cache in the sandbox (PYTHONPYCACHEPREFIX), as an installed tansaku has"
    )
    lines = [
        "",
        f"tansaku foundation benchmark, {facts['date_utc']}",
        f"git {facts['git_commit']}; {facts['tansaku']}; Python {facts['python']}; "
        f"SQLite {facts['sqlite']}; nproc {facts['nproc']}; {facts['cpu']}; {facts['memory']} RAM",
        f"corpus: {corpus} ({len(files)} files, {corpus_bytes / 1e6:.1f} MB"
        + (f", seed {stamp.get('seed')}, sha256 {str(stamp.get('sha256'))[:12]}" if stamp else "")
        + ")",
        "commands run from the repo root with TANSAKU_CONFIG_DIR=<tmp>/config "
        "TANSAKU_INDEX_PATH=<tmp>/index.sqlite; times are wall clock from spawn to exit",
        f"bin/tansaku ran with {bytecode}",
        "",
        *table(figures),
        "",
        f"index size after add: {cold.extra['index_bytes'] / 1e6:.1f} MB; reading the corpus once "
        f"(file cache primed): {_fmt(prime_seconds)}",
        f"in-process: import {_fmt(inproc_details['import_seconds'])}, first English call "
        f"{_fmt(inproc_details['first_call_seconds']['en'])}, first Chinese call "
        f"{_fmt(inproc_details['first_call_seconds']['zh'])} (loads the segmenter)",
        "per-query whole-process medians: "
        + ", ".join(
            f"{q} {_fmt(s)}" for f in (search_en, search_zh) for q, s in f.extra["per_query_median"].items()
        ),
    ]
    if no_bytecode is not None:
        lines.append(
            "whole-process English search with no bytecode cache (PYTHONDONTWRITEBYTECODE=1): "
            f"median {_fmt(no_bytecode['median'])}, p90 {_fmt(no_bytecode['p90'])} (n={no_bytecode['n']})"
        )
    failed = [f.label for f in figures if not f.passed]
    lines.append("result: " + ("all targets met" if not failed else "FAILED: " + "; ".join(failed)))
    if obs.notes:
        lines += ["observations:", *(f"- {n}" for n in obs.notes)]
    print("\n".join(lines))

    if args.json_out:
        payload = {
            "machine": facts,
            "corpus": {
                "path": str(corpus),
                "files": len(files),
                "bytes": corpus_bytes,
                "stamp": stamp,
            },
            "command": shlex.join([_shown_python(), *sys.argv]),
            "figures": {f.key: asdict(f) | {"target": f.target, "passed": f.passed} for f in figures},
            "in_process": inproc_details,
            "bytecode": bytecode,
            "search_process_en_no_bytecode_cache": no_bytecode,
            "observations": obs.notes,
            "prime_file_cache_seconds": prime_seconds,
        }
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.json_out}", file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
