"""`query` step by step: probe, expansion, retrieval, fusion, rerank.

1. **Probe.** The keyword search of the query runs first. A strong, clear winner (top score at
   least ``PROBE_SCORE``, ``PROBE_GAP`` above the second) and no intent: expansion is skipped,
   it would cost seconds and add nothing.
2. **Expansion** (``QuerySteps.expand``) gives ``lex`` lines for keyword search and ``vec``/``hyde``
   lines for vector search; a query document brings its own lines and is not expanded.
3. **Retrieval.** The query and the lex lines go to keyword search, the query and the vec/hyde
   lines to vector search, embedded in one batch.
4. **Fusion** by weighted RRF (pipeline.py): the original query's lists weigh 2, the others 1.
5. **Rerank** (``QuerySteps.rerank``) of the fused candidates' best passages within a budget,
   blended with the fused rank (reorder.py); then the score floor and the limit.

The retrievals and the models are the caller's (``api.Tansaku`` hands them in as ``QuerySteps``),
so this package never imports the facade, and every step is testable with stand-ins.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..types import Hit, Notice, SearchResult
from .document import parse_query_document
from .pipeline import Retrieval, fuse_retrievals
from .reorder import Placed, reorder
from .trust import ORIGINAL_WEIGHT, keyword_confidence

if TYPE_CHECKING:
    from ..models.generate import Expansion
    from ..models.rerank import Reranked

# `query --all`: every fused document.
UNLIMITED = 1 << 30
# A keyword result this strong and this clear of the next needs no expansion. The reference
# tool asks for a gap of 0.15 in scores |x| / (1 + |x|), which near 1 hides large gaps (0.96
# against 0.91 is raw BM25 24 against 10). Asking instead that the second's raw evidence be at most
# half the first's, and that the first hold 1.5 times the query's reference (a score of 0.6 on
# search/score_scale's scale), skips 160 of the 670 judged queries in evals/sets, and in all 160
# keyword search's first result is a judged answer (evals/bench_scores.py; the old threshold, 0.85
# on raw sums, skipped 171 with 2 wrong).
PROBE_SCORE = 0.6
PROBE_RAW_GAP = 0.5
# A further line of a kind (an expansion, a query document's second vec: line) weighs this.
EXPANSION_WEIGHT = ORIGINAL_WEIGHT / 2


@dataclass(frozen=True)
class VectorBatch:
    """The vector searches of several texts, embedded together."""

    results: list[tuple[SearchResult, float] | None]  # per text: results and unknown share; None: empty
    unavailable: Notice | None = None  # vectors cannot be searched at all (then results are empty)
    embed_seconds: float = 0.0


# The note when the caller turned expansion off.
EXPANSION_REFUSED = "expansion off (--no-expand)"
RERANK_REFUSED = "reranking off (--no-rerank)"


@dataclass(frozen=True)
class QuerySteps:
    keyword: Callable[[str], SearchResult]  # keyword search of one text, with the candidate pool
    vectors: Callable[[Sequence[str]], VectorBatch]
    name_lookup: Callable[[str], bool]
    add_snippets: Callable[[str, Sequence[Hit]], list[Hit]]
    # (query, intent) -> the expansion; None when expansion is off (asked, or by default on a CPU).
    expand: Callable[[str, str | None], Expansion] | None = None
    # Why expansion is off, for the notes.
    expand_off: str = EXPANSION_REFUSED
    # (hits, keyword text, intent) -> one passage per hit, for the reranker.
    passages: Callable[[Sequence[Hit], str, str | None], list[str]] | None = None
    # (rerank query, [(key, passage)], fused rank of the first) -> scores; None when reranking
    # is off (asked, or by default on a CPU without a rerank model).
    rerank: Callable[[str, list[tuple[str, str]], int], Reranked] | None = None
    # (number of candidates, fused rank of the first) -> a warning when the budget cannot buy a
    # reordering at the reranker's known speed (then no passage is chosen), else None.
    rerank_room: Callable[[int, int], Notice | None] | None = None
    # Why reranking is off, for the notes.
    rerank_off: str = RERANK_REFUSED
    # Reranking by default on a CPU: a budget too short for it is a note, not a warning.
    rerank_quiet: bool = False
    # hits -> each text once, its copies' paths in also_at (search/copies.py); None: --all-copies.
    copies: Callable[[Sequence[Hit]], list[Hit]] | None = None


@dataclass
class _Stages:
    times: list[tuple[str, float, int, float]] = field(default_factory=list)
    mark: float = field(default_factory=time.perf_counter)

    def done(
        self, stage: str, seconds: float | None = None, *, tokens: int = 0, model_seconds: float = 0.0
    ) -> None:
        now = time.perf_counter()
        self.times.append((stage, now - self.mark if seconds is None else seconds, tokens, model_seconds))
        self.mark = now


def strong_probe(result: SearchResult) -> bool:
    hits = result.hits
    if not hits or hits[0].score < PROBE_SCORE:
        return False
    return keyword_confidence([hit.score for hit in hits[:2]]) >= PROBE_RAW_GAP


def run_query(
    query: str,
    steps: QuerySteps,
    *,
    limit: int | None,
    min_score: float,
    candidate_limit: int,
    explain: bool,
    intent: str | None = None,
) -> SearchResult:
    """`query`: probe, expansion, keyword and vector lists fused by weighted RRF, reranking within
    the steps' budget. The steps (hybrid/steps.py) choose: ``expand`` None (the default) expands
    where it pays: with a model on an endpoint or a GPU, not on a CPU, unless the config's
    ``[query] expand`` says (hybrid/model_defaults.py). ``rerank`` None (the default) reranks with
    a model on an endpoint or a GPU, or on a CPU when the rerank model is on this machine (a
    budget too short for it is then a note), unless ``[query] rerank`` says.

    ``query`` may be a query document (typed ``lex:``/``vec:``/``hyde:``/``intent:`` lines,
    hybrid/document.py): each line is its own list, and it is not expanded. A missing model,
    vectors or index step costs that step only, with the warning that says why
    (``VECTORS_UNAVAILABLE``, ``MODEL_MISSING``, ``EXPANSION_FAILED``, ``RERANK_PARTIAL``...).
    """
    started = time.perf_counter()
    stages = _Stages(mark=started)
    document = parse_query_document(query)
    warnings: list[Notice] = []
    notes: list[str] = []
    expanded = False
    if document is not None:
        lines = list(document.lines)
        intent = intent or document.intent
        notes.append(f"query document: {len(lines)} typed lines, run as given (not expanded)")
        probe = None
    else:
        lines = [("query", query)]
        probe = steps.keyword(query)
        stages.done("probe")
        if steps.expand is None:
            notes.append(steps.expand_off)
        elif strong_probe(probe) and not intent:
            gap = keyword_confidence([hit.score for hit in probe.hits[:2]])
            notes.append(
                f"probe: keyword top score {probe.hits[0].score:.2f}, the next {gap:.0%} lower in raw"
                " BM25: a clear answer, so the query was not expanded"
            )
        else:
            expansion = steps.expand(query, intent)
            stages.done("expansion")
            warnings.extend(expansion.warnings)
            added = [("lex", t) for t in expansion.lex[1:]] + [("vec", t) for t in expansion.vec[1:]]
            added += [("hyde", t) for t in expansion.hyde]
            lines += added
            expanded = bool(added)
            if expansion.fallback:
                notes.append("expansion gave nothing usable: the query alone was searched")
            else:
                cached = " (cached)" if expansion.cached else ""
                notes.append(f"expansion{cached}: " + "; ".join(f"{k}: {t}" for k, t in added))
    if intent:
        notes.append(f"intent (steers expansion, passages and reranking; not searched): {intent}")

    retrievals, vector_warning, embed_seconds = _retrieve(lines, steps, probe)
    if vector_warning is not None:
        warnings.append(vector_warning)
    # Measured before ``done`` moves the mark: the searches are the step's time less embedding.
    retrieving = time.perf_counter() - stages.mark
    stages.done("embedding", embed_seconds)
    stages.done("retrieval", max(0.0, retrieving - embed_seconds))

    keyword_texts = [text for kind, text in lines if kind in ("query", "lex")]
    fused = fuse_retrievals(
        query,
        retrievals,
        name_lookup=bool(keyword_texts) and steps.name_lookup(keyword_texts[0]),
        typed_lines=document is not None,
        limit=None,
        min_score=0.0,
        candidate_limit=candidate_limit if limit is not None else UNLIMITED,
        explain=explain,
        warnings=warnings,
        notes=notes,
        started=started,
    )
    stages.done("fusion")
    result, outcome = _rerank(fused, steps, query, keyword_texts, intent)
    if outcome is not None:
        stages.done("rerank", tokens=outcome.prompt_tokens, model_seconds=outcome.seconds)
    if expanded and result.used != "keyword":
        result = replace(result, used="hybrid")
    return _finish(result, steps, keyword_texts, limit, min_score, stages, started)


def _retrieve(
    lines: Sequence[tuple[str, str]], steps: QuerySteps, probe: SearchResult | None
) -> tuple[list[Retrieval], Notice | None, float]:
    """The ranked lists of every line, keyword lists first, in the lines' order."""
    seen: dict[str, int] = {}
    keyword_lists: list[Retrieval] = []
    vector_lines: list[tuple[str, float]] = []
    vector_texts: list[str] = []
    for kind, text in lines:
        seen[kind] = seen.get(kind, 0) + 1
        # The query stands for itself; every further line weighs half (an expansion, or the
        # second and later line of a kind in a query document).
        first = kind == "query" or (seen[kind] == 1 and "query" not in seen)
        weight = ORIGINAL_WEIGHT if first else EXPANSION_WEIGHT
        if kind in ("query", "lex"):
            name = "keyword" if kind == "query" else f"lex {seen[kind]}"
            result = probe if kind == "query" and probe is not None else steps.keyword(text)
            keyword_lists.append(Retrieval(name, "keyword", result, weight))
        if kind in ("query", "vec", "hyde"):
            vector_lines.append((("vector" if kind == "query" else f"{kind} {seen[kind]}"), weight))
            vector_texts.append(text)
    if not vector_texts:
        return keyword_lists, None, 0.0
    batch = steps.vectors(vector_texts)
    vector_lists = [
        Retrieval(name, "vector", found[0], weight, found[1])
        for (name, weight), found in zip(vector_lines, batch.results, strict=False)
        if found is not None
    ]
    return keyword_lists + vector_lists, batch.unavailable, batch.embed_seconds


