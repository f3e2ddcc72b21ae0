"""Keyword search over transcript turns, aggregated to turn, run, session or project level.

Turns are matched in ``turns_fts`` (the query is parsed as `search` parses it: one or two terms
are all required, longer queries match any term and rank), filtered by role, time and project,
then grouped: each unit of the level is represented by its best turn (lowest bm25), with the
number of matching turns and their time span. Scores are on the scale of file results, so the
two merge by score (unit_scores: a session is scored as a document, a turn with the documents'
IDFs against the query's reference).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ..config.contexts import contexts_for
from ..errors import EmptyQuery, UsageError
from ..paths import virtual_path
from ..store.backend import documents as doc_store
from ..store.backend import transcripts as tstore
from ..types import Collection, Hit, Notice, SearchResult, Snippet
from .hits import disk_path, is_stale
from .query import ParsedQuery, fts_expression, parse_query, required_terms, resolve_options
from .snippets import best_snippet
from .unit_scores import session_units, turn_scores

LEVELS = ("turn", "run", "session", "project")
ROLES = ("user", "assistant", "tool")
STRICT_CLAUSES = 2
_RELATIVE = re.compile(r"\A(\d+)\s*([mhdw])\Z")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_when(text: str | None, *, end: bool, now: float | None = None) -> float | None:
    """``--since``/``--until``: ``7d`` (m, h, d, w ago), a date (``2025-11-30``: the day's start;
    for ``--until`` the day is included) or an ISO time. Epoch seconds; None for no bound."""
    if text is None or not text.strip():
        return None
    value = text.strip()
    match = _RELATIVE.match(value.lower())
    if match:
        return (time.time() if now is None else now) - int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"cannot read {value!r} as a time",
            hint="give a date (2025-11-30), an ISO time (2025-11-30T12:00) or an age (30m, 12h, 7d, 2w)",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    if end and len(value) == 10:  # a date: --until includes that whole day
        parsed += timedelta(days=1)
    return parsed.timestamp()


@dataclass(frozen=True)
class TurnQuery:
    query: str
    level: str = "turn"
    roles: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    project: str | None = None
    limit: int | None = 5
    min_score: float = 0.0
    full: bool = False


def search_levels(
    reading: Callable[[], AbstractContextManager[Any]],
    chosen: Sequence[Collection],
    warnings: Sequence[Notice],
    contexts: Mapping[str, str],
    search_files: Callable[[list[str]], SearchResult],
    *,
    query: str,
    level: str | None = None,
    roles: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
    project: str | None = None,
    limit: int | None = 5,
    min_score: float = 0.0,
    full: bool = False,
) -> SearchResult:
    """`search` over ``chosen`` when some are transcript collections: those by turn, aggregated to
    ``level`` (default turn), the file collections by ``search_files`` (the plain `search`, which
    this package cannot reach itself), merged best first after the ``warnings`` already made."""
    started = time.perf_counter()
    request = turn_query(query, level, roles, since, until, project, limit, min_score, full)
    sessions = [c for c in chosen if c.type != "files"]
    with reading() as conn:
        results = [search_turns(conn, request, sessions, contexts)]
    files = [c.name for c in chosen if c.type == "files"]
    if files:
        results.append(search_files(files))
    merged = merge(results, query, limit, started)
    return replace(merged, warnings=(*warnings, *merged.warnings))


def turn_query(
    query: str,
    level: str | None,
    roles: Sequence[str],
    since: str | None,
    until: str | None,
    project: str | None,
    limit: int | None,
    min_score: float,
    full: bool,
) -> TurnQuery:
    """The options of `search`/`vsearch` on transcripts, checked, times read (see parse_when)."""
    request = TurnQuery(
        query,
        level or "turn",
        tuple(roles),
        parse_when(since, end=False),
        parse_when(until, end=True),
        project,
        limit,
        min_score,
        full,
    )
    check(request.level, request.roles)
    return request


def _filter(request: TurnQuery, collections: Sequence[Collection]) -> tstore.TurnFilter:
    return tstore.TurnFilter(
        collections=tuple(c.name for c in collections),
        roles=tuple(request.roles),
        since=request.since,
        until=request.until,
        project=request.project,
    )


def check(level: str, roles: Sequence[str]) -> None:
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}", hint=f"use one of: {', '.join(LEVELS)}")
    for role in roles:
        if role not in ROLES:
            raise UsageError(f"unknown role {role!r}", hint=f"use one of: {', '.join(ROLES)}")


def search_turns(
    conn: Any,
    request: TurnQuery,
    collections: Sequence[Collection],
    contexts: Mapping[str, str],
) -> SearchResult:
    started = time.perf_counter()
    check(request.level, request.roles)
    parsed = resolve_options(parse_query(request.query), lambda name: doc_store.option_defined(conn, name))
    clauses = required_terms(parsed)
    strict = len(clauses.positive) <= STRICT_CLAUSES
    expression = fts_expression(clauses, "all" if strict else "clauses")
    if expression is None:
        raise EmptyQuery(
            f"the query {request.query!r} has nothing to search for",
            hint="give at least one word that is not negated with '-'",
        )
    filters = _filter(request, collections)
    if request.level in ("session", "project"):
        units, notices = session_units(
            conn, request.query, clauses, collections, contexts, filters, request.level
        )
        total = len(units)
        if request.limit is not None:
            units = units[: request.limit]
        scores = {unit.group.turn_id: unit.score for unit in units}
        groups = [unit.group for unit in units]
    else:
        groups, total, notices, expression = _turn_groups(conn, clauses, expression, filters, request, strict)
        scores = turn_scores(conn, request.query, expression, groups, collections, contexts, filters)
        groups.sort(key=lambda group: (-scores[group.turn_id], group.turn_id))
        if request.limit is not None:
            groups = groups[: request.limit]
    hits = _hits(
        conn,
        groups,
        lambda group: scores[group.turn_id],
        request,
        collections,
        contexts,
        clauses.highlight_terms,
    )
    return SearchResult(
        query=request.query,
        mode="search",
        hits=tuple(hits),
        total=total,
        limit=request.limit,
        warnings=tuple(notices),
        took_ms=(time.perf_counter() - started) * 1000,
        collections=tuple(c.name for c in collections),
    )


# How many units of the turn search's own order are rescored for each result wanted: the document
# IDFs (unit_scores.turn_scores) can reorder them.
RESCORED_PER_RESULT = 4


def _turn_groups(
    conn: Any,
    clauses: ParsedQuery,
    expression: str,
    filters: tstore.TurnFilter,
    request: TurnQuery,
    strict: bool,
) -> tuple[list[tstore.GroupRow], int, list[Notice], str]:
    """The best turn of each unit (turn or run) that matches, in bm25(turns_fts) order: more than
    the limit, for rescoring; with all terms where one or two are asked, else any. Also the
    expression that found them."""
    pool = None if request.limit is None else request.limit * RESCORED_PER_RESULT
    notices: list[Notice] = []
    groups, total = tstore.search_groups(conn, expression, filters, request.level, pool)
    if not groups and strict and len(clauses.positive) > 1:
        fallback = fts_expression(clauses, "any")
        if fallback is not None:
            groups, total = tstore.search_groups(conn, fallback, filters, request.level, pool)
            expression = fallback
            if groups:
                notices.append(
                    Notice(
                        "PARTIAL_MATCH",
                        f"no turn contains all {len(clauses.positive)} terms; showing turns that contain"
                        " some of them",
                    )
                )
    return groups, total, notices, expression


def _hits(
    conn: Any,
    groups: Sequence[tstore.GroupRow],
    score_of: Callable[[tstore.GroupRow], float],
    request: TurnQuery,
    collections: Sequence[Collection],
    contexts: Mapping[str, str],
    terms: Sequence[str],
) -> list[Hit]:
    turns = tstore.turns_by_ids(conn, [g.turn_id for g in groups])
    by_name = {c.name: c for c in collections}
    hits: list[Hit] = []
    for group in groups:
        turn = turns[group.turn_id]
        score = score_of(group)
        if score < request.min_score:
            continue
        hits.append(_hit(turn, group, score, request, by_name[turn.collection], contexts, terms))
    return hits


# How many of the nearest chunk windows a transcript vsearch groups at first, per result wanted;
# more are taken while the groups found are fewer than the results wanted.
NEAREST_PER_RESULT = 40
NEAREST_MIN = 400


def vector_levels(
    conn: Any,
    query: Any,  # search.vector.VectorQuery
    pairs: Sequence[tuple[Collection, str]],
    request: TurnQuery,
    contexts: Mapping[str, str],
    warnings: Sequence[Notice],
    started: float,
    cache: Any,  # search.vector_cache.VectorCache
) -> SearchResult:
    """`vsearch` with levels: file collections as plain vsearch ranks them (best chunk per
    document); transcript collections by turn (its best chunk window), filtered and grouped to
    the level by the rule keyword search uses (store.transcripts._groups), merged by score.

    The turns grouped are those of the nearest chunk windows above the floor: at first
    ``NEAREST_PER_RESULT`` per result wanted, more while that gives fewer units than wanted."""
    from .query import parse_query, required_terms
    from .vector import nearest_chunks, vsearch

    files = [(c, p) for c, p in pairs if c.type == "files"]
    sessions = [(c, p) for c, p in pairs if c.type != "files"]
    results: list[SearchResult] = []
    if sessions:
        filters = _filter(request, [c for c, _ in sessions])
        count = None if request.limit is None else max(request.limit * NEAREST_PER_RESULT, NEAREST_MIN)
        while True:
            near = nearest_chunks(conn, query, sessions, cache, count)
            chunks = list(zip(near.doc_ids, near.start_lines, near.scores, strict=True))
            groups, total = tstore.vector_groups(conn, chunks, filters, request.level, request.limit)
            if near.exhausted or count is None or len(groups) >= (request.limit or 0):
                break
            count *= 4
        terms = required_terms(parse_query(request.query)).highlight_terms
        chosen = [c for c, _ in sessions]
        hits = _hits(conn, groups, lambda group: -group.bm25, request, chosen, contexts, terms)
        results.append(
            SearchResult(
                query=request.query,
                mode="vsearch",
                hits=tuple(hits),
                total=total,
                limit=request.limit,
                took_ms=0.0,
                collections=tuple(c.name for c, _ in sessions),
                total_exact=near.exhausted,
            )
        )
    if files:
        results.append(vsearch(conn, query, files, contexts, (), started, cache))
    merged = merge(results, request.query, request.limit, started, mode="vsearch")
    return replace(merged, warnings=(*warnings, *merged.warnings))


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S") + "Z"


def _hit(
    turn: tstore.TurnView,
    group: tstore.GroupRow,
    score: float,
    request: TurnQuery,
    collection: Collection,
    contexts: Mapping[str, str],
    terms: Sequence[str],
) -> Hit:
    from ..types import TranscriptHit

    level = request.level
    snippet = best_snippet(turn.text, terms)
    snippet = Snippet(turn.start_line + snippet.start_line - 1, snippet.lines)
    session_title = turn.session_title or turn.doc_title
    located = level in ("turn", "run")
    path = disk_path(collection, turn.path)
    base = virtual_path(turn.collection, turn.path)
    return Hit(
        docid=turn.hash[:6],
        score=score,
        collection=turn.collection,
        path=turn.path,
        # A turn (and a run, by its best turn) points at its line in the source file.
        virtual_path=f"{base}:{turn.line}" if located else base,
        disk_path=path,
        title=turn.doc_title,
        contexts=contexts_for(contexts, turn.collection, turn.path),
        snippet=snippet,
        stale=is_stale(path, turn.size, turn.mtime_ns),
        body=turn.text if request.full else None,
        transcript=TranscriptHit(
            level=level,
            project=turn.project,
            session_id=turn.session_id if level != "project" else None,
            session_title=session_title if level != "project" else None,
            run_index=turn.run_index if located else None,
            run_prompt=(turn.run_prompt or "") if located else None,
            role=turn.role if level == "turn" else None,
            kind=turn.kind if level == "turn" else None,
            turn_id=turn.turn_id if level == "turn" else None,
            timestamp=turn.timestamp,
            line=turn.line,
            matches=group.matches,
            first_timestamp=iso(group.first_epoch),
            last_timestamp=iso(group.last_epoch),
            sessions=group.sessions,
        ),
    )


def merge(
    results: Sequence[SearchResult], query: str, limit: int | None, started: float, mode: str = "search"
) -> SearchResult:
    """Transcript and file results of one search, best first."""
    hits = sorted((h for r in results for h in r.hits), key=lambda h: -h.score)
    if limit is not None:
        hits = hits[:limit]
    warnings: list[Notice] = []
    for result in results:
        warnings += [w for w in result.warnings if w not in warnings]
    return SearchResult(
        query=query,
        mode=mode,
        hits=tuple(hits),
        total=sum(r.total for r in results),
        limit=limit,
        warnings=tuple(warnings),
        took_ms=(time.perf_counter() - started) * 1000,
        collections=tuple(name for r in results for name in r.collections),
        total_exact=all(r.total_exact for r in results),
    )
