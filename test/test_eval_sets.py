"""The judged query sets in evals/sets load, and say what the sets README promises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tansaku.eval.harness import KINDS, load_set

SETS = sorted((Path(__file__).resolve().parent.parent / "evals" / "sets").glob("*.jsonl"))


def test_the_held_out_sets_are_there() -> None:
    names = {path.name for path in SETS}
    for corpus in ("python-docs", "man-pages", "zh-docs", "npm-docs", "py-src"):
        assert f"{corpus}-holdout-v1.jsonl" in names


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_every_set_loads_with_known_kinds_and_one_corpus_per_set(path: Path) -> None:
    queries = load_set(path)
    assert {q.kind for q in queries} <= set(KINDS)
    assert all(q.query.strip() and q.relevant and len(set(q.relevant)) == len(q.relevant) for q in queries)
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpora = {json.loads(line)["corpus"] for line in lines}
    assert len(corpora) == 1, corpora