def _rerank(
    fused: SearchResult,
    steps: QuerySteps,
    query: str,
    keyword_texts: Sequence[str],
    intent: str | None,
) -> tuple[SearchResult, Reranked | None]:
    """The fused result reordered by the blend (its ``used`` becomes "hybrid" when the reranker
    scored anything), and what the reranker did (None: it did not run)."""
    if steps.rerank is None or steps.passages is None:
        return _with_note(fused, steps.rerank_off), None
    if not fused.hits:
        return fused, None
    # The definitions that lead a name lookup by rule keep their places: whether a page defines
    # the name is what the reranker, reading one passage, cannot see.
    pinned = min(fused.pinned, len(fused.hits))
    rest = fused.hits[pinned:]
    if not rest:
        return _with_note(fused, "reranking: every result is a definition that leads by rule"), None
    first_rank = pinned + 1
    too_short = steps.rerank_room(len(rest), first_rank) if steps.rerank_room is not None else None
    if too_short is not None:
        from ..models.rerank import Reranked

        noted = _with_note(fused, f"reranking skipped: {too_short.message}")
        if steps.rerank_quiet:
            noted = _with_note(noted, "reranking is on by default on a CPU: --rerank makes a skip a warning")
            return noted, Reranked([(hit.virtual_path, None) for hit in rest], [])
        skipped = Reranked([(hit.virtual_path, None) for hit in rest], [too_short])
        return replace(noted, warnings=(*fused.warnings, too_short)), skipped
    passages = steps.passages(rest, " ".join(keyword_texts), intent)
    rerank_query = f"{query} ({intent})" if intent else query
    keys = [hit.virtual_path for hit in rest]
    outcome = steps.rerank(rerank_query, list(zip(keys, passages, strict=True)), first_rank)
    if steps.rerank_quiet:
        fused, outcome = _time_shortfall_as_notes(fused, outcome)
    if not any(score is not None for _, score in outcome.scores):
        return replace(fused, warnings=(*fused.warnings, *outcome.warnings)), outcome
    placed = _pinned_first(fused.hits[:pinned], reorder(keys, dict(outcome.scores), first_rank))
    by_key = {hit.virtual_path: hit for hit in fused.hits}
    hits = tuple(replace(by_key[p.key], score=p.score) for p in placed)
    explanation = fused.explain
    if explanation is not None:
        explained = {e.path: e for e in explanation.hits}
        rate = outcome.prompt_tokens / outcome.seconds if outcome.seconds else 0.0
        explanation = replace(
            explanation,
            hits=tuple(
                replace(explained[p.key], rerank=p.rerank, blended=p.blended)
                for p in placed
                if p.key in explained
            ),
            notes=(
                *explanation.notes,
                f"rerank: {outcome.reached} of {len(keys)} candidates scored ({outcome.computed} by the"
                f" model, {outcome.prompt_tokens} prompt tokens, {rate:.0f} tokens/s); blended"
                " w / rrf_rank + (1 - w) * rerank, w 0.75 for ranks 1-3, 0.60 to 10, 0.40 after",
                *(
                    [f"the first {pinned} (definitions leading by rule) keep their places, not reranked"]
                    if pinned
                    else []
                ),
                *(
                    ["the first fused candidate keeps its place whatever its score: it is scored last"]
                    if not pinned and placed and placed[0].rrf_rank == 1 and placed[0].rerank is None
                    else []
                ),
            ),
        )
    return replace(
        fused,
        hits=hits,
        warnings=(*fused.warnings, *outcome.warnings),
        explain=explanation,
        used="hybrid",
    ), outcome


