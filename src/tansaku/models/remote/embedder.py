"""Embeddings from ``POST {base}/embeddings``: batched, a few requests at a time, unit length.

Every answer is checked before any of it is used: a body of at most ``answer_cap`` bytes, one
vector per text, each of numbers only, finite, not all zero, of at most MAX_DIMS dimensions and
of the model's dimensions. Anything else refuses the whole answer (ENDPOINT_BAD_RESPONSE, naming
the item and what was wrong), so `embed` stores nothing of it and a search never scores it.
"""

from __future__ import annotations

import json
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
# The most dimensions a vector may have: what sqlite-vec can store (its vec0 tables refuse more),
# and twice the largest embedding models served today.
MAX_DIMS = 8192
# Bytes of JSON an answer may take per text: MAX_DIMS numbers at 40 bytes each (17 digits, an
# exponent, a separator and pretty-printing), plus the envelope. 16 texts: 5.1 MiB; one query's
# vector: 384 KiB. A server that sends more is cut off there, not read to its end.
_BYTES_PER_VALUE = 40
_ENVELOPE_BYTES = 64 * 1024


def answer_cap(texts: int) -> int:
    """The largest answer read for a request of ``texts`` texts."""
    return _ENVELOPE_BYTES + texts * MAX_DIMS * _BYTES_PER_VALUE


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
        self.forget_dims()
        return self.dims

    def forget_dims(self) -> None:
        """Take the dimensions of the next answer as the model's (the server may have changed)."""
        self._dims = None

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def unreadable_share(self, text: str) -> float:
        return 0.0  # the server's vocabulary is not known here

    def set_threads(self, threads: int | None) -> None:
        """Threads are the server's business."""

    def close(self) -> None:
        """Nothing is held open between requests."""

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """A search's query vectors: the same request as ``embed``, waiting at most the client's
        ``query_timeout`` (TANSAKU_REMOTE_QUERY_TIMEOUT) for them, retries included."""
        return self.embed(texts, deadline=self.client.query_timeout)

    def embed(
        self, texts: Sequence[str], *, pack: bool = False, deadline: float | None = None
    ) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts: wrap a single text in a list")
        groups = [list(texts[i : i + self.batch]) for i in range(0, len(texts), self.batch)]
        if deadline is not None:
            # A handful of query texts: one request after another, each within the deadline.
            answers = [self._request(group, deadline) for group in groups]
        elif len(groups) <= 1 or self.concurrency == 1:
            answers = [self._request(group) for group in groups]
        else:
            pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(groups)))
            try:
                answers = list(pool.map(self._request, groups))
            finally:
                # On Ctrl-C or a failed request, requests not yet sent are dropped rather than
                # waited for (those in flight end by their timeout).
                pool.shutdown(wait=False, cancel_futures=True)
        return [vector for answer in answers for vector in answer]

    def _request(self, texts: list[str], deadline: float | None = None) -> list[list[float]]:
        endpoint = self.client.endpoint
        answer = self.client.post(
            "/embeddings",
            {"model": endpoint.model, "input": texts, "encoding_format": "float"},
            deadline=deadline,
            max_bytes=answer_cap(len(texts)),
        )
        self.client.count(len(texts), answer.get("usage"))
        items = answer.get("data")
        if not isinstance(items, list) or len(items) != len(texts):
            got = len(items) if isinstance(items, list) else "no"
            raise EndpointBadResponse(
                f"{endpoint.base_url}/embeddings answered {got} vectors for {len(texts)} texts"
            )
        ordered = sorted(items, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
        positions = [item.get("index") if isinstance(item, dict) else None for item in ordered]
        if all(isinstance(p, int) for p in positions) and positions != list(range(len(texts))):
            raise self._bad(f"its items are numbered {positions[:8]}, not 0 to {len(texts) - 1}")
        vectors = [self._vector(item, i, len(texts)) for i, item in enumerate(ordered)]
        dims = len(vectors[0])
        for i, vector in enumerate(vectors):
            if len(vector) != dims:
                where = _item(i, len(texts))
                raise self._bad(f"{where} has {len(vector)} dimensions where {dims} were expected")
        if self._dims is None:
            self._dims = dims
        elif dims != self._dims:
            raise self._wrong_dims(dims, self._dims)
        return vectors

    def _vector(self, item: Any, position: int, count: int) -> list[float]:
        """The item's vector at unit length, or ENDPOINT_BAD_RESPONSE naming what is wrong."""
        values = item.get("embedding") if isinstance(item, dict) else None
        where = _item(position, count)
        if not isinstance(values, list) or not values:
            raise self._bad(f"{where} is not a vector (a base64 encoding_format is not supported)")
        if len(values) > MAX_DIMS:
            many = f"{len(values):,} dimensions, more than the {MAX_DIMS:,} an index holds"
            raise self._bad(f"{where} has {many}")
        numbers: list[float] = []
        for at, value in enumerate(values):
            # bool is an int to Python, not a number to JSON.
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self._bad(f"{where} holds {_shown(value)} at dimension {at}, not a number")
            try:
                number = float(value)
            except OverflowError:  # a JSON integer of hundreds of digits
                number = math.inf
            if not math.isfinite(number):
                raise self._bad(f"{where} holds {_shown(value)} at dimension {at}")
            numbers.append(number)
        norm = math.sqrt(math.fsum(v * v for v in numbers))
        if norm == 0:
            raise self._bad(f"{where} is a zero vector (every value 0): it has no direction to compare")
        if not math.isfinite(norm):
            raise self._bad(f"{where} is too long to normalise (its length overflows)")
        return [v / norm for v in numbers]

    def _bad(self, what: str) -> EndpointBadResponse:
        endpoint = self.client.endpoint
        return EndpointBadResponse(
            f"{endpoint.base_url}/embeddings gave a bad answer for {endpoint.model!r}: {what};"
            " nothing of that answer was used",
            hint="the server is not answering as the API promises (its own log says why); try again"
            " once it answers well",
        )

    def _wrong_dims(self, got: int, expected: int) -> EndpointDimensions:
        endpoint = self.client.endpoint
        return EndpointDimensions(
            f"{endpoint.base_url} answered {got}-dimension vectors for {endpoint.model!r}, where"
            f" {expected} were expected: the server changed its model while it was being asked",
            hint="try again once the server serves one model under that name",
            got=got,
            expected=expected,
        )


def _item(position: int, count: int) -> str:
    return f"item {position} of {count}" if count > 1 else "its vector"


def _shown(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**20:
        return f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return json.dumps(value)[:40]
