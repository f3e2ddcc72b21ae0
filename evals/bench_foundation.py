"""Foundation benchmark: indexing and keyword-search speed on a synthetic Markdown corpus.

    .venv/bin/python evals/bench_foundation.py [--corpus DIR] [--runs 20] [--json OUT]
    .venv/bin/python evals/bench_foundation.py --files 100000 --inprocess-only [--json OUT]

Not a test (CI does not run it). It measures, through the installed console script
(``.venv/bin/tansaku``, next to the Python running this script; ``bin/tansaku`` when there is none,
and the output says which) in subprocesses, and the library in-process for the last figures:

- cold update: ``tansaku collection add CORPUS --name bench`` on an empty index, 3 times with
  fresh index and config files (the OS file cache is warm: the corpus is read once beforehand);
- no-change update: ``tansaku update`` on the built index, 10 times after one warm-up run;
- whole-process search: ``tansaku search QUERY --format cli > /dev/null``, ``--runs`` times per
  query, English and Chinese queries apart (median and p90 over all their runs);
- in-process search: ``Tansaku().search(q, limit=5)`` after a warm-up call, per query group (p50
  and p95): the English and Chinese pools, ten long natural-language questions full of common
  words, and the three queries reported in issue 9.

``--files N`` generates (once) and uses a corpus of N files (``evals/cache/corpus-10k`` for the
default 10,000, ``corpus-100k`` for 100,000, ...). ``--inprocess-only`` builds the index once and
measures only in-process search: at 100,000 files a cold ``collection add`` alone takes minutes.

Everything runs against a temporary ``TANSAKU_CONFIG_DIR`` and ``TANSAKU_INDEX_PATH``; the user's
real config and index are never touched. The load average (1 minute) is shown with every figure:
the machine may be shared.
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
WRAPPER = REPO / "bin" / "tansaku"
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
# Questions as people type them to a search box: mostly common words (optional in tansaku's
# queries), a few topic words. Every word that is not a stopword occurs in corpus_gen's vocabulary,
# so a question is never a partial match merely because the generator lacks a word.
LONG_QUERIES = (
    "how do I restore a file from the nightly backup",
    "what is a good compression level for a large archive",
    "why does the docker container miss its volume after a restart",
    "how can I change the file permissions for a group of users",
    "where should I keep the database schema migration scripts",
    "what was decided about the roadmap in the weekly meeting",
    "how do I fix a merge conflict after an interactive rebase",
    "which firmware update makes the laptop battery life better",
    "how long should the bread dough stay in the oven before it is ready",
    "what is the difference between a reverse proxy and a default gateway",
)
# The slow queries reported in issue 9, measured as typed. Words the generated corpus lacks are
# listed in the output (such a query exercises the partial-match fallback instead).
ISSUE_QUERIES = ("quixotry would", "as score steatraier", "in")

TARGETS = {  # seconds; a 2-core machine
    "cold_update": 20.0,
    "nochange_update": 0.7,
    "search_process_en": 0.150,
    "search_process_zh": 0.300,
    "search_inprocess_en": 0.020,
    "search_inprocess_zh": 0.020,
}
# Issue 9's targets for in-process search per query group, at any corpus size (100,000 files).
GROUP_TARGETS = {"p50": 0.100, "p95": 0.250}
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


@dataclass(frozen=True)
class EntryPoint:
    """The command every subprocess runs, and how the output names it."""

    path: Path
    label: str  # in the figures' commands: ".venv/bin/tansaku" or "bin/tansaku"
    note: str  # one sentence for the output: which entry point, and why


def find_entry_point() -> EntryPoint:
    """The console script installed next to the Python running the benchmark, else bin/tansaku.

    The console script is what users run (pip's wrapper, then the package's own imports); the
    wrapper starts Python with ``-m tansaku``, which imports a little differently (runpy).
    """
    # Not resolved: a venv's python is a symlink to the base interpreter, whose bin has no tansaku.
    script = Path(sys.executable).parent / "tansaku"
    if script.is_file() and os.access(script, os.X_OK):
        return EntryPoint(script, _shown_path(script), f"the installed console script {script}")
    return EntryPoint(
        WRAPPER,
        "bin/tansaku",
        f"bin/tansaku (python -m tansaku with PYTHONPATH=src): there is no console script next to "
        f"{sys.executable}, so this is not exactly what an installed tansaku runs",
    )


def entry_package_dir(entry: EntryPoint) -> Path:
    """The tansaku package folder the entry point imports (an editable install: src/tansaku)."""
    if entry.path == WRAPPER:
        return REPO / "src" / "tansaku"
    proc = subprocess.run(
        [sys.executable, "-c", "import os, tansaku; print(os.path.dirname(tansaku.__file__))"],
        cwd="/",  # not the repo root, so a stray ./tansaku cannot shadow the installed package
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(proc.stdout.strip())


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


@dataclass
class Sandbox:
    """A temporary config dir and index file: the only tansaku state the benchmark touches.

    With ``pycache`` set, Python keeps bytecode there (``PYTHONPYCACHEPREFIX``) even when the
    environment says ``PYTHONDONTWRITEBYTECODE``: an installed tansaku has its ``.pyc`` files, and
    without them every run recompiles the package (~20 ms). Nothing is written under ``src/``.
    """

    root: Path
    entry: EntryPoint
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
        return Sandbox(self.root, self.entry, pycache)

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
    """One whole tansaku process, timed from spawn to exit. Without capture stdout is /dev/null."""
    env = sandbox.env()
    if no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    started = time.perf_counter()
    proc = subprocess.run(
        [str(sandbox.entry.path), *args],
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
    load: str = ""  # 1-minute load average when the figure started and ended

    @property
    def target(self) -> float:
        return TARGETS[self.key]

    @property
    def passed(self) -> bool:
        return self.value <= self.target


def _load_span(start: float) -> str:
    return f"{start:.2f} -> {load_average():.2f}"


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.01:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds * 1000:.1f} ms"


def bench_cold_update(
    corpus: Path,
    work: Path,
    entry: EntryPoint,
    pycache: Path | None,
    repeats: int,
    expected: int,
    obs: Observations,
) -> tuple[Figure, Sandbox]:
    args = ["collection", "add", str(corpus), "--name", COLLECTION]
    samples: list[float] = []
    sizes: list[int] = []
    load_start = load_average()
    sandbox = Sandbox(work / "cold-0", entry, pycache)
    for i in range(repeats):
        if i:
            shutil.rmtree(sandbox.root)  # keep one index on disk at a time
        sandbox = Sandbox(work / f"cold-{i}", entry, pycache)
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
        command=f"{entry.label} {shlex.join(args)}",
        samples=samples,
        extra={"index_bytes": sizes[-1], "documents": expected},
        load=_load_span(load_start),
    )
    return figure, sandbox


def bench_nochange_update(sandbox: Sandbox, repeats: int, expected: int, obs: Observations) -> Figure:
    load_start = load_average()
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
        command=f"{sandbox.entry.label} update",
        samples=samples,
        extra={"first_run_after_add": warm.seconds},
        load=_load_span(load_start),
    )


def bench_search_process(
    sandbox: Sandbox, key: str, label: str, queries: Sequence[str], runs: int, obs: Observations
) -> Figure:
    load_start = load_average()
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
        command=f"{sandbox.entry.label} search QUERY --format cli > /dev/null; QUERY in "
        + ", ".join(shlex.quote(q) for q in queries),
        samples=samples,
        extra={
            "p90": stats["p90"],
            "per_query_median": {q: statistics.median(v) for q, v in per_query.items()},
        },
        load=_load_span(load_start),
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


@dataclass
class GroupResult:
    """In-process search over one group of queries, round robin."""

    name: str
    label: str
    queries: list[str]
    samples: list[float]
    per_query: dict[str, list[float]]
    outcome: dict[str, dict[str, Any]]  # query -> total matches and warning codes (from its last call)
    load: str

    @property
    def stats(self) -> dict[str, float]:
        return summary(self.samples)

    @property
    def passed(self) -> bool:
        stats = self.stats
        return stats["median"] <= GROUP_TARGETS["p50"] and stats["p95"] <= GROUP_TARGETS["p95"]

    def medians(self) -> dict[str, float]:
        return {q: statistics.median(v) for q, v in self.per_query.items()}

    def to_json(self) -> dict[str, Any]:
        stats = self.stats
        return {
            "label": self.label,
            "queries": len(self.queries),
            "calls": len(self.samples),
            "p50": stats["median"],
            "p95": stats["p95"],
            "max": stats["max"],
            "target": GROUP_TARGETS,
            "passed": self.passed,
            "load": self.load,
            "per_query_median": self.medians(),
            "outcome": self.outcome,
            "samples": self.samples,
        }


def run_group(
    api: Any, name: str, label: str, pool: Sequence[str], calls: int, obs: Observations
) -> GroupResult:
    load_start = load_average()
    samples: list[float] = []
    per_query: dict[str, list[float]] = {}
    outcome: dict[str, dict[str, Any]] = {}
    for i in range(calls):
        query = pool[i % len(pool)]
        t0 = time.perf_counter()
        result = api.search(query, limit=5)
        seconds = time.perf_counter() - t0
        samples.append(seconds)
        per_query.setdefault(query, []).append(seconds)
        outcome[query] = {
            "total": result.total,
            "hits": len(result.hits),
            "warnings": [w.code for w in result.warnings],
        }
    zero_hits = sorted(q for q, o in outcome.items() if not o["hits"])
    if zero_hits:
        obs.add(f"in-process {name}: no hits for {zero_hits}")
    return GroupResult(name, label, list(pool), samples, per_query, outcome, _load_span(load_start))


def corpus_word_counts(index_path: Path, queries: Sequence[str]) -> dict[str, int | None]:
    """Documents containing each word of ``queries`` (None: the index could not say)."""
    import sqlean

    words = list(dict.fromkeys(w for q in queries for w in q.split()))
    counts: dict[str, int | None] = {}
    conn = sqlean.connect(f"file:{index_path}?mode=ro", uri=True)
    try:
        for word in words:
            try:
                row = conn.execute(
                    "SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?", (f'"{word}"',)
                ).fetchone()
                counts[word] = int(row[0])
            except sqlean.DatabaseError:
                counts[word] = None
    finally:
        conn.close()
    return counts


def bench_search_inprocess(
    sandbox: Sandbox, package_dir: Path, calls: int, repeats: int, obs: Observations
) -> tuple[list[GroupResult], dict[str, Any]]:
    """``Tansaku().search(q, limit=5)`` per query group, on the code the entry point runs."""
    os.environ["TANSAKU_CONFIG_DIR"] = str(sandbox.config_dir)
    os.environ["TANSAKU_INDEX_PATH"] = str(sandbox.index_path)
    sys.path.insert(0, str(package_dir.parent))  # the same source the entry point imports
    started = time.perf_counter()
    from tansaku.api import Tansaku

    import_seconds = time.perf_counter() - started
    api = Tansaku()
    rng = random.Random(20240601)
    en_pool, zh_pool = english_query_pool(rng), chinese_query_pool(rng)
    first: dict[str, float] = {}
    for lang, warm_query in (("en", ENGLISH_QUERIES[0]), ("zh", CHINESE_QUERIES[0])):
        t0 = time.perf_counter()
        api.search(warm_query, limit=5)
        first[lang] = time.perf_counter() - t0
    word_counts = corpus_word_counts(sandbox.index_path, ISSUE_QUERIES)
    absent = [w for w, n in word_counts.items() if n == 0]
    if absent:
        obs.add(
            f"issue-9 queries: not in the generated corpus: {', '.join(absent)} "
            "(those queries are measured as typed all the same)"
        )
    groups = [
        run_group(api, "en", "English pool (topic, general, two-word, phrases)", en_pool, calls, obs),
        run_group(api, "zh", "Chinese pool (words, two words, compounds)", zh_pool, calls, obs),
        run_group(
            api, "long", "long questions (common words)", LONG_QUERIES, len(LONG_QUERIES) * repeats, obs
        ),
        run_group(api, "issue9", "issue 9 queries", ISSUE_QUERIES, len(ISSUE_QUERIES) * repeats, obs),
    ]
    details: dict[str, Any] = {
        "import_seconds": import_seconds,
        "first_call_seconds": first,
        "imported_from": str(package_dir),
        "issue_query_word_documents": word_counts,
    }
    return groups, details


def legacy_inprocess_figure(group: GroupResult, lang: str) -> Figure:
    """The 10,000-file table's in-process figure (p50 against the 20 ms target) from a group."""
    stats = group.stats
    slowest = sorted(group.per_query.items(), key=lambda kv: -statistics.median(kv[1]))[:5]
    return Figure(
        key=f"search_inprocess_{lang}",
        label=f"in-process search p50, {'English' if lang == 'en' else 'Chinese'}",
        value=stats["median"],
        stat="p50",
        spread=f"p95 {_fmt(stats['p95'])}, max {_fmt(stats['max'])} "
        f"(n={len(group.samples)} over {len(group.queries)} queries)",
        command="Tansaku().search(q, limit=5)",
        samples=group.samples,
        extra={
            "p95": stats["p95"],
            "slowest_queries_median": {q: statistics.median(v) for q, v in slowest},
        },
        load=group.load,
    )


