"""Which documents an FTS5 expression matches, and their bm25, computed as FTS5 computes them.

The SQLite path ranks with FTS5's ``bm25()``; search/scoring.py then adds its own rules on top of
per-phrase bm25 parts. For the PostgreSQL backend to rank equally, this module reproduces
``bm25()`` over the token positions kept in PostgreSQL (``postings``), with FTS5's definitions:

- a phrase's instances are its occurrences (consecutive positions, the last token a prefix for
  ``"ab" *``) in the columns its filter allows; its frequency in a document is the sum of the
  column weights of its instances;
- its IDF is ``ln((N - n + 0.5) / (n + 0.5))``, 1e-6 where that is not positive, with ``n`` the
  documents of the whole index it occurs in and N the documents of the index;
- a document's score is ``-sum(IDF * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl)))`` over
  the phrases in expression order, D the document's tokens (all columns), avgdl the index's
  average; k1 = 1.2, b = 0.75;
- a phrase counts only where the expression's tree matches along its path (FTS5 reads a phrase's
  positions only when its node sits on the row): not in an OR branch that does not match, never
  on the right of a NOT.

The arithmetic is done in the same order as FTS5's C, so equal inputs give equal doubles and the
two backends break ties alike.

Search runs this in the server (bm25_sql.py writes it as SQL, term by term); this module is its
reference in Python, checked against FTS5 itself by test/test_postgres_ranking.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .expression import And, Expression, Node, Not, Or, Phrase

K1 = 1.2
B = 0.75
IDF_CLAMP = 1e-6

# (document id, column) -> the token's sorted positions there
Positions = Mapping[tuple[int, int], Sequence[int]]
PositionSource = Callable[[str, bool], Positions]


def occurrences(phrase: Phrase, positions: PositionSource) -> dict[int, dict[int, int]]:
    """{document: {column: instances}} of one phrase across the index."""
    if not phrase.tokens:
        return {}
    last = len(phrase.tokens) - 1
    lists = [positions(token, phrase.prefix and i == last) for i, token in enumerate(phrase.tokens)]
    found: dict[int, dict[int, int]] = {}
    allowed = phrase.columns
    for (doc, column), starts in lists[0].items():
        if allowed is not None and column not in allowed:
            continue
        if last == 0:
            count = len(starts)
        else:
            rest = []
            for following in lists[1:]:
                at = following.get((doc, column))
                if not at:
                    break
                rest.append(set(at))
            if len(rest) < last:
                continue
            count = sum(1 for p in starts if all(p + i + 1 in later for i, later in enumerate(rest)))
        if count:
            found.setdefault(doc, {})[column] = count
    return found


def _remembered(
    phrase: Phrase, positions: PositionSource, memo: dict[Any, dict[int, dict[int, int]]] | None
) -> dict[int, dict[int, int]]:
    if memo is None:
        return occurrences(phrase, positions)
    key = ("occurrences", phrase.tokens, phrase.prefix, phrase.columns)
    if key not in memo:
        memo[key] = occurrences(phrase, positions)
    return memo[key]


class Evaluation:
    """One expression evaluated over the index: its matches, and each phrase's occurrences."""

    def __init__(
        self,
        expression: Expression,
        positions: PositionSource,
        memo: dict[Any, dict[int, dict[int, int]]] | None = None,
    ) -> None:
        """``memo`` keeps phrases' occurrences between evaluations over one state of the index (a
        search evaluates a dozen expressions sharing their phrases)."""
        self.expression = expression
        self.found = [_remembered(phrase, positions, memo) for phrase in expression.phrases]
        self._matches: dict[int, set[int]] = {}
        self.matches = self._match(expression.root)

    def _match(self, node: Node) -> set[int]:
        if isinstance(node, Phrase):
            result = set(self.found[node.number])
        elif isinstance(node, And):
            parts = [self._match(child) for child in node.children]
            result = set.intersection(*parts)
        elif isinstance(node, Or):
            result = set().union(*(self._match(child) for child in node.children))
        else:
            result = self._match(node.left) - self._match(node.right)
        self._matches[id(node)] = result
        return result

    def frequency(self, phrase: Phrase) -> int:
        """The documents of the whole index the phrase occurs in (FTS5's n for its IDF)."""
        return len(self.found[phrase.number])

    def _active(self, docs: set[int]) -> list[set[int]]:
        """For each phrase, the documents among ``docs`` in which it counts (see the module doc)."""
        active: list[set[int]] = [set() for _ in self.expression.phrases]

        def walk(node: Node, where: set[int]) -> None:
            if not where:
                return
            if isinstance(node, Phrase):
                active[node.number] |= where
            elif isinstance(node, And):
                for child in node.children:
                    walk(child, where)
            elif isinstance(node, Or):
                for child in node.children:
                    walk(child, where & self._matches[id(child)])
            elif isinstance(node, Not):
                walk(node.left, where)

        walk(self.expression.root, docs & self.matches)
        return active

    def bm25(
        self,
        docs: Iterable[int],
        weights: Sequence[float],
        n_docs: int,
        n_tokens: int,
        lengths: Mapping[int, int],
    ) -> dict[int, float]:
        """FTS5's ``bm25(table, *weights)`` (negative; lower is better) for the matching ``docs``."""
        wanted = set(docs) & self.matches
        active = self._active(wanted)
        avgdl = float(n_tokens) / float(n_docs) if n_docs else 1.0
        idfs = []
        for phrase in self.expression.phrases:
            n_hit = self.frequency(phrase)
            idf = math.log((n_docs - n_hit + 0.5) / (n_hit + 0.5))
            idfs.append(idf if idf > 0.0 else IDF_CLAMP)
        scores: dict[int, float] = {}
        for doc in wanted:
            size = float(lengths[doc])
            score = 0.0
            for number, idf in enumerate(idfs):
                freq = 0.0
                if doc in active[number]:
                    # FTS5 adds one weight per instance; the weights tansaku uses are multiples of
                    # 0.5, so count * weight is that sum exactly, in any order.
                    for column, count in sorted(self.found[number][doc].items()):
                        freq += count * (float(weights[column]) if column < len(weights) else 1.0)
                score += idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * size / avgdl)))
            scores[doc] = -1.0 * score
        return scores
