"""What makes `embed` fast or slow with one model: llama.cpp settings measured one at a time.

    .venv/bin/python evals/bench_embed_factors.py --corpus DIR --mask '**/*.rst.txt' \\
        --model /work/models/embeddinggemma-300m-q8_0.gguf --chunks 24 \\
        [--config NAME:key=value,key=value ...] [--json OUT]

Not a test. The corpus is added to a temporary index (``collection add``, the user's config and
index untouched); the first ``--chunks`` pending chunks are then embedded by each configuration
in a fresh process (so that its peak RSS is its own), through tansaku's own ``LlamaEmbedder`` and
``index.embed`` helpers: the same windows, titles and prompts as ``tansaku embed``. Keys:

- ``n_ctx``: llama.cpp's context, and so the window (``n_batch`` and ``n_ubatch`` follow it
  unless given); chunks longer than the window are split as ``embed`` splits them;
- ``n_batch``, ``n_ubatch``, ``flash_attn`` (0/1): passed to ``llama_cpp.Llama``;
- ``threads``: a fixed count (default: automatic, as ``embed``);
- ``pack`` (0/1): several windows per llama.cpp batch (``LlamaEmbedder.embed(pack=True)``);
- ``lib``: a folder of llama.cpp libraries to load instead of the installed ones
  (``LLAMA_CPP_LIB_PATH``: the same llama.cpp source built with other CPU flags).

Per configuration: tokens embedded (with each window's special tokens), wall seconds, CPU
seconds, tokens/s and chunks/s of wall time, tokens per CPU second (what a shared machine's load
disturbs least), peak RSS, and the load average around the run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EVALS = Path(__file__).resolve().parent
REPO = EVALS.parent
SRC = REPO / "src"
COLLECTION = "factors"
INTS = {"n_ctx", "n_batch", "n_ubatch", "threads"}
FLAGS = {"flash_attn", "pack"}


def parse_config(text: str) -> tuple[str, dict[str, str]]:
    name, _, body = text.partition(":")
    options = dict(item.split("=", 1) for item in body.split(",") if item)
    unknown = set(options) - INTS - FLAGS - {"lib"}
    if unknown:
        raise SystemExit(f"unknown keys in {text!r}: {', '.join(sorted(unknown))}")
    return name, options


def child(model: str, chunks: int, options: dict[str, str]) -> dict[str, Any]:
    """One configuration, in this (fresh) process; the sandbox is in the environment."""
    sys.path.insert(0, str(SRC))
    import tansaku.models.llama as llama

    overrides: dict[str, Any] = {}
    for key in ("n_ctx", "n_batch", "n_ubatch"):
        if key in options:
            overrides[key] = int(options[key])
    if "n_ctx" in overrides:
        overrides.setdefault("n_batch", overrides["n_ctx"])
        overrides.setdefault("n_ubatch", overrides["n_ctx"])
        llama.MAX_WINDOW = overrides["n_ctx"]
    if "flash_attn" in options:
        overrides["flash_attn"] = options["flash_attn"] == "1"
    original = llama.open_llama

    def open_with_overrides(llama_cpp: Any, path: str, **kwargs: Any) -> Any:
        kwargs.update(overrides)
        return original(llama_cpp, path, **kwargs)

    llama.open_llama = open_with_overrides
    threads = int(options["threads"]) if "threads" in options else None
    started = time.perf_counter()
    embedder = llama.LlamaEmbedder(model, n_threads=threads)
    load_seconds = time.perf_counter() - started
    texts, chunk_count = _texts(embedder, chunks)
    tokens = sum(len(embedder._encode(i, text)) for i, text in enumerate(texts))
    load_before = os.getloadavg()[0]
    cpu = time.process_time()
    started = time.perf_counter()
    for start in range(0, len(texts), 32):  # index.embed.BATCH_CHUNKS-sized calls
        embedder.embed(texts[start : start + 32], pack=options.get("pack") == "1")
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu
    return {
        "windows": len(texts),
        "chunks": chunk_count,
        "tokens": tokens,
        "window_tokens": embedder.window_tokens,
        "threads_last": embedder.threads,
        "load_seconds": round(load_seconds, 2),
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "tokens_per_second": round(tokens / seconds, 1),
        "chunks_per_second": round(chunk_count / seconds, 3),
        "tokens_per_cpu_second": round(tokens / cpu_seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "loadavg": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def _texts(embedder: Any, chunks: int) -> tuple[list[str], int]:
    """The rendered windows of the first ``chunks`` pending chunks, as `embed` would make them
    with this embedder's window."""
    from tansaku.api import Tansaku
    from tansaku.index import embed as embed_mod
    from tansaku.index.chunks import params_for
    from tansaku.models.embedding import prompt_format
    from tansaku.store import db
    from tansaku.store import documents as store
    from tansaku.store import vectors as vec

    api = Tansaku()
    collection = api.config().collections[COLLECTION]
    prompt = prompt_format(Path(embedder.path), api.config_path)
    conn = db.open_read(api.index_path)
    try:
        vec.load_extension(conn)
        identity = embed_mod.model_identity(conn, embedder.path, prompt)
        params = params_for(collection).fingerprint()
        pending = vec.pending_chunks(conn, identity.fingerprint, COLLECTION, params)[:chunks]
        docs = store.documents_in(conn, COLLECTION)
        paths = {doc.hash: path for path, doc in docs.items()}
        titles = {doc.hash: doc.title for doc in docs.values()}
        units = embed_mod._units(conn, pending, params, prompt, embedder, titles, paths)
    finally:
        conn.close()
    return [u.text for u in units], len(pending)


