"""Parsing an endpoint reference, and where its API key comes from."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from ...errors import UsageError

SCHEMES = ("http://", "https://")
# The key for every role's endpoint; ``[models] ROLE_api_key_env`` names another variable for one
# role. Keys live in the environment only: a config file is shared, copied and committed.
KEY_ENV = "TANSAKU_API_KEY"
FORMAT_HINT = "use http(s)://HOST[:PORT]/v1#MODEL (the fragment names the server's model)"


def is_endpoint(reference: str) -> bool:
    return reference.strip().lower().startswith(SCHEMES)


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible API (``base_url`` ends where ``/embeddings`` etc. are appended) and
    the model it is asked for."""

    base_url: str
    model: str

    @property
    def reference(self) -> str:
        return f"{self.base_url}#{self.model}"

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).hostname or ""

    @property
    def origin(self) -> str:
        """scheme://host:port: what privacy consent is given to."""
        parts = urlsplit(self.base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"{parts.scheme}://{parts.hostname}:{port}"

    @property
    def loopback(self) -> bool:
        """Whether the server is this machine: text sent there never leaves it."""
        host = self.host
        if host == "localhost" or host.endswith(".localhost"):
            return True
        import ipaddress

        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def identity(self, dims: int) -> str:
        """What a vector from this endpoint depends on: the served model's name and its
        dimensions (a hex digest, in the place of a model file's SHA-256). Not the host: the
        same model moved to another server gives the same vectors."""
        return hashlib.sha256(f"openai-endpoint\n{self.model}\n{dims}".encode()).hexdigest()

    def generation_identity(self) -> str:
        """The cache key of expansions and rerank scores from this endpoint's model."""
        return hashlib.sha256(f"openai-endpoint\n{self.model}".encode()).hexdigest()


def parse_endpoint(reference: str) -> Endpoint:
    """``http(s)://HOST[:PORT]/PATH#MODEL`` as an Endpoint; UsageError naming what is wrong."""
    text = reference.strip()
    if not is_endpoint(text):
        raise UsageError(f"{reference!r} is not an endpoint URL", hint=FORMAT_HINT)
    url, _, model = text.partition("#")
    model = model.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here, not at the first request
    except ValueError as exc:
        raise UsageError(f"bad endpoint URL {reference!r}: {exc}", hint=FORMAT_HINT) from exc
    if not parts.hostname:
        raise UsageError(f"endpoint URL {reference!r} has no host", hint=FORMAT_HINT)
    if parts.username or parts.password or parts.query:
        raise UsageError(
            f"endpoint URL {_redacted(url)!r} carries credentials or a query string",
            hint=f"give the key in {KEY_ENV} (or the variable [models] ROLE_api_key_env names),"
            " never in the URL",
        )
    if not model:
        raise UsageError(f"endpoint URL {reference!r} names no model", hint=FORMAT_HINT)
    return Endpoint(url.rstrip("/"), model)


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{parts.path}"


def api_key(key_env: str | None) -> str | None:
    """The key from the role's own variable when the config names one, else ``TANSAKU_API_KEY``."""
    for name in (key_env, KEY_ENV):
        if name:
            value = os.environ.get(name, "").strip()
            if value:
                return value
    return None
