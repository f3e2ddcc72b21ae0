"""The rows of vectors as the store takes and returns them (store/vectors.py, on both backends),
and the error of an index whose vectors cannot be used.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TansakuError


class VectorsUnavailable(TansakuError):
    code = "VECTORS_UNAVAILABLE"
    exit_code = 3


@dataclass(frozen=True)
class EmbedModelRecord:
    fingerprint: str
    model_path: str
    model_sha256: str
    model_size: int
    model_mtime_ns: int
    prompt_format: str
    dims: int
    window_tokens: int


@dataclass(frozen=True)
class UnusableVectors:
    """A model's vectors with no direction (all zeros, or a NaN or infinite value)."""

    count: int  # among those checked
    checked: int
    total: int


@dataclass(frozen=True)
class CollectionEntries:
    """A collection's chunk windows that have a vector for one model, ordered by document id:
    parallel columns (document id, embedding id, first line, last line)."""

    doc_ids: list[int]
    embedding_ids: list[int]
    start_lines: list[int]
    end_lines: list[int]
