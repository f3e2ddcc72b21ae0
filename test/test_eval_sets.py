"""The judged query sets in evals/sets load, and say what the sets README promises; so do its
labelled-page sets (``html-fidelity-v1``: strings a page's text must keep and drop)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tansaku.eval.harness import KINDS, load_set

ALL_SETS = sorted((Path(__file__).resolve().parent.parent / "evals" / "sets").glob("*.jsonl"))


def _labels_pages(path: Path) -> bool:
    first = next(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return "keep" in json.loads(first)


SETS = [path for path in ALL_SETS if not _labels_pages(path)]
PAGE_SETS = [path for path in ALL_SETS if _labels_pages(path)]


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


def test_the_fidelity_set_is_there() -> None:
    assert "html-fidelity-v1.jsonl" in {path.name for path in PAGE_SETS}


@pytest.mark.parametrize("path", PAGE_SETS, ids=lambda p: p.name)
def test_every_labelled_page_has_keep_and_drop_strings(path: Path) -> None:
    pages = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(pages) >= 40
    assert len({page["generator"] for page in pages}) >= 6
    assert len({page["id"] for page in pages}) == len(pages)
    assert len({(page["corpus"], page["path"]) for page in pages}) == len(pages)
    for page in pages:
        assert page["corpus"] in ("html-manuals", "deb-manuals")
        assert page["path"].endswith(".html") and not page["path"].startswith("/")
        assert 3 <= len(page["keep"]) <= 5, page["id"]
        assert len(page["drop"]) <= 4, page["id"]
        assert len(page["drop"]) >= 2 or page.get("notes"), page["id"]  # fewer only with a reason
        for text in page["keep"] + page["drop"]:
            assert text == " ".join(text.split()) and text, (page["id"], text)  # as matched: collapsed
        assert not set(page["keep"]) & set(page["drop"]), page["id"]
