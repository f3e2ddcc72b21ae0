"""How many bytes of vectors a process may keep in memory (search/vector_cache.py keeps them; below
it, a search scores every vector of a model in memory on SQLite, and PostgreSQL's vector search
scans them exactly: store/postgres/vectors.py). A store-level setting, as db.py's lock timeout
is, so that the store reads it without importing the search layer.
"""

from __future__ import annotations

# Above this, a model's vectors stay on disk and sqlite-vec's KNN searches them (1 GiB is about
# 700,000 vectors of 384 dimensions). TANSAKU_VECTOR_MEMORY_MB overrides it.
DEFAULT_MEMORY_BUDGET_MB = 1024
MEMORY_BUDGET_ENV = "TANSAKU_VECTOR_MEMORY_MB"


def memory_budget_bytes() -> int:
    return int(memory_budget_setting()[0] * 1024 * 1024)


def memory_budget_setting() -> tuple[float, str, str | None]:
    """Megabytes of vectors a process may keep, their source and the problem with an ignored value.

    ``TANSAKU_VECTOR_MEMORY_MB``, else the default (tansaku.precedence's order; the cache is made
    before any config file is read, so there is no config key). A value that is not a number is
    the default; a negative one is 0 (search on disk).
    """
    from ..precedence import DEFAULT, choose

    raw, source = choose(default=DEFAULT_MEMORY_BUDGET_MB, env=MEMORY_BUDGET_ENV)
    try:
        megabytes = float(raw)
    except ValueError:
        return DEFAULT_MEMORY_BUDGET_MB, DEFAULT, f"{MEMORY_BUDGET_ENV}={raw!r} is not a number"
    if megabytes != megabytes:  # NaN
        return DEFAULT_MEMORY_BUDGET_MB, DEFAULT, f"{MEMORY_BUDGET_ENV}={raw!r} is not a number"
    return max(megabytes, 0.0), source, None
