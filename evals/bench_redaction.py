"""Secrets redaction: our patterns vs detect-secrets' keyword and entropy plugins vs both.

    .venv/bin/python evals/bench_redaction.py [--set evals/redaction/labelled.jsonl] [--mb 2]

On the labelled set (``label`` secret: ``secret`` must be gone from the text; ``label`` benign:
the text must come back unchanged) it counts, per detector, the secrets caught (recall) and the
benign texts changed (false positives), and lists the misses. Cost is the time to redact about
``--mb`` MB of transcript text (the turns of the judged fixtures, repeated), in ms per MB; the
import time of detect-secrets is measured in a fresh process. detect-secrets is optional here
(``pip install detect-secrets``): without it only our patterns are measured. Our patterns at
another commit: ``PYTHONPATH=<worktree>/src``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("tansaku") is None:  # PYTHONPATH=<other checkout>/src measures that one
    sys.path.insert(0, str(REPO / "src"))

from tansaku.sources.transcripts import claude, codex  # noqa: E402
from tansaku.sources.transcripts.redact import redact  # noqa: E402

DEFAULT_SET = REPO / "evals" / "redaction" / "labelled.jsonl"
JUDGED = REPO / "fixtures" / "transcripts" / "judged"
Detector = Callable[[str], str]


def ours(text: str) -> str:
    return redact(text).text


def detect_secrets_detector() -> Detector | None:
    try:
        from detect_secrets.plugins.high_entropy_strings import (
            Base64HighEntropyString,
            HexHighEntropyString,
        )
        from detect_secrets.plugins.keyword import KeywordDetector
    except ImportError:
        return None
    plugins = [KeywordDetector(), Base64HighEntropyString(), HexHighEntropyString()]

    def run(text: str) -> str:
        found: set[str] = set()
        for number, line in enumerate(text.splitlines(), start=1):
            for plugin in plugins:
                for secret in plugin.analyze_line(filename="transcript.txt", line=line, line_number=number):
                    if secret.secret_value:
                        found.add(secret.secret_value)
        # The longest first, so a value that holds a shorter one is replaced whole.
        for value in sorted(found, key=len, reverse=True):
            text = text.replace(value, "[REDACTED:detect_secrets]")
        return text

    return run


def score(detector: Detector, items: list[dict]) -> dict:
    caught, missed, false_positives = 0, [], []
    for item in items:
        result = detector(item["text"])
        if item["label"] == "secret":
            if item["secret"] in result:
                missed.append(item["id"] + " " + item["kind"])
            else:
                caught += 1
        elif result != item["text"]:
            false_positives.append(item["id"] + " " + item["kind"])
    secrets = sum(1 for item in items if item["label"] == "secret")
    benign = len(items) - secrets
    return {
        "recall": round(caught / secrets, 3),
        "caught": f"{caught}/{secrets}",
        "false_positives": f"{len(false_positives)}/{benign}",
        "missed": missed,
        "false_positive_ids": false_positives,
    }


def transcript_text(megabytes: float) -> str:
    texts: list[str] = []
    for path in sorted(JUDGED.rglob("*.jsonl")):
        parse = codex.parse if "/codex/" in str(path) else claude.parse
        texts.extend(turn.text for turn in parse(path.read_bytes(), str(path)).turns)
    one = "\n\n".join(texts)
    copies = max(1, round(megabytes * 1_000_000 / len(one.encode())))
    return "\n\n".join([one] * copies)


def cost_ms_per_mb(detector: Detector, texts: list[str]) -> float:
    size = sum(len(text.encode()) for text in texts) / 1_000_000
    started = time.perf_counter()
    for text in texts:
        detector(text)
    return round((time.perf_counter() - started) * 1000 / size, 1)


def import_ms(module: str) -> float | None:
    code = f"import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return round(float(done.stdout), 1) if done.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--mb", type=float, default=2.0, help="MB of transcript text for the cost")
    args = parser.parse_args()
    items = [json.loads(line) for line in args.set.read_text(encoding="utf-8").splitlines() if line.strip()]
    detectors: dict[str, Detector] = {"ours": ours}
    theirs = detect_secrets_detector()
    if theirs is not None:
        detectors["detect_secrets"] = theirs
        detectors["both"] = lambda text: theirs(ours(text))
    # Redaction runs per turn: cut the corpus into its turns again for a fair per-call cost.
    turns = transcript_text(args.mb).split("\n\n")
    results: dict[str, object] = {
        "set": str(args.set.relative_to(REPO) if args.set.is_relative_to(REPO) else args.set),
        "items": len(items),
        "corpus_mb": round(sum(len(t.encode()) for t in turns) / 1_000_000, 2),
        "turns": len(turns),
    }
    for name, detector in detectors.items():
        results[name] = {**score(detector, items), "ms_per_mb": cost_ms_per_mb(detector, turns)}
    results["import_ms"] = {
        "tansaku.sources.transcripts.redact": import_ms("tansaku.sources.transcripts.redact"),
        "detect_secrets plugins": import_ms(
            "detect_secrets.plugins.keyword, detect_secrets.plugins.high_entropy_strings"
        ),
    }
    print(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
