"""`query`: keyword and vector results for one query, fused into one ranking.

This module takes the two ranked lists as already retrieved (``api.Tansaku.query`` runs them), so
the fusion is testable without an index or a model. Query expansion and reranking (issue 10's
later steps) will add lists and a final pass here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..types import Hit, HitExplanation, ListRank, ListWeight, Notice, QueryExplanation, SearchResult
from .fusion import CANDIDATE_LIMIT, FULL_WEIGHT, TOP_BONUS, Fused, K, RankedList, fuse
from .trust import (
    ORIGINAL_WEIGHT,
    SURE_KEYWORD_GAP,
    keyword_confidence,
    keyword_weight,
    vector_peak,
    vector_weight,
)


@dataclass(frozen=True)
class Retrieval:
    """One ranked list to fuse: what found it, and how much it weighs before trust."""

    name: str  # "keyword", "vector"; in a query document "lex 1", "vec 2", "hyde 1"
    kind: str  # "keyword" or "vector"
    result: SearchResult
    base_weight: float = ORIGINAL_WEIGHT
    unreadable_share: float = 0.0  # vector lists: the share of the text the embedder cannot read


def hybrid_query(
    query: str,
    keyword: SearchResult,
    vector: SearchResult | None,
    *,
    unreadable_share: float = 0.0,
    **options: Any,
) -> SearchResult:
    """Fuse ``keyword`` and ``vector`` (None: vectors unavailable, said in ``warnings``)."""
    retrievals = [Retrieval("keyword", "keyword", keyword)]
    if vector is not None:
        retrievals.append(Retrieval("vector", "vector", vector, unreadable_share=unreadable_share))
    return fuse_retrievals(query, retrievals, **options)


def fuse_retrievals(
    query: str,
    retrievals: Sequence[Retrieval],
    *,
    name_lookup: bool = False,
    typed_lines: bool = False,
    limit: int | None = 5,
    min_score: float = 0.0,
    candidate_limit: int = CANDIDATE_LIMIT,
    explain: bool = False,
    warnings: Sequence[Notice] = (),
    notes: Sequence[str] = (),
    started: float | None = None,
) -> SearchResult:
    """Fuse the lists, each weighed by its base weight and by how far it can be trusted.

    Scores are the fused RRF sums scaled to 0..1 by the most a document could get (first in every
    list that counted, with the top bonus), so a score of 1 means "first everywhere".
    ``typed_lines``: the lists come from a query document, whose lines the user wrote; an added
    keyword line is then not weighed by how many of the query's words it keeps.
    """
    started = time.perf_counter() if started is None else started
    query_keyword = next((r for r in retrievals if r.kind == "keyword"), None)
    first_defines = query_keyword is not None and _first_defines(query_keyword.result)
    lists = _weighed_lists(query, retrievals, name_lookup, typed_lines, first_defines)
    fused = fuse(lists, limit=None)
    lead: list[str] = []
    if name_lookup and first_defines and query_keyword is not None:
        fused, lead = _definitions_first(fused, query_keyword.result)
    counted = [ranked.name for ranked in lists if ranked.weight > 0 and ranked.keys]
    best_possible = sum(r.weight / (K + 1) for r in lists if r.name in counted) + (
        TOP_BONUS if counted else 0.0
    )
    ranked_hits = _scored(fused[:candidate_limit], retrievals, best_possible, min_score)
    shown = ranked_hits if limit is None else ranked_hits[:limit]
    explanation = None
    if explain:
        explanation = _explanation(lists, shown, notes, best_possible, lead)
    return SearchResult(
        query=query,
        mode="query",
        hits=tuple(hit for _, hit in shown),
        total=len(ranked_hits),
        limit=limit,
        warnings=tuple(_query_notices(retrievals, warnings)),
        took_ms=(time.perf_counter() - started) * 1000,
        collections=retrievals[0].result.collections if retrievals else (),
        total_exact=not any(r.result.total > len(r.result.hits) for r in retrievals),
        used=_used({r.name: r.kind for r in retrievals}, counted),
        explain=explanation,
        pinned=min(len(lead), len(shown)),
    )


def _weighed_lists(
    query: str,
    retrievals: Sequence[Retrieval],
    name_lookup: bool,
    typed_lines: bool,
    first_defines: bool,
) -> list[RankedList]:
    """Each retrieval as a ranked list with its weight and the reason for it (what `--explain`
    shows): the query's own lists by trust, added lines by their share of the query."""
    query_keyword = next((r for r in retrievals if r.kind == "keyword"), None)
    keyword_sure = first_defines or (
        query_keyword is not None
        and keyword_confidence([hit.score for hit in query_keyword.result.hits]) >= SURE_KEYWORD_GAP
    )
    lists = []
    original_weights: dict[str, float] = {}
    for retrieval in retrievals:
        result = retrieval.result
        scale = retrieval.base_weight / ORIGINAL_WEIGHT
        if retrieval.kind == "keyword":
            top = result.hits[0] if result.hits else None
            coverage = top.matched_terms / top.total_terms if top is not None and top.total_terms else 1.0
            weight, reason = keyword_weight(coverage)
        else:
            weight, reason = vector_weight(
                retrieval.unreadable_share,
                name_lookup=name_lookup,
                keyword_sure=keyword_sure,
                sure_reason=" (its first result defines the name)" if first_defines else "",
                peak=vector_peak([hit.score for hit in result.hits]),
            )
        if scale != 1.0:
            ceiling = original_weights.get(retrieval.kind)
            weight, reason = _added_line_weight(query, retrieval, weight, reason, scale, ceiling, typed_lines)
        else:
            original_weights.setdefault(retrieval.kind, weight)
        lists.append(_ranked(retrieval.name, result, weight * scale, reason))
    return lists


