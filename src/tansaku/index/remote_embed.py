"""`embed` through an endpoint: consent first, one probe, then the usual run, and the tally.

The probe (one word) learns the model's dimensions, which are part of the vectors' identity, and
fails fast (unreachable, refused, wrong model) before anything is written to the index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..models.prompts import PromptFormat
from ..models.registry import ModelRef, user_models_path
from ..models.remote.client import Tally
from ..models.remote.open import consent_needed, consented, record_consent, remote_model
from ..store.backend import Backend
from ..types import Collection, EmbedReport
from .embed import embed_collections, remote_identity
from .progress import Progress


def embed_remote(
    index: Path | Backend,
    config_path: Path,
    ref: ModelRef,
    collections: Sequence[Collection],
    prompt: PromptFormat,
    *,
    force: bool = False,
    progress: Callable[[str], Progress | None] | None = None,
    consent: bool = False,
) -> EmbedReport:
    endpoint = ref.endpoint
    assert endpoint is not None
    if not consented(endpoint, config_path):
        # Recorded where the endpoint was chosen, so the agreement goes with the choice.
        file = ref.set_in or user_models_path(config_path)
        if not consent:
            raise consent_needed(endpoint, [c.name for c in collections], file)
        record_consent(endpoint, file)
    embedder = remote_model("embed", endpoint, config_path)
    before = Tally(**asdict(embedder.client.tally))
    identity = remote_identity(endpoint, embedder.probe(), prompt)
    report = embed_collections(
        index,
        collections,
        identity.path,
        prompt,
        lambda: embedder,
        force=force,
        progress=progress,
        identity=identity,
    )
    report.remote = _spent(endpoint, before, embedder.client.tally)
    return report


def _spent(endpoint: Any, before: Tally, after: Tally) -> dict[str, Any]:
    tokens = None
    if after.prompt_tokens is not None:
        tokens = after.prompt_tokens - (before.prompt_tokens or 0)
    return {
        "endpoint": endpoint.base_url,
        "model": endpoint.model,
        "loopback": endpoint.loopback,
        "requests": after.requests - before.requests,
        "retries": after.retries - before.retries,
        "texts": after.texts - before.texts,
        "bytes_sent": after.bytes_sent - before.bytes_sent,
        "prompt_tokens": tokens,
        "seconds": round(after.seconds - before.seconds, 3),
    }
