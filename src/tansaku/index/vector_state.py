"""What a collection's vector side holds at a given moment, in one word and one sentence.

`embed` gives chunks quick vectors first (minutes), then full ones (hours), and may be stopped
between: a user (or an agent) needs to know which of the four states a collection is in to know
what `vsearch` and `query` can find. `status` and `embed` say it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

NONE, QUICK, PARTIAL, FULL = "none", "quick", "partial", "full"


@dataclass(frozen=True)
class VectorState:
    """``chunks``: the collection's chunks; ``full``: those with their full vectors; ``quick``:
    those searched by a quick vector until their full one (the rest have no vector)."""

    chunks: int
    full: int
    quick: int

    @property
    def name(self) -> str:
        if self.chunks <= 0 or (self.full <= 0 and self.quick <= 0):
            return NONE
        if self.full >= self.chunks:
            return FULL
        if self.full <= 0 and self.quick >= self.chunks:
            return QUICK
        return PARTIAL

    @property
    def without(self) -> int:
        return max(0, self.chunks - self.full - self.quick)

    def describe(self, collection: str, quick_tokens: int) -> str:
        """One sentence: what vector search reads of this collection now, and what would add to it."""
        more = f"`tansaku embed -c {collection}`"
        name = self.name
        if self.chunks <= 0:
            return "none: no chunks yet"
        if name == NONE:
            return f"none: vector search and query's vector side skip it until {more}"
        if name == FULL:
            return f"full: all {self.chunks} chunks have their full vectors"
        if name == QUICK:
            return (
                f"quick: all {self.chunks} chunks have a quick vector ({quick_tokens} tokens: title,"
                f" headings and the first words of each paragraph); {more} computes the full ones"
            )
        parts = [f"{self.full} of {self.chunks} chunks have full vectors"]
        if self.quick:
            parts.append(f"{self.quick} a quick one")
        if self.without:
            parts.append(f"{self.without} none")
        return f"partial: {', '.join(parts)}; {more} continues"
