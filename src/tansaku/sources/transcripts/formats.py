"""The adapter for each transcript collection type."""

from __future__ import annotations

from collections.abc import Callable

from . import claude, codex
from .model import ParseReport

Parser = Callable[..., ParseReport]


def parser_for(collection_type: str) -> Parser:
    """``claude.parse`` or ``codex.parse``: (data, path, start_offset=, start_line=, state=)."""
    if collection_type == "claude":
        return claude.parse
    if collection_type == "codex":
        return codex.parse
    raise ValueError(f"not a transcript collection type: {collection_type!r}")


def provisional_session_id(collection_type: str, rel_path: str) -> str:
    """The session id a file's name promises (what a move is recognised by before parsing)."""
    if collection_type == "codex":
        return codex.session_id_from_path(rel_path)
    return claude.parse(b"", rel_path).session.id
