"""What front-matter fields cost: an update that reads them, the index they take, and a search
with and without ``--where``, against the same package before the change.

    .venv/bin/python evals/bench_fields.py [--files 5000] [--src src] [--baseline-src OLD/src]
        [--shape flat|nested] [--json OUT]

1. ``--files`` Markdown notes are generated (seeded) in a temporary folder, each with front matter
   of 6-7 fields (title, a flow list of 3 tags, a date, status, priority, author) and about 300
   words of body text. ``--shape nested`` writes the author as a mapping (``author: {name: ...}``),
   which PyYAML reads; ``flat`` writes it as a word, which fields/plain_yaml.py reads.
2. A real ``collection add`` runs in a subprocess of the package at ``--src`` (and, when given,
   at ``--baseline-src``: an older checkout's ``src``), each with its own config and index; its
   CPU time (user + system, from the child's rusage), wall time and index size are reported.
3. Keyword searches run in process against the ``--src`` index, each 15 times: the median CPU time
   of a plain search and of searches with ``--where`` conditions of several kinds.

CPU time rather than wall time, because the machines this runs on are shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORDS = [
    "garden",
    "compost",
    "tomato",
    "bean",
    "squash",
    "soil",
    "water",
    "seed",
    "harvest",
    "shed",
    "tool",
    "fence",
    "gate",
    "rain",
    "sun",
]
TAGS = ["python", "rust", "go", "search", "notes", "work", "home", "ideas"]
WHERE = {
    "plain": [],
    "tags=python": ["tags=python"],
    "status=draft, priority>=4": ["status=draft", "priority>=4"],
    "a date range": ["date>=2024-03-01", "date<2024-04-01"],
    "tags!=python": ["tags!=python"],
    "no match": ["status=archived"],
}


def make_corpus(root: Path, files: int, shape: str) -> None:
    rng = random.Random(7)
    for i in range(files):
        folder = root / f"d{i % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        author = f"author:\n  name: A{i % 7}" if shape == "nested" else f"author: A{i % 7}"
        front = (
            f"---\ntitle: Note {i}\ntags: [{', '.join(rng.sample(TAGS, 3))}]\n"
            f"date: 2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}\n"
            f"status: {rng.choice(['draft', 'published'])}\npriority: {rng.randint(1, 5)}\n{author}\n---\n\n"
        )
        body = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(40)) for _ in range(8))
        (folder / f"n{i}.md").write_text(f"{front}# Note {i}\n\n{body}\n", encoding="utf-8")


def index_with(src: Path, corpus: Path, sandbox: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "TANSAKU_INDEX_PATH": str(sandbox / "index.sqlite"),
        "TANSAKU_CONFIG_DIR": str(sandbox / "config"),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tansaku.cli.main", "collection", "add", str(corpus), "--name", "corpus"],
        env=env,
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    size = (sandbox / "index.sqlite").stat().st_size
    return {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "index_mb": round(size / 1e6, 1)}


def search_costs(sandbox: Path) -> dict[str, Any]:
    os.environ["TANSAKU_INDEX_PATH"] = str(sandbox / "index.sqlite")
    os.environ["TANSAKU_CONFIG_DIR"] = str(sandbox / "config")
    from tansaku.api import Tansaku

    api = Tansaku(keep_connections=True)
    found: dict[str, Any] = {}
    for name, where in WHERE.items():
        api.search("garden compost", where=where, limit=20)  # warm
        times = []
        for _ in range(15):
            started = time.process_time()
            result = api.search("garden compost", where=where, limit=20)
            times.append(time.process_time() - started)
        found[name] = {"cpu_ms_p50": round(statistics.median(times) * 1000, 1), "total": result.total}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parent.parent / "src")
    parser.add_argument("--baseline-src", type=Path)
    parser.add_argument("--shape", choices=("flat", "nested"), default="flat")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tansaku-bench-fields-") as tmp:
        root = Path(tmp)
        make_corpus(root / "corpus", args.files, args.shape)
        report: dict[str, Any] = {"files": args.files, "shape": args.shape, "load": os.getloadavg()}
        report["update"] = index_with(args.src.resolve(), root / "corpus", root / "new")
        if args.baseline_src is not None:
            report["update_baseline"] = index_with(args.baseline_src.resolve(), root / "corpus", root / "old")
        sys.path.insert(0, str(args.src.resolve()))
        report["search"] = search_costs(root / "new")
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
