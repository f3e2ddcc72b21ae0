"""Endpoint benchmark: `embed` through an OpenAI-compatible server on loopback beside the
in-process model, so the cost of the HTTP path is known.

    .venv/bin/python evals/bench_remote.py [--files 60] [--rounds 3] [--threads 2] [--json OUT]

Not a test (CI does not run it). The model is the MiniLM GGUF the tests convert
(``test/models_fixture.py: minilm_gguf()``); the server is llama-cpp-python's own
(``python -m llama_cpp.server``, started by ``test/openai_server.py: llama_server`` on a free
loopback port, ``--threads`` threads). The corpus is the first ``--files`` files of
``corpus_gen.py``'s synthetic corpus, generated into a temporary folder, and everything runs
against a temporary ``TANSAKU_CONFIG_DIR`` and ``TANSAKU_INDEX_PATH``: the user's config, index and
models are never touched.

Two indexes of the same corpus, one per path; each round runs ``bin/tansaku embed -f --json`` (a
real subprocess: every vector computed again) on each, in alternating order so that drift in a
shared machine's load hits both alike, with ``TANSAKU_THREADS`` set to the server's thread count.
Reported per path: the median of the report's chunks/s and vectors/s and the wall time; for the
endpoint, what the run sent (requests, texts, bytes, tokens as the server counted them).
Windows differ between the paths: the endpoint's are cut by an estimate of tokens (no tokenizer
over HTTP) and come out shorter, so it embeds more vectors for the same chunks; chunks/s is the
comparable figure.
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
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EVALS = REPO / "evals"
sys.path.insert(0, str(EVALS))
sys.path.insert(0, str(REPO))

import corpus_gen  # noqa: E402


def _run(args: Sequence[str], env: dict[str, str]) -> tuple[dict, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [str(REPO / "bin" / "tansaku"), *args], env=env, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"tansaku {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return (json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}), elapsed


def main(argv: Sequence[str] | None = None) -> int:
    from test.models_fixture import minilm_gguf
    from test.openai_server import llama_server

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    model = minilm_gguf()
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as tmp:
        root = Path(tmp)
        corpus = root / "corpus"
        corpus_gen.ensure_corpus(corpus, files=args.files, quiet=True)
        base_env = {
            **os.environ,
            "TANSAKU_CONFIG_DIR": str(root / "config"),
            # `--index NAME` keeps its file in the cache folder, whatever TANSAKU_INDEX_PATH says.
            "XDG_CACHE_HOME": str(root / "cache"),
            "TANSAKU_MODEL_DIR": str(root / "models"),
            "TANSAKU_THREADS": str(args.threads),
            "TANSAKU_PROGRESS_INTERVAL": "3600",
            "TANSAKU_PYTHON": sys.executable,
        }
        settings = {"embedding": True, "n_ctx": 512, "n_batch": 512, "n_ubatch": 512,
                    "n_threads": args.threads, "n_threads_batch": args.threads}  # fmt: skip
        with llama_server(model, "minilm", root / "server.log", **settings) as base:
            paths = {"in-process": str(model), "endpoint": f"{base}#minilm"}
            envs = {}
            for name, reference in paths.items():
                envs[name] = {**base_env, "TANSAKU_EMBED_MODEL": reference}
                _run(["--index", name, "collection", "add", str(corpus), "--name", "corpus"], envs[name])
            runs: dict[str, list[dict]] = {name: [] for name in paths}
            for round_number in range(args.rounds):
                order = list(paths) if round_number % 2 == 0 else list(reversed(paths))
                for name in order:
                    report, wall = _run(["--index", name, "embed", "-f", "--json"], envs[name])
                    runs[name].append({"wall_s": wall, **report})
                    print(f"round {round_number + 1} {name}: {report['chunks_per_second']:.1f} chunks/s,"
                          f" {wall:.1f} s", file=sys.stderr)  # fmt: skip
    summary = {}
    for name, reports in runs.items():
        chunks = sum(c["pending"] for c in reports[0]["collections"])
        summary[name] = {
            "chunks_per_second": statistics.median(r["chunks_per_second"] for r in reports),
            "vectors_per_second": statistics.median(r["vectors_per_second"] for r in reports),
            "wall_s": statistics.median(r["wall_s"] for r in reports),
            "chunks": chunks,
            "vectors": sum(c["embedded"] for c in reports[0]["collections"]),
            "remote": reports[-1].get("remote"),
        }
    ratio = summary["endpoint"]["chunks_per_second"] / summary["in-process"]["chunks_per_second"]
    print(json.dumps({"files": args.files, "rounds": args.rounds, "threads": args.threads,
                      "load": os.getloadavg(), "paths": summary, "endpoint_over_in_process": ratio},
                     indent=2))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