def all_groups(groups: Sequence[GroupResult]) -> GroupResult:
    """Every call of every group as one mix (weighted by each group's number of calls)."""
    merged = GroupResult("all", "all groups together", [], [], {}, {}, "")
    for g in groups:
        merged.queries += g.queries
        merged.samples += g.samples
    loads = [g.load.split(" -> ") for g in groups if g.load]
    merged.load = f"{loads[0][0]} -> {loads[-1][-1]}" if loads else ""
    return merged


def group_table(groups: Sequence[GroupResult]) -> list[str]:
    rows = [["group", "queries", "calls", "p50", "p95", "max", "target", "result", "load (1 min)"]]
    target = f"p50 <= {_fmt(GROUP_TARGETS['p50'])}, p95 <= {_fmt(GROUP_TARGETS['p95'])}"
    for g in [*groups, all_groups(groups)]:
        stats = g.stats
        rows.append(
            [
                g.label,
                str(len(g.queries)),
                str(len(g.samples)),
                _fmt(stats["median"]),
                _fmt(stats["p95"]),
                _fmt(stats["max"]),
                target,
                "pass" if g.passed else "FAIL",
                g.load,
            ]
        )
    return _markdown_rows(rows)


def group_details(groups: Sequence[GroupResult], word_counts: dict[str, int | None]) -> list[str]:
    lines: list[str] = []
    for g in groups:
        if g.name in ("en", "zh"):
            slowest = sorted(g.medians().items(), key=lambda kv: -kv[1])[:5]
            lines.append(
                f"slowest {g.name} queries (median): " + ", ".join(f"{q} {_fmt(s)}" for q, s in slowest)
            )
            continue
        lines.append(f"{g.label}, per query (median; matches; warnings):")
        for query, seconds in g.medians().items():
            o = g.outcome[query]
            warns = ", ".join(o["warnings"]) or "-"
            lines.append(f"  {_fmt(seconds):>8}  {query!r}: {o['total']} matches; {warns}")
    lines.append(
        "documents containing each issue-9 word: "
        + ", ".join(f"{w} {'?' if n is None else n}" for w, n in word_counts.items())
    )
    return lines


