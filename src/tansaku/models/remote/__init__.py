"""Models on another machine: OpenAI-compatible HTTP endpoints for embed, generate and rerank.

A role's model reference may be ``http(s)://HOST[:PORT]/v1#MODEL`` (the fragment names the
server's model). Stdlib HTTP only, so configuring an endpoint costs no heavy import; nothing here
touches the network until a command uses the role.
"""

from __future__ import annotations

from .endpoint import Endpoint, is_endpoint, parse_endpoint

__all__ = ["Endpoint", "is_endpoint", "parse_endpoint"]
