"""`tansaku doctor`'s check of a role served by an endpoint: reachable, model served, dimensions.

Only a configured endpoint is asked anything, with a short timeout and no retries: doctor says
what is wrong now, it does not wait for a server to recover.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TansakuError
from ..store.backend import db
from .checks import FAIL, OK, WARN, check

if TYPE_CHECKING:
    from ..types import DoctorCheck

DOCTOR_TIMEOUT_S = 5.0


def endpoint_check(ref: Any, config_path: Path, index: Any) -> DoctorCheck:
    """``index``: the store.backend Backend whose vectors of the endpoint's model are compared."""
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
    held = _held_dims(endpoint, index)
    if held and dims not in held:
        shown = " or ".join(str(d) for d in held)
        return check(
            label, FAIL,
            f"{detail}, but the index's vectors of this model have {shown}: the server's model changed",
            "tansaku embed",
        )  # fmt: skip
    return check(label, OK if endpoint.loopback or consented(endpoint, config_path) else WARN, detail)


def _endpoint_dims(client: Any) -> int:
    from ..models.remote.embedder import RemoteEmbedder

    return RemoteEmbedder(client, concurrency=1).dims


def _held_dims(endpoint: Any, index: Any) -> list[int]:
    """The dimensions at which the index holds vectors of the endpoint's model (none: not embedded)."""
    try:
        if not index.exists():
            return []
        with index.reading() as conn:
            if not db.has_table(conn, "embed_models"):
                return []
            from ..index.embed import remote_records
            from ..store.backend import vectors

            return sorted({record.dims for record in remote_records(vectors.models(conn), endpoint)})
    except TansakuError:
        return []
