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
    from ..errors import EndpointModelMissing
    from ..models.remote.open import client_for, consented
    from ..models.remote.served import check_served

    endpoint = ref.endpoint
    label = f"model.{ref.role}"
    where = f"{endpoint.model!r} at {endpoint.base_url} [{ref.source}]"
    try:
        client = client_for(ref.role, endpoint, config_path, timeout=DOCTOR_TIMEOUT_S, retries=0)
        try:
            check_served(client)
        except EndpointModelMissing as exc:
            fix = f"tansaku models add {ref.role} {endpoint.base_url}#MODEL"
            return check(label, FAIL, f"{ref.role}: {exc.message}", fix)
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
