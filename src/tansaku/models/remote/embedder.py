"""Embeddings from ``POST {base}/embeddings``: batched, a few requests at a time, unit length."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...errors import EndpointBadResponse, EndpointDimensions, UsageError
from .client import Client
from .tokens import estimate_tokens

BATCH_ENV = "TANSAKU_REMOTE_BATCH"
CONCURRENCY_ENV = "TANSAKU_REMOTE_CONCURRENCY"
# Texts per request: big enough that HTTP costs little per text, small enough that one failed
# request loses little work and stays under servers' input caps (OpenAI's is 2048 inputs).
DEFAULT_BATCH = 16
# Requests in flight: a shared server (or a rate limit) should not see one person's whole corpus
# at once.
DEFAULT_CONCURRENCY = 2
# The server enforces its own context; this only bounds what TANSAKU_EMBED_WINDOW may ask for.
CONTEXT_TOKENS = 8192
# Estimated tokens per window: MiniLM-size servers' trained window, with the estimate's margin.
WINDOW_TOKENS = 256
_PROBE_TEXT = "tansaku"


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"{name}={raw!r} is not a whole number of at least 1")
    return int(raw)


class RemoteEmbedder:
    """The embedder interface of ``LlamaEmbedder`` over an endpoint (see index/embed.Embedder)."""

    def __init__(self, client: Client, *, batch: int | None = None, concurrency: int | None = None) -> None:
        self.client = client
        self.batch = batch or _env_int(BATCH_ENV, DEFAULT_BATCH)
        self.concurrency = concurrency or _env_int(CONCURRENCY_ENV, DEFAULT_CONCURRENCY)
        self._dims: int | None = None
        self.context_tokens = CONTEXT_TOKENS
        self.window_tokens = WINDOW_TOKENS

    @property
    def endpoint(self) -> Any:
        return self.client.endpoint

    @property
    def dims(self) -> int:
        """The endpoint's dimensions: from the first answer, or one tiny request asking."""
        if self._dims is None:
            self.embed([_PROBE_TEXT])
        assert self._dims is not None
        return self._dims

    def probe(self) -> int:
        """Check that the server serves the model and ask (one word) for its dimensions now: a
        run that will store vectors must know what the server serves today, not what it served
        earlier in this process."""
        from .served import check_served

        check_served(self.client)
        self._dims = None
        return self.dims

    def expect_dims(self, dims: int) -> None:
        """Refuse vectors of any other size from now on (those the index holds for this model)."""
        if self._dims is not None and self._dims != dims:
            raise self._wrong_dims(self._dims, dims)
        self._dims = dims

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def unreadable_share(self, text: str) -> float:
        return 0.0  # the server's vocabulary is not known here

    def set_threads(self, threads: int | None) -> None:
        """Threads are the server's business."""

    def close(self) -> None:
        """Nothing is held open between requests."""

    def embed(self, texts: Sequence[str], *, pack: bool = False) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts: wrap a single text in a list")
        groups = [list(texts[i : i + self.batch]) for i in range(0, len(texts), self.batch)]
        if len(groups) <= 1 or self.concurrency == 1:
            answers = [self._request(group) for group in groups]
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(groups))) as pool:
                answers = list(pool.map(self._request, groups))
        return [vector for answer in answers for vector in answer]

    def _request(self, texts: list[str]) -> list[list[float]]:
        endpoint = self.client.endpoint
        answer = self.client.post(
            "/embeddings", {"model": endpoint.model, "input": texts, "encoding_format": "float"}
        )
        self.client.count(len(texts), answer.get("usage"))
        items = answer.get("data")
        if not isinstance(items, list) or len(items) != len(texts):
            got = len(items) if isinstance(items, list) else "no"
            raise EndpointBadResponse(
                f"{endpoint.base_url}/embeddings answered {got} vectors for {len(texts)} texts"
            )
        ordered = sorted(items, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
        return [self._vector(item) for item in ordered]

    def _vector(self, item: Any) -> list[float]:
        values = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(values, list) or not values or not all(isinstance(v, int | float) for v in values):
            raise EndpointBadResponse(
                f"{self.client.endpoint.base_url}/embeddings answered something that is not a vector"
                " (a base64 encoding_format is not supported)"
            )
        if self._dims is None:
            self._dims = len(values)
        elif len(values) != self._dims:
            raise self._wrong_dims(len(values), self._dims)
        norm = math.sqrt(sum(v * v for v in values))
        return [v / norm for v in values] if norm > 0 else [float(v) for v in values]

    def _wrong_dims(self, got: int, expected: int) -> EndpointDimensions:
        endpoint = self.client.endpoint
        return EndpointDimensions(
            f"{endpoint.base_url} answered {got}-dimension vectors for {endpoint.model!r}, where"
            f" {expected} were expected: the server's model changed under the same name",
            hint="run `tansaku embed` to embed again with the model it serves now",
            got=got,
            expected=expected,
        )