def _added_line_weight(
    query: str,
    retrieval: Retrieval,
    weight: float,
    reason: str,
    scale: float,
    ceiling: float | None,
    typed_lines: bool,
) -> tuple[float, str]:
    """The weight of an added line (an expansion, or a further typed line of a query document)."""
    added = f"an added line (an expansion, or a further typed line: x{scale:g})"
    reason = reason.replace("original query", added, 1)
    # An added line never counts for more than its share of the query's own list of its kind: a
    # line that matches all of its own words ("apt 卸载 命令" for "apt 下载 限速") would otherwise
    # outweigh a query whose best match lacks one of them.
    if ceiling is not None and weight > ceiling:
        weight = ceiling
        reason += f"; capped at the query's own {retrieval.kind} list"
    if retrieval.kind == "keyword" and not typed_lines:
        # A keyword variant weighs by the share of the query's words it keeps; under half, it is
        # another search, and one that adds only asking words is the query again. Both were
        # measured with Gemma 270M's lines (query-expanded, 14 sets): only zh-docs moved, apt 源
        # 配置 3 -> 2 and 怎么更改系统默认的文本编辑器 6 -> 4.
        kept = _kept_share(query, retrieval.result.query)
        if kept < 1.0:
            weight *= kept
            reason += f"; it keeps {kept:.0%} of the query's terms"
        if kept < 0.5:
            weight = 0.0
            reason += " (under half: left out)"
        if _adds_nothing(query, retrieval.result.query):
            weight = 0.0
            reason += "; it adds no word the query lacks (left out)"
    return weight, reason


def _scored(
    fused: Sequence[Fused], retrievals: Sequence[Retrieval], best_possible: float, min_score: float
) -> list[tuple[Fused, Hit]]:
    """The fused candidates at or above ``min_score``, each with its hit scored 0..1. A document's
    passage comes from the list that ranked it best (keyword first on a tie), so the snippet shows
    why it was found."""
    kinds = {r.name: r.kind for r in retrievals}
    by_list = {r.name: {hit.virtual_path: hit for hit in r.result.hits} for r in retrievals}
    ranked_hits = []
    for f in fused:
        best = min(f.contributions, key=lambda c: (c.rank, kinds[c.list_name] != "keyword"))
        score = min(1.0, f.score / best_possible) if best_possible else 0.0
        if score >= min_score:
            ranked_hits.append((f, replace(by_list[best.list_name][f.key], score=score)))
    return ranked_hits


def _used(kinds: dict[str, str], counted: Sequence[str]) -> str:
    used_kinds = {kinds[name] for name in counted}
    if used_kinds == {"keyword", "vector"}:
        return "keyword+vector"
    return "vector" if used_kinds == {"vector"} else "keyword"


def _query_notices(retrievals: Sequence[Retrieval], warnings: Sequence[Notice]) -> list[Notice]:
    """The warnings, then the lists' own: what the user typed may be partly absent (PARTIAL_MATCH),
    but that an added line is says nothing to them."""
    return _unique(
        [
            *warnings,
            *(
                w
                for r in retrievals
                for w in r.result.warnings
                if r.base_weight == ORIGINAL_WEIGHT or w.code != "PARTIAL_MATCH"
            ),
        ]
    )


