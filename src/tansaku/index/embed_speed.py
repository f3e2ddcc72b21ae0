"""How fast the embedding model embeds on this machine, measured by `embed` and kept in the index.

Estimates of the wait (`status`, a server's advice) come from it rather than from a constant: on 2
cores MiniLM embeds about 6 chunks a second and EmbeddingGemma-300M about 0.5, so a constant
from one model misleads the other by an order of magnitude. It is kept per model file (its
sha256) in the index's ``llm_cache``, as the reranker's speed is; the latest measured run wins,
since a machine's load and the tansaku version change and an old figure should not outlive them.
"""

from __future__ import annotations

import time
from typing import Any

from ..store.llm_cache import cache_for, cache_key
from ..types import EmbedSpeed

KIND = "embed-speed"
# A run shorter than this measures the warm-up more than the model (the first decode allocates
# llama.cpp's buffers): it is not kept.
MIN_SECONDS = 2.0


def measured(chunks: int, vectors: int, seconds: float) -> EmbedSpeed | None:
    """The speed of a run that embedded ``chunks`` (``vectors`` windows) in ``seconds``, or None
    when the run was too short to say."""
    if chunks < 1 or seconds < MIN_SECONDS:
        return None
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return EmbedSpeed(chunks / seconds, vectors / seconds, chunks, seconds, now)


def remember(conn: Any, model_sha256: str, speed: EmbedSpeed) -> None:
    """Keep ``speed`` for the model file; a write the index refuses is skipped (an estimate is
    never worth failing an embed run for)."""
    cache_for(conn).put(
        KIND,
        cache_key(model_sha256),
        {
            "chunks_per_second": speed.chunks_per_second,
            "vectors_per_second": speed.vectors_per_second,
            "chunks": speed.chunks,
            "seconds": speed.seconds,
            "at": speed.measured_at,
        },
    )


def known(conn: Any, model_sha256: str) -> EmbedSpeed | None:
    """The kept speed of the model file, None when it was never measured in this index."""
    value = cache_for(conn).get(KIND, cache_key(model_sha256))
    if not isinstance(value, dict):
        return None
    try:
        speed = EmbedSpeed(
            float(value["chunks_per_second"]),
            float(value["vectors_per_second"]),
            int(value["chunks"]),
            float(value["seconds"]),
            str(value["at"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return speed if speed.chunks_per_second > 0 else None
