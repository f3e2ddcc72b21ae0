"""Which model files are on this machine, role by role, each missing one with the command that
brings it (for the search page's status bar; the server itself never downloads)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ModelFile:
    role: str  # embed, generate, rerank
    present: bool
    reference: str  # hf:OWNER/REPO/FILE or the configured path
    source: str  # env, config, user, default (tansaku.precedence)
    file_name: str  # the local file's name; its folder is the machine's business
    needed_by: str  # what the role makes possible
    fix: str | None  # the command that brings a missing file; None when present


@dataclass(frozen=True)
class ModelFiles:
    models: tuple[ModelFile, ...]


NEEDED_BY = {
    "embed": "vsearch and query's vector list",
    "generate": "query's expansion",
    "rerank": "query's reranking",
}


def fix_command(ref: Any) -> str:
    """The one command that makes ``ref``'s file present: a download for a hub reference, a local
    file for anything else (an air-gapped machine's choice)."""
    return f"tansaku models pull {ref.role}" if ref.hf else f"tansaku models add {ref.role} PATH.gguf"


def model_files(config_path: Path) -> ModelFiles:
    from ..models.registry import resolve_all

    return ModelFiles(
        tuple(
            ModelFile(
                role=ref.role,
                present=ref.present,
                reference=ref.reference,
                source=ref.source,
                file_name=ref.local_path.name,
                needed_by=NEEDED_BY.get(ref.role, ""),
                fix=None if ref.present else fix_command(ref),
            )
            for ref in resolve_all(config_path)
        )
    )
