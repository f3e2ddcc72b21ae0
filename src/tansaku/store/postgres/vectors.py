"""Vectors on PostgreSQL: not stored yet (docs/backends.md); what `update` asks of them."""

from __future__ import annotations

from typing import Any


def prune_if_present(conn: Any, *, keep_unlinked: bool = False) -> int:
    """Nothing to prune: this backend has no vectors yet (embed refuses a PostgreSQL index)."""
    return 0
