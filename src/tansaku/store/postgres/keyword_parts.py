"""What search's rescoring asks of many expressions at once, in two statements instead of one per
question (search/scoring.py's ``_Parts.prepare``).

Rescoring reads, for each term of a query, its document frequency, then its bm25 over the
candidates or which candidates hold it (documents.phrase_frequency, phrase_bm25 and
phrase_documents). On SQLite each is an in-process FTS5 call; here each was a round trip, and a
long question of a dozen words made 20 of them (a third of its time at 10,000 files). The answers
are the same functions', bit for bit: the same SQL (bm25_sql.ranked and matching, with the IDFs
computed in Python from the same counts, as run_ranked does where it knows them), each part of a
``UNION ALL`` tagged with its question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import routed
from . import bm25_sql
from .bm25_sql import DOCUMENT_POSTINGS, Sql
from .expression import Phrase, parse


def phrase_frequencies(conn: Any, expressions: Sequence[str]) -> dict[str, int]:
    """documents.phrase_frequency of each expression: a phrase's (nearly every one) in one
    statement, with those the read block does not know yet."""
    cache = conn.positions_cache
    phrases = {}
    found: dict[str, int] = {}
    for expression in dict.fromkeys(expressions):
        root = parse(expression).root
        if isinstance(root, Phrase):
            phrases[expression] = root
    if phrases:
        counts = bm25_sql.phrase_frequencies(conn, DOCUMENT_POSTINGS, list(phrases.values()), cache)
        found.update(zip(phrases, counts, strict=True))
    for expression in expressions:
        if expression not in found:  # an expression of several phrases: counted on its own
            found[expression] = routed.documents.phrase_frequency(conn, expression)
    return found


def phrase_parts(
    conn: Any,
    scored: Sequence[tuple[str, Sequence[float]]],
    present: Sequence[str],
    ids: Sequence[int],
) -> tuple[list[dict[int, float]], list[set[int]]]:
    """documents.phrase_bm25 of each (expression, weights) of ``scored`` and
    documents.phrase_documents of each expression of ``present``, over the documents ``ids``, in
    one statement."""
    if not ids or not (scored or present):
        return [{} for _ in scored], [set() for _ in present]
    cache = conn.positions_cache
    restrict = sorted(set(ids))
    totals = bm25_sql.table_totals(conn, DOCUMENT_POSTINGS, cache)
    parsed = [parse(expression) for expression, _ in scored]
    # Every phrase's n (known after frequencies(), else read now, together).
    every = [phrase for expression in parsed for phrase in expression.phrases]
    bm25_sql.phrase_frequencies(conn, DOCUMENT_POSTINGS, every, cache)
    sql = Sql()
    for k, (expression, (_, weights)) in enumerate(zip(parsed, scored, strict=True)):
        counts = bm25_sql.phrase_frequencies(conn, DOCUMENT_POSTINGS, expression.phrases, cache)
        idfs = [bm25_sql.idf(totals[0], n) for n in counts]
        # join=False: the postings carry the lengths, and ``restrict`` holds documents only.
        part = bm25_sql.ranked(DOCUMENT_POSTINGS, expression, weights, restrict, idfs, totals, join=False)
        sql.add(" UNION ALL " if k else "").add(f"SELECT {k} AS k, q{k}.id, q{k}.score FROM (")
        sql.extend(part).add(f") AS q{k}")
    for j, expression_text in enumerate(present, start=len(scored)):
        part = bm25_sql.matching(DOCUMENT_POSTINGS, parse(expression_text), restrict)
        sql.add(" UNION ALL " if j else "").add(f"SELECT {j} AS k, q{j}.id, NULL::float8 FROM (")
        sql.extend(part).add(f") AS q{j}")
    bm25: list[dict[int, float]] = [{} for _ in scored]
    holding: list[set[int]] = [set() for _ in present]
    for k, doc_id, value in conn.execute(sql.sql, sql.params):
        if k < len(scored):
            bm25[k][int(doc_id)] = float(value)
        else:
            holding[k - len(scored)].add(int(doc_id))
    return bm25, holding