def sandbox_env(root: Path, model: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        TANSAKU_CONFIG_DIR=str(root / "config"),
        TANSAKU_INDEX_PATH=str(root / "index.sqlite"),
        TANSAKU_MODEL_DIR=str(root / "models"),
        TANSAKU_EMBED_MODEL=model,
        PYTHONPATH=str(SRC),
    )
    env.pop("TANSAKU_EMBED_WINDOW", None)
    return env


def main(argv: list[str] | None = None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--mask", default="**/*.md")
    parser.add_argument("--model", required=True)
    parser.add_argument("--chunks", type=int, default=24, help="pending chunks embedded per configuration")
    parser.add_argument("--config", action="append", default=[], help="NAME:key=value,... (repeatable)")
    parser.add_argument("--json", type=Path, dest="json_out")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.model, args.chunks, json.loads(args.child))))
        return 0
    configs = [parse_config(text) for text in args.config] or [("default", {})]
    rows = []
    with tempfile.TemporaryDirectory(prefix="tansaku-factors-") as tmp:
        env = sandbox_env(Path(tmp), args.model)
        added = subprocess.run(
            [sys.executable, "-m", "tansaku", "collection", "add", str(args.corpus), "--name", COLLECTION,
             "--mask", args.mask],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if added.returncode != 0:
            raise SystemExit(f"collection add failed: {added.stderr}")
        for name, options in configs:
            run_env = dict(env)
            if "lib" in options:
                run_env["LLAMA_CPP_LIB_PATH"] = options["lib"]
            command = [sys.executable, __file__, "--corpus", str(args.corpus), "--model", args.model,
                       "--chunks", str(args.chunks), "--child", json.dumps(options)]  # fmt: skip
            done = subprocess.run(command, env=run_env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"{name}: failed: {done.stderr.strip()[-500:]}", file=sys.stderr)
                continue
            row = {"config": name, "options": options, **json.loads(done.stdout.strip().splitlines()[-1])}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    header = "| config | windows | tokens | wall s | CPU s | tokens/s | chunks/s | tokens/CPU-s"
    print(header + " | peak RSS MB | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(
            f"| {r['config']} | {r['windows']} | {r['tokens']} | {r['seconds']} | {r['cpu_seconds']} |"
            f" {r['tokens_per_second']} | {r['chunks_per_second']} | {r['tokens_per_cpu_second']} |"
            f" {r['peak_rss_mb']} | {r['loadavg'][0]}-{r['loadavg'][1]} |"
        )
    if args.json_out:
        payload = {"model": args.model, "corpus": str(args.corpus), "chunks": args.chunks, "rows": rows}
        args.json_out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
