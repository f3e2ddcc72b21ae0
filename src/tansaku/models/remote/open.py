"""A role's remote model from its reference and the ``[models]`` settings; one per process."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ...errors import ConfigInvalid, RemoteConsentNeeded
from .client import Client
from .embedder import RemoteEmbedder
from .endpoint import Endpoint, api_key
from .generator import RemoteGenerator
from .reranker import RemoteReranker

# ``[models] remote_ok``: true (every endpoint), or the origins (scheme://host:port) the person
# agreed to send chunk text to; `embed --yes` adds one.
CONSENT_KEY = "remote_ok"

_OPEN: dict[tuple[str, str], Any] = {}
_OPENING = threading.Lock()


def key_env_setting(role: str) -> str:
    return f"{role}_api_key_env"


def client_for(role: str, endpoint: Endpoint, config_path: Path, **options: Any) -> Client:
    """``options``: the Client's own (timeout, retries), for a caller that must not wait."""
    from ..registry import models_setting

    name = models_setting(config_path, key_env_setting(role))
    if name is not None and not (isinstance(name, str) and name.strip()):
        raise ConfigInvalid(f"[models] {key_env_setting(role)} must name an environment variable")
    return Client(endpoint, api_key(name.strip() if isinstance(name, str) else None), **options)


def remote_model(role: str, endpoint: Endpoint, config_path: Path) -> Any:
    """The role's RemoteEmbedder, RemoteGenerator or RemoteReranker: one per endpoint and model
    per process, so a server's requests share its tally and the routes it has learned."""
    kinds = {"embed": RemoteEmbedder, "generate": RemoteGenerator, "rerank": RemoteReranker}
    key = (role, endpoint.reference)
    with _OPENING:
        if key not in _OPEN:
            _OPEN[key] = kinds[role](client_for(role, endpoint, config_path))
        return _OPEN[key]


def consented(endpoint: Endpoint, config_path: Path) -> bool:
    """Whether chunk text may go to ``endpoint``: its machine is this one, or the person said so."""
    from ..registry import models_setting

    if endpoint.loopback:
        return True
    agreed = models_setting(config_path, CONSENT_KEY)
    return agreed is True or (isinstance(agreed, list) and endpoint.origin in agreed)


def record_consent(endpoint: Endpoint, file: Path) -> None:
    """Add the endpoint's origin to ``[models] remote_ok`` in ``file`` (the person's own record)."""
    from ..registry import _load_toml, _write_toml

    data = _load_toml(file)
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise ConfigInvalid(f"config {file}: [models] must be a table")
    agreed = models.get(CONSENT_KEY)
    if agreed is True:
        return
    origins = [o for o in agreed if isinstance(o, str)] if isinstance(agreed, list) else []
    if endpoint.origin not in origins:
        data["models"] = {**models, CONSENT_KEY: [*origins, endpoint.origin]}
        _write_toml(file, data)


def consent_needed(endpoint: Endpoint, collections: list[str], file: Path) -> RemoteConsentNeeded:
    names = ", ".join(collections) or "every collection"
    return RemoteConsentNeeded(
        f"embed would send the text of every chunk not yet embedded in {names} (transcripts after"
        f" redaction, with each document's title and headings) to {endpoint.origin}, another machine,"
        f" for the model {endpoint.model!r}; later queries send their text there too",
        hint=f"run `tansaku embed --yes` once to agree (recorded as [models] {CONSENT_KEY} in {file}),"
        " or use a local model",
        origin=endpoint.origin,
    )
