"""The passage a reranker reads for each candidate: its best chunk, cut to about 256 tokens.

A reranker judges (query, text) pairs, and its cost grows with the text: a whole document is too
slow and dilutes the match, its first lines often miss it. So each candidate gives one passage:
the stored chunk with the most query terms (intent words count less, since they steer rather
than search; a vector hit's own chunk wins ties), then the lines around that chunk's best line,
led by the document title and heading path so the passage says what it is part of.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..types import Hit

if TYPE_CHECKING:
    from ..types import Collection

# About 256 tokens: latin text runs ~4 characters per token, CJK text ~1.
PASSAGE_TOKENS = 256
# An intent word found in a chunk counts this much against a query term.
INTENT_WEIGHT = 0.3


def estimated_tokens(text: str) -> int:
    wide = sum(1 for ch in text if ord(ch) >= 0x2E80)
    return wide + (len(text) - wide + 3) // 4


def window(lines: Sequence[str], best: int, max_tokens: int = PASSAGE_TOKENS) -> tuple[int, int]:
    """[first, last) of the lines around ``best``: one line of lead-in, then onwards while the
    estimate allows (a single over-long line is cut by the caller)."""
    first = max(0, best - 1)
    used = 0
    last = first
    while last < len(lines):
        cost = estimated_tokens(lines[last]) + 1
        if used + cost > max_tokens and last > best:
            break
        used += cost
        last += 1
        if used >= max_tokens:
            break
    return first, last


def cut_to_tokens(text: str, max_tokens: int) -> str:
    """``text`` shortened at a character boundary to about ``max_tokens`` estimated tokens."""
    if estimated_tokens(text) <= max_tokens:
        return text
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if estimated_tokens(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def choose_passage(
    lines: Sequence[str],
    chunks: Sequence[tuple[int, int, tuple[str, ...]]],
    score: Callable[[str], float],
    *,
    prefer: tuple[int, int] | None = None,
    max_tokens: int = PASSAGE_TOKENS,
    chunk_score: Callable[[str], float] | None = None,
) -> tuple[int, int, tuple[str, ...]]:
    """(first line, last line, heading path), 1-based and inclusive, of the passage to rerank.

    ``chunks`` are (start line, end line, heading path); none (a document not chunked yet) means
    the whole document is one. ``prefer`` is the chunk a vector hit matched. ``chunk_score``
    ranks the chunks (default ``score``): a cheaper count serves, as only the best line inside
    the chosen chunk needs the exact one.
    """
    spans = list(chunks) or [(1, max(len(lines), 1), ())]
    rank_text = chunk_score or score

    def rank(span: tuple[int, int, tuple[str, ...]]) -> tuple[float, bool, int]:
        text = "\n".join(lines[span[0] - 1 : span[1]])
        return (rank_text(text), prefer is not None and span[:2] == prefer, -span[0])

    start, end, headings = max(spans, key=rank)
    inner = lines[start - 1 : end]
    best = max(range(len(inner)), key=lambda i: (score(inner[i]), -i)) if inner else 0
    first, last = window(inner, best, max_tokens)
    return start + first, start + max(last, first + 1) - 1, headings


def presence_scorer(terms: Sequence[str], intent_words: Sequence[str]) -> Callable[[str], float]:
    """How many of ``terms`` a text contains, each word as a substring of the casefolded text
    (intent words at ``INTENT_WEIGHT``): an upper bound of the exact count, at a fraction of its
    cost on long chunks (a python-docs query's 40 candidates: 0.6 s exact)."""
    wanted = [tuple(term.casefold().rstrip("*").split()) for term in terms if term.strip()]
    steer = [word.casefold() for word in intent_words if word.strip()]

    def score(text: str) -> float:
        folded = text.casefold()
        found = sum(1 for words in wanted if all(word in folded for word in words))
        return found + INTENT_WEIGHT * sum(1 for word in steer if word in folded)

    return score


def passage_scorer(terms: Sequence[str], intent_words: Sequence[str]) -> Callable[[str], float]:
    from ..search.snippets import term_matcher

    query = term_matcher(terms)
    intent = term_matcher(intent_words) if intent_words else None
    if intent is None:
        return lambda text: float(query(text))
    return lambda text: query(text) + INTENT_WEIGHT * intent(text)


def rerank_passages(
    conn: Any,
    collections: Mapping[str, Collection],
    hits: Sequence[Hit],
    terms: Sequence[str],
    intent_words: Sequence[str] = (),
    max_tokens: int = PASSAGE_TOKENS,
) -> list[str]:
    """One passage per hit, in order, from the index (the snippet when the document is gone)."""
    from ..index.chunks import params_for
    from ..search.snippets import split_lines
    from ..store.backend import chunks as chunk_store
    from ..store.backend import documents as store

    score = passage_scorer(terms, intent_words)
    chunk_score = presence_scorer(terms, intent_words)
    docs = {(h.collection, h.path): store.document_at(conn, h.collection, h.path) for h in hits}
    bodies = store.bodies(conn, [doc.hash for doc in docs.values() if doc is not None])
    passages = []
    for hit in hits:
        doc = docs.get((hit.collection, hit.path))
        collection = collections.get(hit.collection)
        if doc is None or collection is None or doc.hash not in bodies:
            text, headings = "\n".join(hit.snippet.lines), ()
        else:
            lines = split_lines(bodies[doc.hash])
            stored = chunk_store.chunks_of(conn, doc.hash, params_for(collection).fingerprint())
            spans = [(c.start_line, c.end_line, tuple(c.heading_path)) for c in (stored[1] if stored else ())]
            first, last, headings = choose_passage(
                lines, spans, score, prefer=hit.chunk_lines, max_tokens=max_tokens, chunk_score=chunk_score
            )
            text = "\n".join(lines[first - 1 : last])
        lead = " > ".join(part for part in (hit.title, *headings) if part)
        passages.append(cut_to_tokens(f"{lead}\n{text}" if lead else text, max_tokens + 32))
    return passages
