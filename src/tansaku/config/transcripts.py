"""Transcript collections in the config: their types, default folders and masks."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import PathNotFound, UsageError
from ..types import Collection
from .masks import expand_masks, validate_collection_name

TRANSCRIPT_TYPES = ("claude", "codex")
# Codex keeps live sessions in sessions/ and moved ones in archived_sessions/, both under ~/.codex
# (beside history.jsonl and session_index.jsonl, which are not sessions).
DEFAULT_ROOTS = {"claude": "~/.claude/projects", "codex": "~/.codex"}
CODEX_SESSION_FOLDERS = ("sessions", "archived_sessions")


def default_masks(collection_type: str, root: str) -> tuple[str, ...]:
    """``**/*.jsonl``; for a folder holding Codex's session folders, only those."""
    if collection_type == "codex" and any(
        os.path.isdir(os.path.join(root, sub)) for sub in CODEX_SESSION_FOLDERS
    ):
        return tuple(f"{sub}/**/*.jsonl" for sub in CODEX_SESSION_FOLDERS)
    return ("**/*.jsonl",)


def transcript_collection(
    collection_type: str,
    path: str | None,
    *,
    cwd: str,
    name: str | None = None,
    masks: Sequence[str] = (),
    ignore: Sequence[str] = (),
    redact: bool = True,
) -> Collection:
    """The collection `collection add --type claude|codex [PATH]` registers (named after the type
    unless --name says otherwise)."""
    if collection_type not in TRANSCRIPT_TYPES:
        raise UsageError(f"not a transcript type: {collection_type!r}", hint="use claude or codex")
    given = path if path is not None else DEFAULT_ROOTS[collection_type]
    root = Path(cwd, given).expanduser() if not given.startswith("~") else Path(given).expanduser()
    if not root.is_dir():
        raise PathNotFound(
            f"folder {given!r} does not exist" if not root.exists() else f"{given!r} is not a folder",
            hint=f"give the folder of the {collection_type} sessions as PATH",
        )
    real = os.path.realpath(root)
    return Collection(
        name=validate_collection_name(name if name is not None else collection_type),
        path=real,
        masks=expand_masks(masks) if masks else default_masks(collection_type, real),
        ignore=expand_masks(ignore) if ignore else (),
        type=collection_type,
        redact=redact,
    )