# --- machine facts and output ------------------------------------------------------------------


def _command_output(args: Sequence[str]) -> str | None:
    try:
        proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _shown_path(path: Path) -> str:
    """A path as typed from the repo root (``.venv/bin/python``) when it is inside the repo."""
    try:
        return path.relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def _shown_python() -> str:
    return _shown_path(Path(sys.executable))


def machine_facts(entry: EntryPoint) -> dict[str, Any]:
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
    tansaku_version = _command_output([str(entry.path), "--version"])
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


def _markdown_rows(rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows[1:]]
    return out


def table(figures: Sequence[Figure]) -> list[str]:
    rows = [["figure", "value", "spread", "target", "result", "load (1 min)", "command"]]
    for f in figures:
        rows.append(
            [
                f.label,
                f"{_fmt(f.value)} ({f.stat})",
                f.spread,
                f"<= {_fmt(f.target)}",
                "pass" if f.passed else "FAIL",
                f.load,
                f.command,
            ]
        )
    return _markdown_rows(rows)


def default_corpus(files: int) -> Path:
    """evals/cache/corpus-10k for the default size, corpus-100k for 100,000 files, and so on."""
    if files == corpus_gen.DEFAULT_FILES:
        return corpus_gen.DEFAULT_OUT
    name = f"corpus-{files // 1000}k" if files % 1000 == 0 else f"corpus-{files}"
    return corpus_gen.DEFAULT_OUT.with_name(name)


