"""An expansion that ran out of time is kept briefly (issue 23): a repeated query within
PARTIAL_TTL_S pays nothing, as the README says, while a longer budget, or the same query after
the window, asks the model again (a quieter machine may finish). Real Gemma 270M, real index file.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tansaku.models import generate
from tansaku.models.generate import expand_query
from tansaku.store import db
from tansaku.store.llm_cache import LlmCache

from .gemma_fixture import gemma_gguf, requires_gemma

QUERY = "how to repair a bicycle puncture"
TINY_BUDGET = 0.05  # far shorter than a 270M model needs for one line


class Counting:
    """The real generator, counting its generate() calls."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    @property
    def model_sha256(self) -> str:
        return str(self.inner.model_sha256)

    def generate(self, prompt: str, **options: Any) -> str:
        self.calls += 1
        text = self.inner.generate(prompt, **options)
        self.timed_out = self.inner.timed_out
        return str(text)


@pytest.fixture(scope="module")
def gemma() -> Iterator[Any]:
    from tansaku.models.llama_causal import LlamaGenerator

    with LlamaGenerator(gemma_gguf(), n_threads=1) as model:
        yield model


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[LlmCache]:
    conn = db.open_write(tmp_path / "index.sqlite")
    yield LlmCache(conn)
    conn.close()


@requires_gemma
def test_a_timed_out_expansion_is_kept_for_a_repeated_query(gemma: Any, cache: LlmCache):
    model = Counting(gemma)
    first = expand_query(QUERY, model, cache, timeout=TINY_BUDGET)
    assert first.warnings[0].code == "TIMEOUT" and not first.cached
    started = time.perf_counter()
    again = expand_query(QUERY, model, cache, timeout=TINY_BUDGET)
    took = time.perf_counter() - started
    assert model.calls == 1, "the repeated query ran the model again"
    assert again.cached and took < TINY_BUDGET
    assert (again.lex, again.vec, again.hyde) == (first.lex, first.vec, first.hyde)
    assert again.warnings[0].code == "TIMEOUT" and "recent run" in again.warnings[0].message


@requires_gemma
def test_a_longer_budget_or_an_old_partial_asks_the_model_again(
    gemma: Any, cache: LlmCache, monkeypatch: pytest.MonkeyPatch
):
    model = Counting(gemma)
    expand_query(QUERY, model, cache, timeout=TINY_BUDGET)
    expand_query(QUERY, model, cache, timeout=TINY_BUDGET * 2)  # may finish more than the first
    assert model.calls == 2
    monkeypatch.setattr(generate, "PARTIAL_TTL_S", 0)  # the window has passed
    expand_query(QUERY, model, cache, timeout=TINY_BUDGET)
    assert model.calls == 3
