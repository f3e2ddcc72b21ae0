"""The chunking data types. Re-exported by ``tansaku.chunking``; defined here to avoid cycles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tansaku.errors import UsageError

# Bump whenever the chunks produced for the same input and parameters can change: stored chunks
# carry ``ChunkParams.fingerprint()`` so the index knows when to re-chunk.
# v2: reStructuredText titles are headings (and "~~~~" under a title no longer opens a fence).
CHUNKER_VERSION: int = 2

STRATEGIES = ("regex", "auto")


@dataclass(frozen=True)
class ChunkParams:
    max_tokens: int = 900
    overlap_tokens: int = 135  # 15%
    window_tokens: int = 200  # look-back window for choosing a cut
    strategy: str = "regex"  # "regex" | "auto"

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise UsageError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if not 0 <= self.overlap_tokens < self.max_tokens:
            raise UsageError(
                f"overlap_tokens must be between 0 and max_tokens - 1, got {self.overlap_tokens}"
            )
        if not 1 <= self.window_tokens <= self.max_tokens:
            raise UsageError(f"window_tokens must be between 1 and max_tokens, got {self.window_tokens}")
        if self.strategy not in STRATEGIES:
            raise UsageError(f"strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")

    def fingerprint(self) -> str:
        return (
            f"v{CHUNKER_VERSION}:{self.max_tokens}:{self.overlap_tokens}:{self.window_tokens}:{self.strategy}"
        )


@dataclass(frozen=True)
class Chunk:
    seq: int  # 0-based
    start_line: int  # 1-based, inclusive; lines are split on "\n" only
    end_line: int
    start_char: int  # str offsets, end exclusive: text[start_char:end_char] == chunk.text
    end_char: int
    start_byte: int  # UTF-8 byte offsets of the same span
    end_byte: int
    tokens: int
    heading_path: tuple[str, ...]  # Markdown headings, or enclosing code definitions, at the start
    text: str
    oversized: bool = False  # holds a piece of one line longer than max_tokens with nowhere to break


class Heading(NamedTuple):
    """A heading as the chunker sees it: the same titles, levels and order as the heading paths."""

    line: int  # 1-based line where it starts (for an overlined reST title, its overline)
    level: int  # 1 = outermost; in reST, the order in which the adornment style first appears
    title: str


@dataclass(frozen=True)
class ChunkingResult:
    chunks: tuple[Chunk, ...]
    strategy_used: str  # "regex" or "ast:<language>"
    warnings: tuple[str, ...]