def _time_shortfall_as_notes(fused: SearchResult, outcome: Reranked) -> tuple[SearchResult, Reranked]:
    """Reranking nobody asked for (on by default on a CPU) that ran out of time says so in the
    notes; a reranker that failed still warns."""
    from ..models.rerank import RERANK_PARTIAL

    short = [w for w in outcome.warnings if w.code == RERANK_PARTIAL]
    for notice in short:
        fused = _with_note(fused, f"reranking (on by default on a CPU) ran short: {notice.message}")
    kept = [w for w in outcome.warnings if w.code != RERANK_PARTIAL]
    return fused, replace(outcome, warnings=kept)


def _pinned_first(lead: Sequence[Hit], placed: list[Placed]) -> list[Placed]:
    """The pinned hits in their fused order before the reranked rest, each scored at least as the
    rest's first and at least the least the blend gives its rank, never above the one before."""
    from .blend import blend

    floor = placed[0].score if placed else 0.0
    pinned: list[Placed] = []
    for rank, hit in enumerate(lead, start=1):
        score = max(floor, blend(rank, 0.0))
        if pinned:
            score = min(score, pinned[-1].score)
        pinned.append(Placed(hit.virtual_path, score, rank, None, None))
    return pinned + placed


def _with_note(result: SearchResult, note: str) -> SearchResult:
    if result.explain is None:
        return result
    return replace(result, explain=replace(result.explain, notes=(*result.explain.notes, note)))


def _finish(
    result: SearchResult,
    steps: QuerySteps,
    keyword_texts: Sequence[str],
    limit: int | None,
    min_score: float,
    stages: _Stages,
    started: float,
) -> SearchResult:
    """The score floor, each text once (before the limit, so it counts distinct texts), the
    limit, snippets for the hits shown, the stage times."""
    kept = [hit for hit in result.hits if hit.score >= min_score]
    if steps.copies is not None:
        kept = steps.copies(kept)
    shown = kept if limit is None else kept[:limit]
    hits = tuple(steps.add_snippets(" ".join(keyword_texts), shown))
    explanation = result.explain
    if explanation is not None:
        from ..types import StageTime

        by_path = {e.path: e for e in explanation.hits}
        ordered = tuple(by_path[hit.virtual_path] for hit in hits if hit.virtual_path in by_path)
        explanation = replace(
            explanation,
            hits=ordered,
            stages=tuple(StageTime(*times) for times in stages.times),
        )
    return replace(
        result,
        hits=hits,
        total=len(kept),
        limit=limit,
        explain=explanation,
        took_ms=(time.perf_counter() - started) * 1000,
    )
