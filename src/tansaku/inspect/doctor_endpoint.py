"""`tansaku doctor`'s check of a role served by an endpoint: reachable, model served, dimensions.

Only a configured endpoint is asked anything, with a short timeout and no retries: doctor says
what is wrong now, it does not wait for a server to recover.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TansakuError
from ..store import db
from .checks import FAIL, OK, WARN, check

if TYPE_CHECKING:
    from ..types import DoctorCheck

DOCTOR_TIMEOUT_S = 5.0


def endpoint_check(ref: Any, config_path: Path, index_path: Path) -> DoctorCheck:
    from ..models.remote.open import client_for, consented

    endpoint = ref.endpoint
    label = f"model.{ref.role}"
    where = f"{endpoint.model!r} at {endpoint.base_url} [{ref.source}]"
    try:
        client = client_for(ref.role, endpoint, config_path, timeout=DOCTOR_TIMEOUT_S, retries=0)
        served = _served_models(client)
        if served is not None and not _is_served(endpoint.model, served):
            shown = ", ".join(sorted(served)[:8]) or "none"
            detail = f"{ref.role}: {endpoint.base_url} does not serve {endpoint.model!r} (it serves: {shown})"
            return check(label, FAIL, detail, f"tansaku models add {ref.role} {endpoint.base_url}#MODEL")
        if ref.role != "embed":
            return check(label, OK, f"{ref.role}: {where} answers")
        dims = _endpoint_dims(client)
    except TansakuError as exc:
        return check(label, FAIL, f"{ref.role}: {where}: {exc.message} [{exc.code}]", exc.hint)
    detail = f"{ref.role}: {where} answers, {dims} dims"
    if not consented(endpoint, config_path):
        detail += "; the first `embed` asks before sending chunk text to this other machine (--yes)"
    stored = _stored_dims(endpoint, index_path)
    if stored is not None and stored != dims:
        return check(
            label, FAIL,
            f"{detail}, but the index's vectors of this model have {stored}: the server's model changed",
            "tansaku embed",
        )  # fmt: skip
    return check(label, OK if endpoint.loopback or consented(endpoint, config_path) else WARN, detail)


def _served_models(client: Any) -> set[str] | None:
    """The ids ``GET /models`` lists; None when the server has no such list (not every one does)."""
    from ..models.remote.client import HttpStatus

    try:
        answer = client.get("/models")
    except HttpStatus:
        return None
    items = answer.get("data")
    if not isinstance(items, list):
        return None
    return {str(item.get("id")) for item in items if isinstance(item, dict) and item.get("id")}


def _is_served(model: str, served: set[str]) -> bool:
    # Ollama lists "name:latest" for a model asked for as "name".
    return model in served or f"{model}:latest" in served


def _endpoint_dims(client: Any) -> int:
    from ..models.remote.embedder import RemoteEmbedder

    return RemoteEmbedder(client, concurrency=1).dims


def _stored_dims(endpoint: Any, index_path: Path) -> int | None:
    if not index_path.exists():
        return None
    try:
        with db.reading(index_path) as conn:
            if not db.has_table(conn, "embed_models"):
                return None
            from ..index.embed import known_remote
            from ..store.vectors import models

            record = known_remote(models(conn), endpoint)
    except TansakuError:
        return None
    return None if record is None else record.dims
