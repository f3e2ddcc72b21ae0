"""Context packs (`query --pack`): a query's best passages, whole, in an item and byte budget.

What an agent pastes into its context: each passage with the citation that lets it be checked
(`tansaku get PATH:START`). Everything but ``stored_passages`` is pure, so the choice of passages,
their merging and the budget are testable without an index:

1. **Passages.** A lookup turns each result into passages (the index's lookup gives the stored
   chunk around the result's best lines; see ``stored_passages``).
2. **Merge.** A document's passages that overlap or touch become one, so the pack never carries
   the same lines twice and a reader gets one continuous span instead of two halves.
3. **Budget.** Greedy by score: each item goes in whole if it still fits both budgets, else it is
   left out whole and counted. An item is never cut: half a passage, cited as the whole, would
   mislead, and the caller can always ask for more bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..types import Hit, SearchResult

if TYPE_CHECKING:
    from ..types import Collection, ContextPack, PackItem


@dataclass(frozen=True)
class Passage:
    """Consecutive lines of one document, numbered as in the source file."""

    start_line: int  # 1-based line number of lines[0]
    lines: tuple[str, ...]
    heading_path: tuple[str, ...] = ()

    @property
    def end_line(self) -> int:
        return self.start_line + len(self.lines) - 1


class LineSpan(Protocol):
    """A stored chunk as far as passage choice cares (``store.chunks.StoredChunk`` is one)."""

    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def heading_path(self) -> tuple[str, ...]: ...


PassageLookup = Callable[[Hit], Sequence[Passage]]


def candidate_count(max_items: int) -> int:
    """How many `query` results a pack chooses from: more than it can hold, so that items too big
    for the byte budget leave room for smaller ones further down."""
    return max(20, 3 * max_items)


def best_range(hit: Hit) -> tuple[int, int]:
    """The lines that made the hit: the matching chunk for a vector hit, else its snippet."""
    if hit.chunk_lines is not None:
        return hit.chunk_lines
    start = hit.snippet.start_line
    return start, start + max(len(hit.snippet.lines), 1) - 1


def chunk_around(chunks: Sequence[LineSpan], first: int, last: int) -> LineSpan | None:
    """The chunk that contains line ``first`` and most of ``first..last``; earliest on a tie.

    Chunks overlap (by about 15%), so a line can be in two: the one holding more of the range
    shows more of what matched. None when no chunk holds ``first``.
    """
    holding = [c for c in chunks if c.start_line <= first <= c.end_line]
    if not holding:
        return None
    return max(holding, key=lambda c: (min(c.end_line, last) - first, -c.start_line))


def snippet_passage(hit: Hit) -> Passage:
    return Passage(hit.snippet.start_line, tuple(hit.snippet.lines))


def passages_for(hit: Hit, chunks: Sequence[LineSpan], lines: Sequence[str]) -> list[Passage]:
    """The stored chunk around the hit's best range, as a passage of the document's ``lines``;
    the snippet when there are no chunks (not stored yet) or none holds the range."""
    first, last = best_range(hit)
    chunk = chunk_around(chunks, first, last)
    if chunk is None or chunk.end_line > len(lines):
        return [snippet_passage(hit)]
    text = tuple(lines[chunk.start_line - 1 : chunk.end_line])
    return [Passage(chunk.start_line, text, tuple(chunk.heading_path))]


def merge_passages(passages: Sequence[Passage]) -> list[Passage]:
    """One passage per run of overlapping or adjacent passages, in line order.

    A merged passage keeps the heading path of its first line: that is where a reader who follows
    the citation starts reading.
    """
    merged: list[Passage] = []
    for passage in sorted((p for p in passages if p.lines), key=lambda p: (p.start_line, -len(p.lines))):
        if merged and passage.start_line <= merged[-1].end_line + 1:
            last = merged[-1]
            if passage.end_line > last.end_line:
                extra = passage.lines[last.end_line - passage.start_line + 1 :]
                merged[-1] = Passage(last.start_line, last.lines + extra, last.heading_path)
        else:
            merged.append(passage)
    return merged


def item_bytes(item: PackItem) -> int:
    return len(item.text.encode("utf-8"))


def fit_budget(items: Sequence[PackItem], max_items: int, max_bytes: int) -> tuple[list[PackItem], int]:
    """Greedy in the given order: (the items taken, how many were left out).

    An item too big for the bytes left is skipped, not cut, and a later smaller one may still go
    in: an agent is better served by the next passage that fits than by nothing.
    """
    taken: list[PackItem] = []
    room = max_bytes
    for item in items:
        size = item_bytes(item)
        if len(taken) < max_items and size <= room:
            taken.append(item)
            room -= size
    return taken, len(items) - len(taken)


def build_pack(
    result: SearchResult, passages: PassageLookup, *, max_items: int, max_bytes: int
) -> ContextPack:
    """The pack of ``result``'s hits (best first), each hit's passages given by ``passages``."""
    from ..types import ContextPack

    # A document listed twice (or whose lookup gives several passages) is one document: its
    # passages are merged together and its best score counts.
    documents: dict[str, tuple[Hit, float, list[Passage]]] = {}
    for hit in result.hits:
        found = list(passages(hit))
        if hit.virtual_path in documents:
            first, score, known = documents[hit.virtual_path]
            documents[hit.virtual_path] = (first, max(score, hit.score), known + found)
        else:
            documents[hit.virtual_path] = (hit, hit.score, found)
    ranked: list[tuple[float, int, int, PackItem]] = []
    for order, (hit, score, found) in enumerate(documents.values()):
        for passage in merge_passages(found):
            ranked.append((-score, order, passage.start_line, _item(hit, score, passage)))
    # Score first; equal scores keep the query's order, then a document's passages in line order.
    ranked.sort(key=lambda entry: entry[:3])
    taken, omitted = fit_budget([entry[3] for entry in ranked], max_items, max_bytes)
    return ContextPack(
        query=result.query,
        items=tuple(taken),
        bytes_used=sum(item_bytes(item) for item in taken),
        max_bytes=max_bytes,
        max_items=max_items,
        omitted=omitted,
        warnings=result.warnings,
        used=result.used,
    )


def _item(hit: Hit, score: float, passage: Passage) -> PackItem:
    from ..types import PackItem

    return PackItem(
        docid=hit.docid,
        score=score,
        collection=hit.collection,
        path=hit.path,
        virtual_path=hit.virtual_path,
        disk_path=hit.disk_path,
        title=hit.title,
        contexts=hit.contexts,
        start_line=passage.start_line,
        end_line=passage.end_line,
        heading_path=passage.heading_path,
        text="\n".join(passage.lines),
        stale=hit.stale,
    )


def stored_passages(conn: Any, collections: Mapping[str, Collection]) -> PassageLookup:
    """The index's passage lookup: the chunks stored for the document's text with its
    collection's current chunking parameters (what `tansaku chunks` shows)."""
    from ..index.chunks import params_for
    from ..search.snippets import split_lines
    from ..store.backend import chunks as chunk_store
    from ..store.backend import documents as store

    def lookup(hit: Hit) -> list[Passage]:
        doc = store.document_at(conn, hit.collection, hit.path)
        collection = collections.get(hit.collection)
        if doc is None or collection is None:
            return [snippet_passage(hit)]
        stored = chunk_store.chunks_of(conn, doc.hash, params_for(collection).fingerprint())
        if stored is None or not stored[1]:
            return [snippet_passage(hit)]
        return passages_for(hit, stored[1], split_lines(store.body(conn, doc.hash)))

    return lookup
