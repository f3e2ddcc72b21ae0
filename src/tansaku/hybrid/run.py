"""`query` step by step: which lists to retrieve for a query (or a query document), then fusion.

The retrievals themselves are the caller's (``api.Tansaku`` hands them in as ``QuerySteps``), so
this package never imports the facade.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..types import Hit, Notice, SearchResult
from .document import parse_query_document
from .pipeline import Retrieval, fuse_retrievals
from .trust import ORIGINAL_WEIGHT

# `query --all`: every fused document.
UNLIMITED = 1 << 30


@dataclass(frozen=True)
class QuerySteps:
    keyword: Callable[[str], SearchResult]  # keyword search of one text, with the candidate pool
    # Vector search of one text: (results or None when there is nothing to embed, the share of it
    # the embedder cannot read, a notice when vectors cannot be searched at all).
    vector: Callable[[str], tuple[SearchResult | None, float, Notice | None]]
    name_lookup: Callable[[str], bool]
    add_snippets: Callable[[str, Sequence[Hit]], list[Hit]]


def run_query(
    query: str,
    steps: QuerySteps,
    *,
    limit: int | None,
    min_score: float,
    candidate_limit: int,
    explain: bool,
) -> SearchResult:
    started = time.perf_counter()
    document = parse_query_document(query)
    lines = document.lines if document is not None else (("query", query),)
    warnings: list[Notice] = []
    retrievals: list[Retrieval] = []
    seen: dict[str, int] = {}
    vectors_usable = True
    for kind, text in lines:
        seen[kind] = seen.get(kind, 0) + 1
        # The first line of each kind stands for the query; further ones weigh half.
        base = ORIGINAL_WEIGHT if seen[kind] == 1 else ORIGINAL_WEIGHT / 2
        if kind in ("query", "lex"):
            name = "keyword" if kind == "query" else f"lex {seen[kind]}"
            retrievals.append(Retrieval(name, "keyword", steps.keyword(text), base))
        if kind in ("query", "vec", "hyde") and vectors_usable:
            vector, unknown, unavailable = steps.vector(text)
            if unavailable is not None:
                vectors_usable = False  # the same for every line: say it once
                warnings.append(unavailable)
            elif vector is not None:
                name = "vector" if kind == "query" else f"{kind} {seen[kind]}"
                retrievals.append(Retrieval(name, "vector", vector, base, unknown))
    keyword_texts = [text for kind, text in lines if kind in ("query", "lex")]
    notes: tuple[str, ...] = ()
    if document is not None:
        notes = (f"query document: {len(lines)} typed lines, run as given",)
        if document.intent:
            notes += (f"intent (not searched): {document.intent}",)
    fused = fuse_retrievals(
        query,
        retrievals,
        name_lookup=bool(keyword_texts) and steps.name_lookup(keyword_texts[0]),
        limit=limit,
        min_score=min_score,
        candidate_limit=candidate_limit if limit is not None else UNLIMITED,
        explain=explain,
        warnings=warnings,
        notes=notes,
        started=started,
    )
    return replace(fused, hits=tuple(steps.add_snippets(" ".join(keyword_texts), fused.hits)))
