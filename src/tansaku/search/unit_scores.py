"""Scores of transcript units on the scale of file results, so that both merge by score.

A session is a document: at ``--level session`` (and ``project``, by its best session) it is
scored by the document scorer that scores files (scoring.rescore: the same IDFs over every
document, the same reference), and shown by its best turn. A turn or a run scores its session's
score times its share of the session's best match (turn_scores). Before, turn scores (FTS5's
bm25 over the turns, x / (1 + x)) and file scores were on two scales: a page lacking the query's
rarest word outranked the only session that held it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..store.backend import transcripts as tstore
from ..types import Collection, Notice
from .query import ParsedQuery, fts_expression


def session_scores(
    conn: Any, query: str, collections: Sequence[Collection], contexts: Mapping[str, str]
) -> tuple[dict[tuple[str, str], float], list[Notice]]:
    """{(collection, path): score} of every session that matches, scored as a document (as files
    are), and the notices of that search."""
    from .keyword import SearchOptions, search

    documents = search(conn, query, collections, contexts, SearchOptions(limit=None, snippets=False))
    return {(hit.collection, hit.path): hit.score for hit in documents.hits}, list(documents.warnings)


def turn_scores(
    conn: Any,
    query: str,
    expression: str,
    groups: Sequence[tstore.GroupRow],
    collections: Sequence[Collection],
    contexts: Mapping[str, str],
    filters: tstore.TurnFilter,
) -> dict[int, float]:
    """{best turn of a unit: score} for turn and run units: the score of the unit's session (as a
    document) times the unit's share of that session's best match, bm25(turns_fts) of the unit's
    best turn over that of the session's best turn. The best turn of the best session scores what
    its session does; a turn holding half as much as its session's best, half that. (Scoring a
    turn alone with the documents' IDFs ranked short turns below long pages that hold the
    query's common words many times: mixed-v1 0.919 -> 0.870 at --level turn.)"""
    if not groups:
        return {}
    sessions, _ = session_scores(conn, query, collections, contexts)
    best_groups, _ = tstore.search_groups(conn, expression, filters, "session", None)
    turns = tstore.turns_by_ids(conn, [g.turn_id for g in (*groups, *best_groups)])
    best = {turns[g.turn_id].doc_id: g.bm25 for g in best_groups}
    scores = {}
    for group in groups:
        turn = turns[group.turn_id]
        session = sessions.get((turn.collection, turn.path), 0.0)
        top = best.get(turn.doc_id, group.bm25)
        share = group.bm25 / top if top < 0 else 1.0
        scores[group.turn_id] = session * min(1.0, max(0.0, share))
    return scores


@dataclass(frozen=True)
class ScoredUnit:
    group: tstore.GroupRow
    score: float


def session_units(
    conn: Any,
    query: str,
    clauses: ParsedQuery,
    collections: Sequence[Collection],
    contexts: Mapping[str, str],
    filters: tstore.TurnFilter,
    level: str,
) -> tuple[list[ScoredUnit], list[Notice]]:
    """The sessions (``level`` session) or projects (by their best session) that match, best first:
    scored as documents, each shown by its best turn among the turns the filters keep (a session
    with no such turn is left out)."""
    scores, notices = session_scores(conn, query, collections, contexts)
    expression = fts_expression(clauses, "any")
    if not scores or expression is None:
        return [], notices
    groups, _ = tstore.search_groups(conn, expression, filters, "session", None)
    turns = tstore.turns_by_ids(conn, [group.turn_id for group in groups])
    units = []
    for group in groups:
        turn = turns[group.turn_id]
        score = scores.get((turn.collection, turn.path))
        if score is not None:
            units.append((turn.project or "", ScoredUnit(group, score)))
    found = [unit for _, unit in units] if level == "session" else _by_project(units)
    found.sort(key=lambda unit: (-unit.score, unit.group.turn_id))
    return found, notices


def _by_project(units: Sequence[tuple[str, ScoredUnit]]) -> list[ScoredUnit]:
    """One unit a project: its best session's, with the matches, sessions and times of them all."""
    projects: dict[str, list[ScoredUnit]] = {}
    for project, unit in units:
        projects.setdefault(project, []).append(unit)
    merged = []
    for members in projects.values():
        best = max(members, key=lambda unit: (unit.score, -unit.group.turn_id))
        firsts = [u.group.first_epoch for u in members if u.group.first_epoch is not None]
        lasts = [u.group.last_epoch for u in members if u.group.last_epoch is not None]
        group = tstore.GroupRow(
            turn_id=best.group.turn_id,
            bm25=best.group.bm25,
            matches=sum(u.group.matches for u in members),
            first_epoch=min(firsts) if firsts else None,
            last_epoch=max(lasts) if lasts else None,
            sessions=sum(u.group.sessions for u in members),
        )
        merged.append(ScoredUnit(group, best.score))
    return merged
