"""Which models a server says it serves (``GET /models``).

Some servers answer any model name with their default model (llama-cpp-python's does): the
listing is the only way to tell that the name is wrong before vectors of another model are stored.
"""

from __future__ import annotations

from ...errors import EndpointModelMissing
from .client import Client, HttpStatus


def served_models(client: Client) -> set[str] | None:
    """The ids the server lists; None when it has no listing (not every server does)."""
    try:
        answer = client.get("/models")
    except HttpStatus:
        return None
    items = answer.get("data")
    if not isinstance(items, list):
        return None
    return {str(item.get("id")) for item in items if isinstance(item, dict) and item.get("id")}


def is_served(model: str, served: set[str]) -> bool:
    # Ollama lists "name:latest" for a model asked for as "name".
    return model in served or f"{model}:latest" in served


def check_served(client: Client) -> None:
    """EndpointModelMissing when the server lists its models and the endpoint's is not one."""
    endpoint = client.endpoint
    served = served_models(client)
    if served is not None and not is_served(endpoint.model, served):
        shown = ", ".join(sorted(served)[:8]) or "none"
        raise EndpointModelMissing(
            f"{endpoint.base_url} does not serve {endpoint.model!r} (it serves: {shown})",
            hint="name one of these after '#' in the model reference",
            served=sorted(served),
        )
