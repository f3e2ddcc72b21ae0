"""The cache of model results (store/llm_cache.py, store/postgres/llm_cache.py) on both backends:
values round-trip, a put replaces, large kinds keep their newest keys, and a failure is a miss or
a skipped write that leaves the caller's transaction usable, never an error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tansaku.api import Tansaku
from tansaku.store.backend import documents
from tansaku.store.llm_cache import LlmCache, cache_for, open_cache

pytestmark = pytest.mark.both_backends


@pytest.fixture
def cache(indexed: Path) -> Iterator[LlmCache]:
    opened = open_cache(Tansaku().backend)
    assert opened is not None
    yield opened
    opened.close()


def test_values_round_trip_and_a_put_replaces(cache: LlmCache) -> None:
    value: dict[str, Any] = {"lex": ["restore", "復元"], "vec": ["get a file back"], "score": 0.25}
    cache.put_many("expansion", [("a", value), ("b", [1, 2.5, None])])
    assert cache.get_many("expansion", ["a", "b", "missing", "a"]) == {"a": value, "b": [1, 2.5, None]}
    assert cache.get("rerank", "a") is None  # kinds are apart
    cache.put("expansion", "a", "replaced")
    assert cache.get("expansion", "a") == "replaced"
    assert cache.get_recent("expansion", "a", 3600) == "replaced"
    cache.forget_older("expansion", -3600)  # everything is older than an hour from now
    assert cache.get_many("expansion", ["a", "b"]) == {}
    assert cache.write_failures == 0


def test_a_large_kind_keeps_only_its_newest_keys(cache: LlmCache) -> None:
    for key in ("first", "second", "third"):
        cache.put("prefix-state", key, {"state": key})
    kept = cache.get_many("prefix-state", ["first", "second", "third"])
    assert "third" in kept and len(kept) == 2  # the one just written always stays


def test_a_refused_write_is_skipped_and_the_read_goes_on(indexed: Path) -> None:
    with Tansaku().backend.reading() as conn:  # a read-only block: the index refuses writes
        cache = cache_for(conn)
        cache.put("expansion", "k", "v")
        assert cache.write_failures == 1
        assert cache.get("expansion", "k") is None
        assert documents.collection_counts(conn)["sample"][0] == 13  # the block is still usable


def test_without_an_index_every_get_misses(cli: Any, index_backend: str) -> None:
    assert cli("status").exit_code == 0  # no index yet
    cache = open_cache(Tansaku().backend)
    if index_backend == "sqlite":
        assert cache is None  # no file, no cache
        return
    assert cache is not None
    try:  # PostgreSQL: a reachable database without tansaku's tables
        assert cache.get("expansion", "k") is None
        cache.put("expansion", "k", "v")
        assert cache.write_failures == 1
    finally:
        cache.close()
