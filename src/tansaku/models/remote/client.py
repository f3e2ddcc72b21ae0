"""JSON over HTTP to an OpenAI-compatible server: timeouts, retries and an honest tally.

Every request ends: each attempt has a timeout, 429 and 5xx answers are retried a bounded number of
times after a bounded wait (the server's ``Retry-After`` when it gives one, else exponential
backoff with jitter), and each way of failing raises its own error (errors.py, ``Endpoint*``).
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
RETRIES_ENV = "TANSAKU_REMOTE_RETRIES"
DEFAULT_TIMEOUT_S = 60.0
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
    seconds: float = 0.0

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

    @property
    def timeout(self) -> float:
        """Seconds per attempt: as given, else ``TANSAKU_REMOTE_TIMEOUT`` as it is now (a
        long-lived process sees a change)."""
        return (
            self._timeout if self._timeout is not None else _env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT_S, 0.1)
        )

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

    def post(self, path: str, payload: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        return self._call("POST", path, json.dumps(payload).encode("utf-8"), timeout)

    def get(self, path: str, *, timeout: float | None = None) -> dict[str, Any]:
        return self._call("GET", path, None, timeout)

    def _call(self, method: str, path: str, body: bytes | None, timeout: float | None) -> dict[str, Any]:
        url = self.endpoint.base_url + path
        headers = {"Accept": "application/json", "User-Agent": "tansaku"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        attempt = 0
        timeout = timeout or self.timeout
        retries = self.retries
        started = time.perf_counter()
        try:
            while True:
                request = urllib.request.Request(url, data=body, headers=headers, method=method)
                with self._lock:
                    self.tally.requests += 1
                    self.tally.bytes_sent += len(body or b"")
                try:
                    with urllib.request.urlopen(request, timeout=timeout) as response:
                        raw = response.read()
                    return _decode(raw, url)
                except urllib.error.HTTPError as exc:
                    wait = self._retry_wait(exc, attempt, retries, url)
                except TimeoutError as exc:
                    raise EndpointTimeout(
                        f"{url} did not answer within {timeout:g} s",
                        hint=f"a busy or slow server: raise {TIMEOUT_ENV} (seconds), or try again later",
                    ) from exc
                except (urllib.error.URLError, ConnectionError, OSError) as exc:
                    reason = getattr(exc, "reason", exc)
                    if isinstance(reason, TimeoutError | socket.timeout):
                        raise EndpointTimeout(
                            f"{url} did not answer within {timeout:g} s",
                            hint=f"raise {TIMEOUT_ENV} (seconds), or try again later",
                        ) from exc
                    if attempt >= retries or not isinstance(reason, ConnectionError):
                        raise EndpointUnreachable(
                            f"cannot reach {self.endpoint.base_url}: {_reason(reason)}",
                            hint="is the server running, and is the URL in the model reference right?"
                            " (`tansaku doctor` checks it)",
                        ) from exc
                    wait = _backoff(attempt)
                attempt += 1
                with self._lock:
                    self.tally.retries += 1
                self._sleep(wait)
        finally:
            with self._lock:
                self.tally.seconds += time.perf_counter() - started

    def _retry_wait(self, exc: urllib.error.HTTPError, attempt: int, retries: int, url: str) -> float:
        """Seconds to wait before retrying ``exc``'s answer, or raise its error."""
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
        if attempt >= retries or (asked is not None and asked > MAX_WAIT_S):
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
        return asked if asked is not None else _backoff(attempt)


def _decode(raw: bytes, url: str) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EndpointBadResponse(f"{url} answered something that is not JSON: {raw[:80]!r}") from exc
    if not isinstance(data, dict):
        raise EndpointBadResponse(f"{url} answered JSON that is not an object")
    return data


def _body(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read().decode("utf-8", "replace")
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