def build_index(
    corpus: Path, work: Path, entry: EntryPoint, pycache: Path | None, expected: int, obs: Observations
) -> tuple[Sandbox, float]:
    """One ``collection add`` (for --inprocess-only): the index the in-process figures search."""
    sandbox = Sandbox(work / "index", entry, pycache)
    sandbox.root.mkdir()
    run = run_tansaku(["collection", "add", str(corpus), "--name", COLLECTION], sandbox)
    check_run(run, "collection add", obs)
    counts = update_counts(run.stdout)
    if counts is None or counts["added"] != expected:
        obs.add(f"collection add: expected {expected} added; got {counts}")
    return sandbox, run.seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="an existing corpus folder (default: generated, see --files)",
    )
    parser.add_argument(
        "--files",
        type=int,
        default=corpus_gen.DEFAULT_FILES,
        help="files in the generated corpus (default 10000: evals/cache/corpus-10k; 100000: corpus-100k)",
    )
    parser.add_argument(
        "--inprocess-only",
        action="store_true",
        help="build the index once and measure only in-process search (for large corpora)",
    )
    parser.add_argument("--runs", type=int, default=20, help="whole-process runs per search query")
    parser.add_argument("--json", type=Path, dest="json_out", metavar="OUT", help="write the figures here")
    parser.add_argument("--cold-repeats", type=int, default=3)
    parser.add_argument("--update-repeats", type=int, default=10)
    parser.add_argument(
        "--inprocess-calls", type=int, default=300, help="calls per query pool (English, Chinese)"
    )
    parser.add_argument(
        "--group-repeats",
        type=int,
        default=10,
        help="calls per query for the long questions and the issue-9 queries",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary index and config")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="run tansaku with the environment's bytecode settings instead of a sandboxed .pyc cache",
    )
    args = parser.parse_args(argv)

    if args.corpus is None:
        corpus = default_corpus(args.files).resolve()
        stamp: dict[str, object] | None = corpus_gen.ensure_corpus(corpus, files=args.files)
    else:
        corpus = args.corpus.resolve()
        stamp = corpus_gen.read_stamp(corpus)
    if not corpus.is_dir():
        parser.error(f"no corpus folder at {corpus}")
    files, corpus_bytes = corpus_files(corpus)
    entry = find_entry_point()
    package_dir = entry_package_dir(entry)
    facts = machine_facts(entry)
    print(f"corpus: {corpus}: {len(files)} Markdown files, {corpus_bytes / 1e6:.1f} MB", file=sys.stderr)
    print(f"entry point: {entry.note}; it imports {package_dir}", file=sys.stderr)
    prime_seconds = prime_file_cache(files)

    obs = Observations()
    src_before = source_digest()
    work = Path(tempfile.mkdtemp(prefix="tansaku-bench-"))
    figures: list[Figure] = []
    no_bytecode = None
    build_seconds: float | None = None
    try:
        print(f"sandbox: {work}", file=sys.stderr)
        pycache = None if args.no_bytecode_cache else work / "pycache"
        if pycache is not None:  # compile once up front, into the sandbox, so no timed run pays for it
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(package_dir)],
                env=Sandbox(work, entry, pycache).env(),
                check=True,
            )
        if args.inprocess_only:
            print(f"  building the index (collection add, load {load_average():.2f}) ...", file=sys.stderr)
            sandbox, build_seconds = build_index(corpus, work, entry, pycache, len(files), obs)
            index_bytes = sandbox.index_bytes()
            print(f"  built in {_fmt(build_seconds)}", file=sys.stderr)
        else:
            cold, sandbox = bench_cold_update(
                corpus, work, entry, pycache, args.cold_repeats, len(files), obs
            )
            index_bytes = cold.extra["index_bytes"]
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
            figures = [cold, nochange, search_en, search_zh]
            if pycache is not None:
                print("  whole-process search without a bytecode cache (informational) ...", file=sys.stderr)
                no_bytecode = bench_search_no_bytecode(sandbox, max(1, args.runs // 4), obs)
        print(f"  in-process search (load {load_average():.2f}) ...", file=sys.stderr)
        groups, inproc_details = bench_search_inprocess(
            sandbox, package_dir, args.inprocess_calls, args.group_repeats, obs
        )
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    if source_digest() != src_before:
        obs.add("the source under src/ changed while the benchmark ran: figures may mix two versions")
    by_name = {g.name: g for g in groups}
    # The 20 ms in-process targets are for the 10,000-file corpus; other sizes use the group table.
    if not args.inprocess_only and len(files) == corpus_gen.DEFAULT_FILES:
        figures += [
            legacy_inprocess_figure(by_name["en"], "en"),
            legacy_inprocess_figure(by_name["zh"], "zh"),
        ]
    bytecode = (
        "the environment's bytecode settings"
        if pycache is None
        else "a bytecode cache in the sandbox (PYTHONPYCACHEPREFIX), as an installed tansaku has"
    )
    lines = [
        "",
        f"tansaku foundation benchmark, {facts['date_utc']}"
        + (" (--inprocess-only)" if args.inprocess_only else ""),
        f"git {facts['git_commit']}; {facts['tansaku']}; Python {facts['python']}; "
        f"SQLite {facts['sqlite']}; nproc {facts['nproc']}; {facts['cpu']}; {facts['memory']} RAM",
        f"corpus: {corpus} ({len(files)} files, {corpus_bytes / 1e6:.1f} MB"
        + (
            f", {stamp.get('chinese_files')} with Chinese text, seed {stamp.get('seed')}, "
            f"sha256 {str(stamp.get('sha256'))[:12]}"
            if stamp
            else ""
        )
        + ")",
        f"entry point: {entry.note}; it imports tansaku from {package_dir}",
        "commands run from the repo root with TANSAKU_CONFIG_DIR=<tmp>/config "
        "TANSAKU_INDEX_PATH=<tmp>/index.sqlite; times are wall clock from spawn to exit",
        f"tansaku ran with {bytecode}",
    ]
    if figures:
        lines += ["", *table(figures)]
    lines += [
        "",
        "in-process search by query group: Tansaku().search(q, limit=5), round robin; targets from issue 9",
        "",
        *group_table(groups),
        "",
    ]
    if build_seconds is not None:
        lines.append(f"index built once with collection add in {_fmt(build_seconds)} (informational)")
    lines += [
        f"index size after add: {index_bytes / 1e6:.1f} MB; reading the corpus once "
        f"(file cache primed): {_fmt(prime_seconds)}",
        f"in-process: import {_fmt(inproc_details['import_seconds'])}, first English call "
        f"{_fmt(inproc_details['first_call_seconds']['en'])}, first Chinese call "
        f"{_fmt(inproc_details['first_call_seconds']['zh'])} (loads the segmenter)",
        *group_details(groups, inproc_details["issue_query_word_documents"]),
    ]
    if not args.inprocess_only:
        lines.append(
            "per-query whole-process medians: "
            + ", ".join(
                f"{q} {_fmt(s)}"
                for f in figures
                if f.key.startswith("search_process_")
                for q, s in f.extra["per_query_median"].items()
            )
        )
    if no_bytecode is not None:
        lines.append(
            "whole-process English search with PYTHONDONTWRITEBYTECODE=1 and no sandbox cache (an "
            "editable install then compiles tansaku on every run; a regular one still has pip's .pyc): "
            f"median {_fmt(no_bytecode['median'])}, p90 {_fmt(no_bytecode['p90'])} (n={no_bytecode['n']})"
        )
    failed = [f.label for f in figures if not f.passed]
    failed += [g.label for g in [*groups, all_groups(groups)] if not g.passed]
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
            "entry_point": {"path": str(entry.path), "note": entry.note, "imports": str(package_dir)},
            "inprocess_only": args.inprocess_only,
            "index_build_seconds": build_seconds,
            "index_bytes": index_bytes,
            "figures": {f.key: asdict(f) | {"target": f.target, "passed": f.passed} for f in figures},
            "in_process": inproc_details,
            "in_process_groups": {g.name: g.to_json() for g in groups},
            "in_process_all_groups": {
                k: v for k, v in all_groups(groups).to_json().items() if k not in ("samples", "outcome")
            },
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
