"""Time to useful vectors, per embedding model and window policy (``bench_embed.py --models``).

For each model file and each window size: a fresh temporary index, ``collection add`` of the same
files, then ``bin/tansaku embed --json`` as a real subprocess under ``/usr/bin/time -v``. Reported:
tokens embedded (each window's text with its special tokens, counted by the model's own
tokenizer from the exact texts ``embed`` renders), tokens/s and chunks/s of the whole process
(model load included) and of the embedding alone (EmbedReport), peak RSS, and the minutes 10,000
chunks would take at the whole process's rate. Optionally qmd's ``embed`` on the same files with
the same GGUF file (``--qmd``), one run beside each of tansaku's, on its own temporary home.

A window size is ``TANSAKU_EMBED_WINDOW`` (tokens per embedded window; ``model`` = the model's
own: its trained window, else its whole context). A chunk longer than the window is embedded as
several windows, each starting with the document's title and headings. The policy ``quick`` is
``embed --quick-only``: one vector per chunk of its first ``QUICK_TOKENS`` tokens (prompt, title
and headings included), the pass that makes vectors useful before the full ones exist.
``budget:N`` is the full pass with ``TANSAKU_EMBED_BUDGET=N``: each chunk's first N tokens, in
windows of the model's size.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

EVALS = Path(__file__).resolve().parent
REPO = EVALS.parent
TANSAKU = REPO / "bin" / "tansaku"
TIME_BIN = Path("/usr/bin/time")
COLLECTION = "set"
PROJECTED_CHUNKS = 10_000
_MAX_RSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")


@dataclass
class ModelRun:
    tool: str  # tansaku | qmd
    model: str
    window: str  # tokens per window, or "model"
    chunks: int
    windows: int
    tokens: int | None
    seconds: float  # whole process
    embed_seconds: float | None  # EmbedReport.took_ms: the embed call in the process (model load included)
    peak_rss_mb: float | None
    loadavg: tuple[float, float]
    cpu_seconds: float

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds

    @property
    def tokens_per_second(self) -> float | None:
        return self.tokens / self.seconds if self.tokens else None

    @property
    def projected_minutes(self) -> float:
        return PROJECTED_CHUNKS / self.chunks_per_second / 60


def _timed(
    command: list[str], env: dict[str, str], cwd: Path
) -> tuple[float, int, str, str, float | None, float]:
    """(seconds, exit code, stdout, stderr, peak RSS MiB, CPU seconds) of one process tree."""
    full = [str(TIME_BIN), "-v", *command] if TIME_BIN.exists() else command
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(full, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    found = _MAX_RSS.search(stderr)
    rss = int(found.group(1)) / 1024 if found else usage.ru_maxrss / 1024
    return seconds, os.waitstatus_to_exitcode(status), stdout, stderr, rss, usage.ru_utime + usage.ru_stime


def _sandbox_env(root: Path, model: str, window: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        TANSAKU_CONFIG_DIR=str(root / "config"),
        TANSAKU_INDEX_PATH=str(root / "index.sqlite"),
        TANSAKU_MODEL_DIR=str(root / "models"),
        TANSAKU_EMBED_MODEL=model,
    )
    env.setdefault("TANSAKU_PYTHON", sys.executable)  # bin/tansaku: this interpreter, not a bare python3
    env.pop("TANSAKU_EMBED_WINDOW", None)
    env.pop("TANSAKU_EMBED_BUDGET", None)
    if window.startswith("budget:"):
        env["TANSAKU_EMBED_BUDGET"] = window.removeprefix("budget:")
    elif window not in ("model", "quick"):
        env["TANSAKU_EMBED_WINDOW"] = window
    return env


def _rendered_tokens(env: dict[str, str], quick: bool = False) -> tuple[int, int, int]:
    """(chunks, windows, tokens) of what `embed` will compute, rebuilt with tansaku's own helpers
    in a child process (so this process loads no model)."""
    script = (
        f"QUICK = {quick}\n"
        "import json\n"
        "from tansaku.api import Tansaku\n"
        "from tansaku.index import embed as E\n"
        "from tansaku.index.chunks import params_for\n"
        "from tansaku.models.embedding import embed_model, load_embedder, prompt_format\n"
        "from tansaku.store import db, documents as store, vectors as vec\n"
        "api = Tansaku(); c = api.config().collections['set']\n"
        "ref = embed_model(api.config_path); prompt = prompt_format(ref.local_path, api.config_path)\n"
        "e = load_embedder(ref.local_path)\n"
        "conn = db.open_read(api.index_path); vec.load_extension(conn)\n"
        "ident = E.model_identity(conn, str(ref.local_path), prompt); params = params_for(c).fingerprint()\n"
        "pending = vec.pending_chunks(conn, ident.fingerprint, 'set', params)\n"
        "docs = store.documents_in(conn, 'set')\n"
        "quick = QUICK and min(E.QUICK_TOKENS, E.window_tokens(e)) or None\n"
        "units = E._units(conn, pending, params, prompt, e, {d.hash: d.title for d in docs.values()},"
        " {d.hash: p for p, d in docs.items()}, quick_limit=quick,"
        " budget=None if quick else E.embed_budget(E.window_tokens(e)))\n"
        "texts = list({u.text_sha: u.text for u in units}.values())\n"
        "tokens = sum(len(e._encode(i, t)) for i, t in enumerate(texts))\n"
        "print(json.dumps([len(pending), len(texts), tokens]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env | {"PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        check=True,
    )
    chunks, windows, tokens = json.loads(done.stdout.strip().splitlines()[-1])
    return chunks, windows, tokens


def tansaku_run(files: Path, mask: str, model: str, window: str, work: Path) -> ModelRun:
    root = work / f"tansaku-{Path(model).stem}-{window.replace(':', '-')}"
    root.mkdir(parents=True)
    env = _sandbox_env(root, model, window)
    subprocess.run(
        [str(TANSAKU), "collection", "add", str(files), "--name", COLLECTION, "--mask", mask],
        env=env,
        capture_output=True,
        check=True,
    )
    quick = window == "quick"
    chunks, windows, tokens = _rendered_tokens(env, quick)
    load = os.getloadavg()[0]
    command = [str(TANSAKU), "embed", "--json", *(["--quick-only"] if quick else ["--no-quick"])]
    seconds, code, stdout, stderr, rss, cpu = _timed(command, env, REPO)
    if code != 0:
        raise RuntimeError(f"tansaku embed failed ({code}): {stderr[-400:]}")
    report = json.loads(stdout)
    embedded = sum(c["quick" if quick else "embedded"] for c in report["collections"])
    if embedded != windows:
        print(f"note: {windows} windows expected, {embedded} embedded", file=sys.stderr)
    took = report["took_ms"] / 1000
    return ModelRun(
        "tansaku", model, window, chunks, windows, tokens, seconds, took, rss, (load, os.getloadavg()[0]), cpu
    )


def qmd_run(qmd: Path, node_bin: Path | None, files: Path, mask: str, model: str, work: Path) -> ModelRun:
    """qmd's `embed` with the same GGUF file: a collection of the same files in a private home,
    ``models: embed:`` set to the file in its index.yml (its first run writes the default model's
    hub address there, which wins over QMD_EMBED_MODEL). Never its query, vsearch or expansion."""
    root = work / f"qmd-{Path(model).stem}"
    home = root / "home"
    home.mkdir(parents=True)
    env = dict(os.environ)
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"))
    env["QMD_EMBED_MODEL"] = model
    env["NODE_LLAMA_CPP_SKIP_DOWNLOAD"] = "true"
    if node_bin is not None:
        env["PATH"] = f"{node_bin}:{env['PATH']}"
    add = subprocess.run(
        [str(qmd), "collection", "add", str(files), "--name", COLLECTION, "--mask", mask],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if add.returncode != 0:
        raise RuntimeError(f"qmd collection add failed: {add.stderr[-400:]}")
    for config in home.rglob("index.yml"):
        text = config.read_text(encoding="utf-8")
        text = re.sub(r"(?m)^(\s*embed:\s*).*$", lambda m: m.group(1) + model, text)
        if "embed:" not in text:
            text += f"\nmodels:\n  embed: {model}\n"
        config.write_text(text, encoding="utf-8")
    load = os.getloadavg()[0]
    seconds, code, stdout, stderr, rss, cpu = _timed([str(qmd), "embed"], env, root)
    if code != 0:
        raise RuntimeError(f"qmd embed failed ({code}): {stderr[-400:]} {stdout[-400:]}")
    found = re.search(r"(\d+) chunks", stdout + stderr)
    chunks = int(found.group(1)) if found else 0
    (root / "qmd-embed.log").write_text(stdout + "\n---\n" + stderr, encoding="utf-8")
    return ModelRun(
        "qmd", model, "qmd", chunks, chunks, None, seconds, None, rss, (load, os.getloadavg()[0]), cpu
    )


def run(
    files: Path, mask: str, models: list[str], windows: list[str], qmd: Path | None, node_bin: Path | None
) -> list[ModelRun]:
    runs: list[ModelRun] = []
    work = Path(tempfile.mkdtemp(prefix="tansaku-bench-models-"))
    try:
        for model in models:
            for window in windows:
                run = tansaku_run(files, mask, model, window, work)
                runs.append(run)
                print(json.dumps(row(run)), file=sys.stderr)
            if qmd is not None:
                run = qmd_run(qmd, node_bin, files, mask, model, work)
                runs.append(run)
                print(json.dumps(row(run)), file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return runs


def row(run: ModelRun) -> dict[str, Any]:
    return asdict(run) | {
        "chunks_per_second": run.chunks_per_second,
        "tokens_per_second": run.tokens_per_second,
        "projected_minutes_10k": run.projected_minutes,
    }


def table(runs: list[ModelRun]) -> str:
    lines = [
        "| tool | model | window | chunks | windows | tokens | seconds | tokens/s | chunks/s"
        " | embed call, s | peak RSS MB | CPU s | 10,000 chunks, min | load (1 min) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        tps = f"{r.tokens_per_second:.0f}" if r.tokens_per_second else "-"
        alone = f"{r.embed_seconds:.1f}" if r.embed_seconds is not None else "-"
        rss = f"{r.peak_rss_mb:.0f}" if r.peak_rss_mb is not None else "-"
        lines.append(
            f"| {r.tool} | {Path(r.model).name} | {r.window} | {r.chunks} | {r.windows} | {r.tokens or '-'}"
            f" | {r.seconds:.1f} | {tps} | {r.chunks_per_second:.2f} | {alone} | {rss} | {r.cpu_seconds:.0f}"
            f" | {r.projected_minutes:.0f} | {r.loadavg[0]:.1f}-{r.loadavg[1]:.1f} |"
        )
    return "\n".join(lines)
