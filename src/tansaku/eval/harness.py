"""Run a judged query set against an index and measure ranking quality and latency per mode.

Before measuring, the harness looks at the index (status): a stale or empty collection, or a mode
whose model is missing, is reported as such in the warnings and the record, never as a ranking
regression.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import PathNotFound, TansakuError, UsageError
from ..search.copies import hit_paths
from ..types import BenchReport, MetricSummary, Notice, QueryOutcome
from . import metrics

K = 10
# "query-fused" is `query --no-expand --no-rerank`: fusion alone, without the generate and rerank
# models; "query-expanded" is `query --expand --no-rerank`; "query" is `query --expand`. So the
# worth of expansion is the difference between the first two, and the worth of reranking the
# difference between "query-expanded" and "query".
MODES = ("search", "vsearch", "query-fused", "query-expanded", "query")
KINDS = ("known-item", "identifier", "flag", "paraphrase", "howto", "hard", "error", "cjk")


@dataclass(frozen=True)
class JudgedQuery:
    id: str
    query: str
    relevant: tuple[str, ...]
    kind: str
    notes: str = ""


def load_set(path: Path) -> list[JudgedQuery]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PathNotFound(f"no query set at {path}", path=str(path)) from exc  # not found: exit 1
    except OSError as exc:
        raise UsageError(f"cannot read query set {path}: {exc.strerror or exc}") from exc
    queries: list[JudgedQuery] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            data = json.loads(line)
            query = JudgedQuery(
                id=str(data["id"]),
                query=str(data["query"]),
                relevant=tuple(str(p) for p in data["relevant"]),
                kind=str(data.get("kind", "known-item")),
                notes=str(data.get("notes", "")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}:{number}: not a judged query ({exc})") from exc
        if not query.relevant:
            raise UsageError(f"{path}:{number}: query {query.id} lists no relevant document")
        if query.id in seen:
            raise UsageError(f"{path}:{number}: duplicate query id {query.id}")
        seen.add(query.id)
        queries.append(query)
    if not queries:
        raise UsageError(f"query set {path} has no queries")
    return queries


# A mode runner returns the ranked paths (relative to the collection root; COLLECTION/PATH when
# several collections are searched) and warning codes.
# Each hit as its paths: the one shown first, then its copies and translations (a collapsed hit
# stands for them all, so it counts as relevant when any of them is judged so).
ModeRunner = Callable[[str, str, int], tuple[list[tuple[str, ...]], list[str]]]
# Modes that take --level (transcript collections: search and vsearch aggregate to the level).
LEVEL_MODES = ("search", "vsearch")


def mode_runners(api: Any, level: str | None = None) -> dict[str, ModeRunner | None]:
    """The modes this build can run; None marks a mode that is not available yet.

    ``collection`` may name several collections, comma-separated. ``level`` (turn, run, session,
    project) is passed to search and vsearch, which apply it to transcript collections: a hit is
    then ranked by its session file, so a relevant session counts wherever one of its turns hits."""

    def names(collection: str) -> list[str]:
        return collection.split(",")

    def ranked(result: Any, collection: str) -> tuple[list[tuple[str, ...]], list[str]]:
        several = "," in collection
        return [tuple(f"{c}/{p}" if several else p for c, p in hit_paths(hit)) for hit in result.hits], [
            w.code for w in result.warnings
        ]

    def keyword(query: str, collection: str, k: int) -> tuple[list[tuple[str, ...]], list[str]]:
        if level is None:
            return ranked(api.search(query, collections=names(collection), limit=k), collection)
        return ranked(
            api.search_levels(query, collections=names(collection), level=level, limit=k), collection
        )

    def vector(query: str, collection: str, k: int) -> tuple[list[tuple[str, ...]], list[str]]:
        # min_score 0: rank metrics judge the order; the default floor would hide low hits.
        if level is None:
            result = api.vsearch(query, collections=names(collection), limit=k, min_score=0.0)
        else:
            result = api.vsearch_levels(
                query, collections=names(collection), level=level, limit=k, min_score=0.0
            )
        return ranked(result, collection)

    # "query-expanded" and "query" measure the expansion step (and "query" the reranking), so
    # they ask for them: by default `query` does neither on a CPU (hybrid/model_defaults.py).
    def hybrid(query: str, collection: str, k: int) -> tuple[list[tuple[str, ...]], list[str]]:
        result = api.query(query, collections=names(collection), limit=k, expand=True, rerank=True)
        return ranked(result, collection)

    def fused(query: str, collection: str, k: int) -> tuple[list[tuple[str, ...]], list[str]]:
        result = api.query(query, collections=names(collection), limit=k, expand=False, rerank=False)
        return ranked(result, collection)

    def expanded(query: str, collection: str, k: int) -> tuple[list[tuple[str, ...]], list[str]]:
        result = api.query(query, collections=names(collection), limit=k, expand=True, rerank=False)
        return ranked(result, collection)

    return {
        "search": keyword,
        "vsearch": vector,
        "query-fused": fused,
        "query-expanded": expanded,
        "query": hybrid,
    }


def run_bench(
    api: Any,
    set_path: Path,
    collection: str,
    modes: Sequence[str],
    k: int = K,
    level: str | None = None,
) -> BenchReport:
    """``collection``: one name, or several comma-separated (the judged paths are then written
    COLLECTION/PATH). ``level``: see :func:`mode_runners`."""
    queries = load_set(set_path)
    runners = mode_runners(api, level)
    warnings: list[Notice] = []
    status = api.status()
    names = collection.split(",")
    for name in names:
        warnings.extend(_index_warnings(status, name))
    known_paths = {
        entry.virtual_path.split("/", 3)[-1] if len(names) == 1 else entry.virtual_path.split("/", 2)[-1]
        for name in names
        for entry in api.ls(name)
    }
    missing = sorted({p for q in queries for p in q.relevant} - known_paths)
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        warnings.append(
            Notice(
                "RELEVANT_NOT_INDEXED",
                f"{len(missing)} judged documents are not in collection {collection}: {shown}",
            )
        )
    if level is not None and set(modes) - set(LEVEL_MODES):
        skipped = ", ".join(m for m in modes if m not in LEVEL_MODES)
        warnings.append(
            Notice("LEVEL_IGNORED", f"--level {level} applies to search and vsearch only, not {skipped}")
        )
    ran: list[str] = []
    outcomes: list[QueryOutcome] = []
    for mode in modes:
        runner = runners.get(mode)
        if runner is None:
            warnings.append(Notice("MODE_UNAVAILABLE", f"mode {mode} is not available in this build yet"))
            continue
        # Warm-up, one query per kind: one-time costs (a model or a segmenter loading for the
        # first query) are start-up costs, measured by the benchmarks, not per-query latency.
        try:
            for first in {q.kind: q for q in reversed(queries)}.values():
                runner(first.query, collection, k)
        except TansakuError as exc:  # no model, no vectors: say so, do not score it as zero
            warnings.append(
                Notice("MODE_UNAVAILABLE", f"mode {mode}: {exc.message} ({exc.hint or exc.code})")
            )
            continue
        ran.append(mode)
        outcomes.extend(_run_mode(runner, mode, queries, collection, k))
    return BenchReport(
        query_set=str(set_path),
        collection=collection,
        modes=tuple(ran),
        summaries=tuple(summarize(outcomes)),
        queries=tuple(outcomes),
        warnings=tuple(warnings),
        record=reproducibility_record(api, set_path, collection, modes, k, status, level),
    )


def _run_mode(
    runner: ModeRunner, mode: str, queries: Sequence[JudgedQuery], collection: str, k: int
) -> list[QueryOutcome]:
    outcomes = []
    for q in queries:
        started = time.perf_counter()
        hits, codes = runner(q.query, collection, k)
        ranked = [next((p for p in paths if p in q.relevant), paths[0]) for paths in hits]
        latency = (time.perf_counter() - started) * 1000
        outcomes.append(
            QueryOutcome(
                id=q.id,
                query=q.query,
                kind=q.kind,
                mode=mode,
                relevant=q.relevant,
                ranked=tuple(ranked[:k]),
                first_relevant_rank=metrics.first_relevant_rank(ranked, q.relevant, k),
                reciprocal_rank=metrics.reciprocal_rank(ranked, q.relevant, k),
                ndcg=metrics.ndcg_at(ranked, q.relevant, k),
                latency_ms=latency,
                warnings=tuple(codes),
            )
        )
    return outcomes


def summarize(outcomes: Sequence[QueryOutcome]) -> list[MetricSummary]:
    groups: dict[tuple[str, str], list[QueryOutcome]] = {}
    for o in outcomes:
        groups.setdefault((o.mode, "all"), []).append(o)
        groups.setdefault((o.mode, o.kind), []).append(o)
    summaries = []
    for (mode, kind), group in groups.items():

        def hit(k: int, group: list[QueryOutcome] = group) -> float:
            return metrics.mean(
                [
                    1.0 if o.first_relevant_rank is not None and o.first_relevant_rank <= k else 0.0
                    for o in group
                ]
            )

        latencies = [o.latency_ms for o in group]
        summaries.append(
            MetricSummary(
                mode=mode,
                kind=kind,
                queries=len(group),
                hit_at_1=hit(1),
                hit_at_3=hit(3),
                hit_at_5=hit(5),
                hit_at_10=hit(10),
                mrr_at_10=metrics.mean([o.reciprocal_rank for o in group]),
                ndcg_at_10=metrics.mean([o.ndcg for o in group]),
                latency_p50_ms=metrics.percentile(latencies, 50),
                latency_p95_ms=metrics.percentile(latencies, 95),
            )
        )
    order = {kind: i for i, kind in enumerate(("all", *KINDS))}
    summaries.sort(
        key=lambda s: (MODES.index(s.mode) if s.mode in MODES else 99, order.get(s.kind, 99), s.kind)
    )
    return summaries


def _index_warnings(status: Any, collection: str) -> list[Notice]:
    notices = [Notice(w.code, w.message) for w in status.warnings]
    info = next((c for c in status.collections if c.collection.name == collection), None)
    if info is not None and info.documents == 0:
        notices.append(Notice("INDEX_EMPTY", f"collection {collection} has no indexed documents"))
    for line in status.pending:
        if line.startswith(f"{collection}:"):
            notices.append(Notice("INDEX_STALE", f"the index is not up to date: {line}"))
    return notices


def reproducibility_record(
    api: Any,
    set_path: Path,
    collection: str,
    modes: Sequence[str],
    k: int,
    status: Any,
    level: str | None = None,
) -> dict[str, object]:
    from ..chunking import CHUNKER_VERSION
    from ..render.jsonfmt import to_data
    from ..store.migrations import SCHEMA_VERSION

    first = collection.split(",")[0]
    info = next((c for c in status.collections if c.collection.name == first), None)
    root = Path(info.collection.path) if info else None
    flags: dict[str, object] = {"collection": collection, "modes": list(modes), "k": k}
    if level is not None:
        flags["level"] = level
    return {
        "tansaku_version": __version__,
        "git": _git_state(),
        "schema_version": SCHEMA_VERSION,
        "chunker_version": CHUNKER_VERSION,  # keyword search ranks documents; vsearch ranks chunks
        "models": _models_record(api, modes),
        "flags": flags,
        "corpus": _corpus_record(root, info),
        "query_set": {
            "path": str(set_path),
            "sha256": hashlib.sha256(set_path.read_bytes()).hexdigest(),
        },
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "python": platform.python_version(),
            "sqlite": _sqlite_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "status": to_data(status),
    }


# The model roles each measured mode loads (keyword search loads none).
_MODE_ROLES = {
    "vsearch": ("embed",),
    "query-fused": ("embed",),
    "query-expanded": ("embed", "generate"),
    "query": ("embed", "generate", "rerank"),
}


def _models_record(api: Any, modes: Sequence[str]) -> dict[str, object]:
    """The model files the measured modes use, by role, with their hashes; a role whose model is
    not on this machine is recorded as absent (that mode then ran without it and said so)."""
    from ..models.gguf import file_sha256
    from ..models.registry import resolve

    roles = [
        role for role in ("embed", "generate", "rerank") if any(role in _MODE_ROLES.get(m, ()) for m in modes)
    ]
    record: dict[str, object] = {}
    for role in roles:
        ref = resolve(role, api.config_path)
        if not ref.present:
            record[role] = {"reference": ref.reference, "present": False}
            continue
        if ref.endpoint is not None:
            # A served model has no file to hash: its name at its server is all that is known.
            record[role] = {"reference": ref.reference, "endpoint": ref.endpoint.base_url}
            continue
        record[role] = {
            "reference": ref.reference,
            "path": str(ref.local_path),
            "sha256": file_sha256(str(ref.local_path)),
        }
    return record


def _corpus_record(root: Path | None, info: Any) -> dict[str, object]:
    record: dict[str, object] = {"documents": info.documents if info else 0}
    if root is not None:
        record["path"] = str(root)
        stamp = root / ".corpus.json"
        if stamp.is_file():
            try:
                record["stamp"] = json.loads(stamp.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                record["stamp"] = "unreadable"
    return record


def _git_state() -> dict[str, object] | None:
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(dirty)}


def _sqlite_version() -> str:
    import sqlean

    return str(sqlean.sqlite_version)


def default_collection(set_path: Path) -> str:
    """The collection named by the set's ``corpus`` field (every query must agree)."""
    corpora = {q.get("corpus") for q in _raw_lines(set_path)}
    corpora.discard(None)
    if len(corpora) == 1:
        return str(corpora.pop())
    raise UsageError(
        f"say which collection to search with -c: the set {set_path} names "
        + (f"several corpora ({', '.join(sorted(map(str, corpora)))})" if corpora else "no corpus")
    )


def _raw_lines(set_path: Path) -> list[dict[str, Any]]:
    try:
        lines = set_path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise PathNotFound(f"no query set at {set_path}", path=str(set_path)) from exc
    except OSError as exc:
        raise UsageError(f"cannot read query set {set_path}: {exc.strerror or exc}") from exc
    rows = []
    for line in lines:
        if line.strip() and not line.lstrip().startswith("//"):
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # load_set reports the bad line with its number
    return rows
