"""JSON over HTTP to an OpenAI-compatible server: timeouts, retries and an honest tally.

Every request ends: each attempt has a timeout, 429 and 5xx answers are retried a bounded number of
times after a bounded wait (the server's ``Retry-After`` when it gives one, else exponential
backoff with jitter), and each way of failing raises its own error (errors.py, ``Endpoint*``).
An answer is read a block at a time up to a size cap, so a server that sends without end costs
the cap, not the machine's memory.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import (
    EndpointAuth,
    EndpointBadResponse,
    EndpointError,
    EndpointModelMissing,
    EndpointRateLimited,
    EndpointTimeout,
    EndpointUnreachable,
    TansakuError,
    UsageError,
)
from .endpoint import KEY_ENV, Endpoint

TIMEOUT_ENV = "TANSAKU_REMOTE_TIMEOUT"
QUERY_TIMEOUT_ENV = "TANSAKU_REMOTE_QUERY_TIMEOUT"
RETRIES_ENV = "TANSAKU_REMOTE_RETRIES"
DEFAULT_TIMEOUT_S = 60.0
# A search waits this long for its query vector, retries included: a person is waiting, and
# `query` has keyword results to give meanwhile (bulk `embed` keeps DEFAULT_TIMEOUT_S).
DEFAULT_QUERY_TIMEOUT_S = 5.0
# The largest answer read when the caller names no cap: JSON of a rerank or a completion is a few
# KB, a /models list of a big hosted API about 1 MB.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
_READ_BLOCK = 64 * 1024
DEFAULT_RETRIES = 3
# A server asking for a longer pause than this is out of capacity for now: saying so beats
# waiting minutes in silence.
MAX_WAIT_S = 30.0
_FIRST_BACKOFF_S = 0.5
_BODY_SHOWN = 200  # characters of an error body quoted in a message


class HttpStatus(TansakuError):
    """An answer to this request alone (a 4xx other than 401, 403 and 429): another request, or
    another route for the same work, may still succeed."""

    code = "ENDPOINT_REJECTED"
    exit_code = 3

    def __init__(self, message: str, status: int, body: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.status = status
        self.body = body


@dataclass
class Tally:
    """What was sent and what it cost, for the summary after a command."""

    requests: int = 0
    retries: int = 0
    texts: int = 0
    bytes_sent: int = 0
    prompt_tokens: int | None = None  # None while no answer reported its usage
    seconds: float = 0.0  # wall time with at least one request in flight (not summed over them)

    def add_tokens(self, usage: Any) -> None:
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            self.prompt_tokens = (self.prompt_tokens or 0) + int(usage["prompt_tokens"])


def _env_number(name: str, default: float, minimum: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise UsageError(f"{name}={raw!r} is not a number of at least {minimum:g}")
    return value


class Client:
    """One endpoint's HTTP client; safe to share between threads."""

    def __init__(
        self,
        endpoint: Endpoint,
        key: str | None,
        *,
        timeout: float | None = None,
        retries: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.endpoint = endpoint
        self._key = key
        self._timeout, self._retries = timeout, retries
        self.timeout, self.retries  # noqa: B018 - a bad setting is reported now, not at the first request
        self._sleep = sleep
        self.tally = Tally()
        self._lock = threading.Lock()
        self._in_flight = 0
        self._busy_since = 0.0

    @property
    def timeout(self) -> float:
        """Seconds per attempt: as given, else ``TANSAKU_REMOTE_TIMEOUT`` as it is now (a
        long-lived process sees a change)."""
        return (
            self._timeout if self._timeout is not None else _env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT_S, 0.1)
        )

    @property
    def query_timeout(self) -> float:
        """Seconds a search waits for its query vector, all attempts together:
        ``TANSAKU_REMOTE_QUERY_TIMEOUT`` (never more than the per-attempt timeout)."""
        value = _env_number(QUERY_TIMEOUT_ENV, DEFAULT_QUERY_TIMEOUT_S, 0.1)
        return min(value, self.timeout)

    @property
    def retries(self) -> int:
        if self._retries is not None:
            return self._retries
        return int(_env_number(RETRIES_ENV, DEFAULT_RETRIES, 0))

    def count(self, texts: int, usage: Any) -> None:
        """Add an answer's texts and the tokens the server says it read to the tally."""
        with self._lock:
            self.tally.texts += texts
            self.tally.add_tokens(usage)

    def post(
        self,
        path: str,
        payload: dict[str, Any],
        *,
        timeout: float | None = None,
        deadline: float | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """``deadline``: seconds for every attempt and wait together (a search's query vector);
        ``max_bytes``: the largest answer read (past it, ENDPOINT_BAD_RESPONSE)."""
        body = json.dumps(payload).encode("utf-8")
        return self._call("POST", path, body, timeout, deadline=deadline, max_bytes=max_bytes)

    def get(self, path: str, *, timeout: float | None = None) -> dict[str, Any]:
        return self._call("GET", path, None, timeout)

    def _call(
        self,
        method: str,
        path: str,
        body: bytes | None,
        timeout: float | None,
        *,
        deadline: float | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        url = self.endpoint.base_url + path
        headers = {"Accept": "application/json", "User-Agent": "tansaku"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        attempt = 0
        timeout = timeout or self.timeout
        retries = self.retries
        setting = TIMEOUT_ENV
        ends = None
        if deadline is not None:
            timeout, setting = min(timeout, deadline), QUERY_TIMEOUT_ENV
            ends = time.monotonic() + deadline
        self._flight(+1)
        try:
            while True:
                request = urllib.request.Request(url, data=body, headers=headers, method=method)
                with self._lock:
                    self.tally.requests += 1
                    self.tally.bytes_sent += len(body or b"")
                # The socket's timeout bounds each wait for bytes; the clock bounds the whole
                # answer (a server trickling a byte a second would otherwise never time out).
                started = time.monotonic()
                wait_s = timeout if ends is None else max(0.1, min(timeout, ends - started))
                try:
                    with urllib.request.urlopen(request, timeout=wait_s) as response:
                        raw = _read_capped(response, url, max_bytes, started + wait_s)
                    return _decode(raw, url)
                except urllib.error.HTTPError as exc:
                    wait = self._retry_wait(exc, attempt, retries, url, ends)
                except TimeoutError as exc:
                    raise self._timed_out(url, deadline or timeout, setting) from exc
                except (urllib.error.URLError, ConnectionError, OSError) as exc:
                    reason = getattr(exc, "reason", exc)
                    if isinstance(reason, TimeoutError | socket.timeout):
                        raise self._timed_out(url, deadline or timeout, setting) from exc
                    wait = _backoff(attempt)
                    out_of_time = ends is not None and time.monotonic() + wait >= ends
                    if attempt >= retries or out_of_time or not isinstance(reason, ConnectionError):
                        raise EndpointUnreachable(
                            f"cannot reach {self.endpoint.base_url}: {_reason(reason)}",
                            hint="is the server running, and is the URL in the model reference right?"
                            " (`tansaku doctor` checks it)",
                        ) from exc
                attempt += 1
                with self._lock:
                    self.tally.retries += 1
                self._sleep(wait)
        finally:
            self._flight(-1)

    @staticmethod
    def _timed_out(url: str, seconds: float, setting: str) -> EndpointTimeout:
        return EndpointTimeout(
            f"{url} did not answer within {seconds:g} s",
            hint=f"a busy or slow server: raise {setting} (seconds), or try again later",
        )

    def _flight(self, change: int) -> None:
        with self._lock:
            now = time.perf_counter()
            if self._in_flight == 0:
                self._busy_since = now
            self._in_flight += change
            if self._in_flight == 0:
                self.tally.seconds += now - self._busy_since

    def _retry_wait(
        self, exc: urllib.error.HTTPError, attempt: int, retries: int, url: str, ends: float | None = None
    ) -> float:
        """Seconds to wait before retrying ``exc``'s answer, or raise its error (also when the wait
        would pass ``ends``, the monotonic time the caller stops waiting at)."""
        status = exc.code
        text = _body(exc)
        if status in (401, 403):
            raise EndpointAuth(
                f"{url} refused the request (HTTP {status}): {text}",
                hint=f"set the API key in {KEY_ENV} (or the variable [models] ROLE_api_key_env names)",
            )
        if _names_missing_model(status, text, self.endpoint.model):
            raise EndpointModelMissing(
                f"{self.endpoint.base_url} does not serve the model {self.endpoint.model!r}"
                f" (HTTP {status}: {text})",
                hint="name one of the server's models after '#' (`tansaku doctor` lists them)",
            )
        if status != 429 and status < 500:
            raise HttpStatus(f"{url} answered HTTP {status}: {text}", status, text)
        asked = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        wait = asked if asked is not None else _backoff(attempt)
        out_of_time = ends is not None and time.monotonic() + wait >= ends
        if attempt >= retries or out_of_time or (asked is not None and asked > MAX_WAIT_S):
            after = f" after {attempt + 1} attempts" if attempt else ""
            if status == 429:
                later = f"; it asks to wait {asked:g} s" if asked is not None else ""
                raise EndpointRateLimited(
                    f"{self.endpoint.base_url} is rate-limiting requests (HTTP 429{after}){later}",
                    hint="try again later, or lower [models] embed_concurrency",
                )
            raise EndpointError(
                f"{url} failed (HTTP {status}{after}): {text}",
                hint="the server's own log says why",
            )
        return wait


def _read_capped(response: Any, url: str, max_bytes: int, ends: float) -> bytes:
    """The answer's body, read a block at a time: refused (ENDPOINT_BAD_RESPONSE) once it passes
    ``max_bytes`` (or its Content-Length says it will), without reading the rest, and a timeout
    once the clock passes ``ends``."""
    declared = response.headers.get("Content-Length") if response.headers else None
    if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
        raise _too_big(url, max_bytes, f"it announced {int(declared):,} bytes; refused unread")
    blocks: list[bytes] = []
    size = 0
    while True:
        # read1: what has arrived (read would wait for a whole block, and a server trickling a
        # byte at a time keeps the socket's timeout from ever firing).
        block = response.read1(min(_READ_BLOCK, max_bytes + 1 - size))
        if not block:
            return b"".join(blocks)
        blocks.append(block)
        size += len(block)
        if size > max_bytes:
            raise _too_big(url, max_bytes, "reading stopped there")
        if time.monotonic() > ends:
            raise TimeoutError(f"{url} was still sending its answer")


def _too_big(url: str, max_bytes: int, how: str) -> EndpointBadResponse:
    return EndpointBadResponse(
        f"{url} answered a body over {max_bytes:,} bytes ({how})",
        hint="the server is not answering as the API promises; its own log says why",
        max_bytes=max_bytes,
    )


def _decode(raw: bytes, url: str) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        # ValueError: not UTF-8, not JSON, or an integer longer than Python reads (4,300 digits);
        # RecursionError: arrays nested thousands deep.
        raise EndpointBadResponse(f"{url} answered something that is not JSON: {raw[:80]!r}") from exc
    if not isinstance(data, dict):
        raise EndpointBadResponse(f"{url} answered JSON that is not an object")
    return data


def _body(exc: urllib.error.HTTPError) -> str:
    try:
        # An error page is quoted, not parsed: its start is all a message needs.
        raw = exc.read(_READ_BLOCK).decode("utf-8", "replace")
    except (OSError, ValueError):
        raw = ""
    text = " ".join(raw.split())
    return (text[:_BODY_SHOWN] + "...") if len(text) > _BODY_SHOWN else (text or exc.reason or "")


def _names_missing_model(status: int, text: str, model: str) -> bool:
    lowered = text.lower()
    if "model_not_found" in lowered:
        return True
    missing = any(
        marker in lowered for marker in ("not found", "does not exist", "not exist", "unknown model")
    )
    return status in (400, 404, 500) and missing and "model" in lowered


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds: a number, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _backoff(attempt: int) -> float:
    return _FIRST_BACKOFF_S * (2**attempt) * (0.5 + random.random())


def _reason(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "unknown host"
    return str(reason)