def _explanation(
    lists: Sequence[RankedList],
    shown: Sequence[tuple[Fused, Hit]],
    notes: Sequence[str],
    best_possible: float,
    lead: Sequence[str],
) -> QueryExplanation:
    definitions = (
        [
            f"definitions first: a name lookup whose first keyword result defines it; keyword"
            f" search's definers among its first {DEFINITIONS_LEAD} lead: " + ", ".join(lead)
        ]
        if lead
        else []
    )
    return QueryExplanation(
        lists=tuple(ListWeight(r.name, r.weight, r.reason, len(r.keys)) for r in lists),
        hits=tuple(
            HitExplanation(
                f.key,
                tuple(ListRank(c.list_name, c.rank, c.score, c.rrf) for c in f.contributions),
                f.bonus,
                f.score,
                rrf_rank,
            )
            for rrf_rank, (f, _) in enumerate(shown, start=1)
        ),
        notes=(
            *notes,
            f"RRF: weight / ({K} + rank) per list, +{TOP_BONUS} for a first place "
            f"(+0.02 for ranks 2-3), scaled by the list's weight against {FULL_WEIGHT}",
            f"scores are the fused sum over the best possible ({best_possible:.4f})",
            *definitions,
        ),
    )


# Words that ask rather than name. A keyword line that adds only these to the query's own words
# searches for the query again (怎样更改... for 怎么更改..., "how to install npm" for "install npm").
_ASKING_WORDS = frozenset(
    {"怎么", "怎样", "怎么样", "如何", "什么", "为什么", "为何", "哪", "哪个", "哪些", "哪里"}
    | {"吗", "呢", "吧", "的", "了", "是"}
)


def _adds_nothing(query: str, line: str) -> bool:
    from ..search.query import STOPWORDS
    from ..text.terms import word_forms

    skip = STOPWORDS | _ASKING_WORDS
    return word_forms(line, skip=skip) <= word_forms(query, skip=skip)


def _kept_share(query: str, line: str) -> float:
    """The share of the query's words (their forms: text/terms.py; stopwords aside) an added
    keyword line keeps: a keyword variant that drops most of them searches for something else
    ("apt 启动命令" for "apt 源 配置")."""
    from ..search.query import STOPWORDS
    from ..text.terms import word_forms

    wanted = word_forms(query, skip=STOPWORDS) or word_forms(query)
    if not wanted:
        return 1.0
    return len(wanted & word_forms(line)) / len(wanted)


# In a name lookup whose first keyword result defines the name, keyword search's definers among
# its first DEFINITIONS_LEAD results lead the fused list, in keyword order: an embedding of a bare
# name knows little of it, and RRF otherwise lets a page the vectors rank first and keyword search
# 24th (bugs.rst.txt for ``help``) pass the builtin's own definition, keyword search's second.
# Measured with MiniLM (query-fused MRR@10, without / leading 2 / leading 3): python-builtins
# 0.853 / 0.877 / 0.880, py-src-api 0.893 / 0.929 / 0.929, the other 12 sets unchanged.
DEFINITIONS_LEAD = 3


def _definitions_first(fused: list[Fused], keyword: SearchResult) -> tuple[list[Fused], list[str]]:
    """``fused`` with keyword search's leading definers first (scored at least as high as what
    follows, so scores still fall down the list), and their keys."""
    definers = set(keyword.definers)
    lead = [h.virtual_path for h in keyword.hits[:DEFINITIONS_LEAD] if h.virtual_path in definers]
    by_key = {f.key: f for f in fused}
    head = [by_key[key] for key in lead if key in by_key]
    leading = set(lead)
    rest = [f for f in fused if f.key not in leading]
    floor = rest[0].score if rest else 0.0
    ordered: list[Fused] = []
    for f in head:
        score = max(f.score, floor)
        if ordered:
            score = min(score, ordered[-1].score)
        ordered.append(replace(f, score=score))
    return ordered + rest, [f.key for f in head]


def _first_defines(result: SearchResult) -> bool:
    """Whether keyword search's first result defines a name of the query: however close the
    scores, it found a definition (``ProgressBar`` in _termui_impl.py, where termui.py's
    ``progressbar()`` and the pages importing the class score as high)."""
    return bool(result.hits) and result.hits[0].virtual_path in result.definers


def _ranked(name: str, result: SearchResult, weight: float, reason: str) -> RankedList:
    return RankedList(
        name,
        tuple(hit.virtual_path for hit in result.hits),
        tuple(hit.score for hit in result.hits),
        weight,
        reason,
    )


def _unique(notices: Sequence[Notice]) -> list[Notice]:
    return list(dict.fromkeys(notices))
