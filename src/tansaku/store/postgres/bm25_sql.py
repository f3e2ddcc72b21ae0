"""FTS5 expressions matched and scored inside PostgreSQL, as ranking.py scores them in Python.

Search used to read every phrase's positions into Python and score them there (ranking.py): a
word in half of 10,000 documents was 5,000 rows of position arrays per expression, which is where
the seconds of the p95 went. Here an expression becomes one statement: per phrase, its weighted
frequency per row (an aggregate over a postings table; a phrase of several words has its
positions checked in SQL), the rows the expression's tree matches, and each row's bm25 with
ranking.py's definitions (which phrases count where, FTS5's formula), so only the rows asked for
(the top of the ranking, a count) come back. ranking.py stays the reference in Python that
test_postgres_ranking.py checks against FTS5 without a server.

Exactness: the arithmetic is ranking.py's, operation by operation, on float8 (IEEE doubles, as
Python's floats): the same inputs give the same doubles, so both backends break ties alike. The
IDFs are computed in the statement (the server's ``ln``) and returned with the rows; each is
checked against ``math.log`` here (as ranking.py and FTS5's C compute it), and where one differs
(a server with another libm) the rows are scored again with the IDFs computed here
(:func:`run_ranked`). Where the read block already knows every phrase's document frequency, the
IDFs are computed here and passed in at once. A phrase's frequency (the weighted sum of its
instances) is exact in any order: the weights are multiples of 0.5 and the counts small integers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .expression import And, Expression, Node, Not, Or, Phrase
from .ranking import IDF_CLAMP, K1, B

# The highest code point: ``prefix <= term < prefix + _LAST`` is every term that starts with prefix.
_LAST = "\U0010ffff"


@dataclass(frozen=True)
class PostingsTable:
    """A postings table: ``term``, the row it is in (``row``), its column (``column``, an
    expression: turns have one) and ``positions``; the rows' table with their token counts."""

    name: str
    row: str
    column: str
    rows: str  # the table of rows, with ``id`` and ``fts_tokens``
    term_stats: str | None  # a table of each term's document frequency, kept by update
    totals: str  # the rows and tokens of the whole table, as one row
    packed: bool = False  # a row per term and block of rows (migration 8), not per row and column


DOCUMENT_POSTINGS = PostingsTable(
    "postings", "doc_id", "col", "documents", "term_stats", "SELECT docs, tokens FROM keyword_totals", True
)
TURN_POSTINGS = PostingsTable(
    "turn_postings", "turn_id", "0", "transcript_turns", None, "SELECT turns, tokens FROM turn_totals"
)


@dataclass
class Sql:
    """SQL text and its parameters, built together so they stay in order."""

    text: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    def add(self, text: str, *params: Any) -> Sql:
        self.text.append(text)
        self.params.extend(params)
        return self

    def extend(self, other: Sql) -> Sql:
        self.text.extend(other.text)
        self.params.extend(other.params)
        return self

    @property
    def sql(self) -> str:
        return "".join(self.text)


def _float(value: float) -> str:
    """A double as a float8 literal that reads back as the same double (repr round-trips)."""
    return f"'{value!r}'::float8"


def _term(table: PostingsTable, alias: str, token: str, prefix: bool) -> Sql:
    if prefix:
        return Sql().add(f"{alias}.term >= %s AND {alias}.term < %s", token, token + _LAST)
    return Sql().add(f"{alias}.term = %s", token)


def _filters(table: PostingsTable, alias: str, phrase: Phrase, restrict: Sequence[int] | None) -> Sql:
    sql = Sql()
    if phrase.columns is not None:
        sql.add(f" AND {alias}.{table.column} = ANY(%s::smallint[])", sorted(phrase.columns))
    if restrict is not None:
        sql.add(f" AND {alias}.{table.row} = ANY(%s::bigint[])", list(restrict))
    return sql


def _column(table: PostingsTable, alias: str) -> str:
    return table.column if table.column.isdigit() else f"{alias}.{table.column}"


def phrase_rows(
    table: PostingsTable, phrase: Phrase, weights: Sequence[float], restrict: Sequence[int] | None
) -> Sql:
    """``SELECT id, f``: the rows the phrase occurs in (among ``restrict``), with its frequency
    there, each instance counted at its column's weight (ranking.occurrences and Evaluation.bm25)."""
    weight = "coalesce((%s::float8[])[{column} + 1], '1'::float8)"
    if not phrase.tokens:
        empty = "NULL::bigint AS id, NULL::integer AS len" if table.packed else "NULL::bigint AS id"
        return Sql().add(f"SELECT {empty}, NULL::float8 AS f WHERE false")
    if table.packed:
        return _packed_phrase_rows(table, phrase, weights, restrict)
    last = len(phrase.tokens) - 1
    if last == 0:
        column = _column(table, "p")
        sql = Sql().add(
            f"SELECT p.{table.row} AS id,"
            f" sum(cardinality(p.positions)::float8 * {weight.format(column=column)}) AS f"
            f" FROM {table.name} AS p WHERE ",
            list(weights),
        )
        sql.extend(_term(table, "p", phrase.tokens[0], phrase.prefix))
        sql.extend(_filters(table, "p", phrase, restrict))
        return sql.add(f" GROUP BY p.{table.row}")
    # Several words: the instances are the first word's positions p with word i at p + i, in the
    # same row and column (the last word a prefix for ``"ab" *``: any term it begins).
    column = _column(table, "p0")
    checks = " AND ".join(f"s.p + {i} = ANY(p{i}.positions)" for i in range(1, last + 1))
    sql = Sql().add(
        f"SELECT id, sum(n::float8 * {weight.format(column='col')}) AS f FROM ("
        f"SELECT p0.{table.row} AS id, {column} AS col,"
        f" (SELECT count(*) FROM unnest(p0.positions) AS s(p) WHERE {checks}) AS n"
        f" FROM {table.name} AS p0",
        list(weights),
    )
    for i in range(1, last + 1):
        same = f"p{i}.{table.row} = p0.{table.row}"
        if not table.column.isdigit():
            same += f" AND p{i}.{table.column} = p0.{table.column}"
        if phrase.prefix and i == last:
            # The prefix's terms merged: one positions array per row and column.
            source = Sql().add(
                f" JOIN (SELECT x.{table.row}, "
                + ("" if table.column.isdigit() else f"x.{table.column}, ")
                + f"array_agg(q) AS positions FROM {table.name} AS x, unnest(x.positions) AS q WHERE "
            )
            source.extend(_term(table, "x", phrase.tokens[i], True))
            group = f"x.{table.row}" + ("" if table.column.isdigit() else f", x.{table.column}")
            source.add(f" GROUP BY {group}) AS p{i} ON {same}")
            sql.extend(source)
        else:
            sql.add(f" JOIN {table.name} AS p{i} ON {same} AND ").extend(
                _term(table, f"p{i}", phrase.tokens[i], False)
            )
    sql.add(" WHERE ").extend(_term(table, "p0", phrase.tokens[0], False))
    sql.extend(_filters(table, "p0", phrase, restrict))
    return sql.add(") AS instances WHERE n > 0 GROUP BY id")


# A packed row (migration 8): ``docs``, ``cols`` and ``counts`` are parallel, one entry per row
# and column in (row, column) order, and ``positions`` holds the entries' positions back to back.
# ``lens`` gives each entry its row's tokens (BM25's length), so the rows' table is not read.
# The entries are unnested in the select list (a ProjectSet zips the parallel arrays), the block's
# ``term`` and ``docs`` beside them, all as ``{u}`` (conditions on those two are pushed down to the
# scan): ``unnest(docs, cols, counts, lens)`` in FROM (a Function Scan, each block's entries put
# in a tuplestore first) took 130 ms where this takes 46, a six-word query's 221,286 entries at
# 100,000 files.
_ENTRIES = (
    " FROM (SELECT {a}.term, {a}.docs, unnest({a}.docs) AS d, unnest({a}.cols) AS c,"
    " unnest({a}.counts) AS n, unnest({a}.lens) AS l FROM {name} AS {a}) AS {u}"
)
_POSITIONS = (
    " FROM {name} AS {a},"
    " tansaku_entries({a}.docs, {a}.cols, {a}.counts, {a}.lens, {a}.positions) AS {u}(d, c, l, at)"
)


def _packed_filters(
    alias: str, entry: str, phrase: Phrase, restrict: Sequence[int] | None, blocks: bool = True
) -> Sql:
    """The phrase's column filter and ``restrict`` on its entries; ``blocks``: skip the blocks
    holding none of ``restrict`` first (``docs && ids``: worth it only before the positions are
    read, see :func:`_restricted`)."""
    sql = Sql()
    if phrase.columns is not None:
        sql.add(f" AND {entry}.c = ANY(%s::smallint[])", sorted(phrase.columns))
    if restrict is not None:
        sql.extend(_restricted(alias, entry, restrict, blocks))
    return sql


_FEW = 16


def _restricted(alias: str, entry: str, restrict: Sequence[int], blocks: bool) -> Sql:
    """`` AND`` the entry's row is one of ``restrict``. The blocks' ``docs && ids`` compares every
    pair of their elements (a block's hundreds of documents with each of the ids): where only the
    arrays of docs, columns, counts and lengths are unnested, unnesting every block and keeping
    the entries of ``restrict`` (a hashed ``= ANY``) is cheaper (a rescoring's 200 candidates over
    a five-word OR at 100,000 files: 38 → 19 ms); before ``tansaku_entries`` reads a block's
    positions, the blocks are skipped first, and so are they for a few ids (at most ``_FEW``:
    comparing them costs less than unnesting a block)."""
    ids = list(restrict)
    if blocks or len(ids) <= _FEW:
        return Sql().add(f" AND {alias}.docs && %s::integer[] AND {entry}.d = ANY(%s::integer[])", ids, ids)
    return Sql().add(f" AND {entry}.d = ANY(%s::integer[])", ids)


def _packed_phrase_rows(
    table: PostingsTable, phrase: Phrase, weights: Sequence[float], restrict: Sequence[int] | None
) -> Sql:
    """phrase_rows over packed postings: the blocks of the phrase's terms (found by the primary
    key) unnested, positions read only for a phrase of several words."""
    weight = "coalesce((%s::float8[])[{column} + 1], '1'::float8)"
    last = len(phrase.tokens) - 1
    if last == 0:
        sql = Sql().add(
            "SELECT u.d::bigint AS id, max(u.l) AS len,"
            f" sum(u.n::float8 * {weight.format(column='u.c')}) AS f"
            + _ENTRIES.format(name=table.name, a="p", u="u")
            + " WHERE ",
            list(weights),
        )
        sql.extend(_term(table, "u", phrase.tokens[0], phrase.prefix))
        sql.extend(_packed_filters("u", "u", phrase, restrict, blocks=False))
        return sql.add(" GROUP BY u.d")

    def entries(i: int) -> Sql:
        """``(d, c, at)``: word i's entries with their positions (a prefix's terms merged)."""
        a, u = f"p{i}", f"u{i}"
        prefix = phrase.prefix and i == last
        head = f"SELECT {u}.d, {u}.c, " + (
            f"max({u}.l) AS l, array_agg(q) AS at" if prefix else f"{u}.l, {u}.at"
        )
        sql = Sql().add(head + _POSITIONS.format(name=table.name, a=a, u=u))
        if prefix:
            sql.add(f", unnest({u}.at) AS q")
        sql.add(" WHERE ").extend(_term(table, a, phrase.tokens[i], prefix))
        sql.extend(_packed_filters(a, u, phrase, restrict))
        return sql.add(f" GROUP BY {u}.d, {u}.c") if prefix else sql

    checks = " AND ".join(f"s.p + {i} = ANY(e{i}.at)" for i in range(1, last + 1))
    sql = Sql().add(
        "SELECT i.d::bigint AS id, max(i.l) AS len,"
        f" sum(i.n::float8 * {weight.format(column='i.c')}) AS f FROM (",
        list(weights),
    )
    sql.add(
        f"SELECT e0.d, e0.c, e0.l, (SELECT count(*) FROM unnest(e0.at) AS s(p) WHERE {checks}) AS n FROM ("
    )
    sql.extend(entries(0)).add(") AS e0")
    for i in range(1, last + 1):
        sql.add(" JOIN (").extend(entries(i)).add(f") AS e{i} ON e{i}.d = e0.d AND e{i}.c = e0.c")
    # OFFSET 0: each count once (a condition on it in the join ran it a second time).
    return sql.add(" OFFSET 0) AS i WHERE i.n > 0 GROUP BY i.d")


def _match(node: Node) -> str:
    """The SQL condition on a row of ``hits`` (see :func:`hits`) for the node's documents."""
    if isinstance(node, Phrase):
        return f"h.f{node.number} IS NOT NULL"
    if isinstance(node, And):
        return "(" + " AND ".join(_match(child) for child in node.children) + ")"
    if isinstance(node, Or):
        return "(" + " OR ".join(_match(child) for child in node.children) + ")"
    return f"({_match(node.left)} AND NOT {_match(node.right)})"


def _active(expression: Expression) -> dict[int, list[str]]:
    """{phrase number: the conditions under which it counts in a matching row} (ranking.py's
    Evaluation._active: an OR's branch counts only where it matches; a NOT's right never)."""
    active: dict[int, list[str]] = {}

    def walk(node: Node, conditions: list[str]) -> None:
        if isinstance(node, Phrase):
            active[node.number] = conditions
        elif isinstance(node, And):
            for child in node.children:
                walk(child, conditions)
        elif isinstance(node, Or):
            for child in node.children:
                walk(child, [*conditions, _match(child)])
        elif isinstance(node, Not):
            walk(node.left, conditions)

    walk(expression.root, [])
    return active


def _words_at_once(
    table: PostingsTable,
    expression: Expression,
    phrases: Sequence[Phrase],
    weights: Sequence[float],
    restrict: Sequence[int] | None,
) -> Sql:
    """hits for phrases of one word each (a long query's OR of words), over packed postings: the
    blocks of every word read in one scan and summed per row in one aggregate, each phrase's
    frequency a FILTER of it (a row where none counts has them all NULL, as if absent). An AND of
    plain words reads only the entries of the rows its rarest word occurs in (:func:`_rarest`)."""
    weight = "coalesce((%s::float8[])[u.c + 1], '1'::float8)"
    sql = Sql().add("SELECT u.d::bigint AS id, max(u.l) AS len")
    words: list[str] = []  # the blocks to read: these terms, and the prefixes' ranges
    prefixes: list[str] = []
    for phrase in phrases:
        condition = Sql()
        if phrase.tokens:
            condition.extend(_term(table, "u", phrase.tokens[0], phrase.prefix))
            if phrase.columns is not None:
                condition.add(" AND u.c = ANY(%s::smallint[])", sorted(phrase.columns))
            (prefixes if phrase.prefix else words).append(phrase.tokens[0])
        else:
            condition.add("false")
        sql.add(f", sum(u.n::float8 * {weight}) FILTER (WHERE ", list(weights))
        sql.extend(condition).add(f") AS f{phrase.number}")
    sql.add(
        _ENTRIES.format(name=table.name, a="p", u="u") + " WHERE (u.term = ANY(%s::text[])",
        sorted(set(words)),
    )
    for prefix in sorted(set(prefixes)):
        sql.add(" OR (").extend(_term(table, "u", prefix, True)).add(")")
    sql.add(")")
    if restrict is not None:
        sql.extend(_restricted("u", "u", restrict, blocks=False))
    sql.extend(_rarest(table, expression, phrases))
    return sql.add(" GROUP BY u.d")


def _rarest(table: PostingsTable, expression: Expression, phrases: Sequence[Phrase]) -> Sql:
    """`` AND u.d IN (...)``: for an AND whose every phrase is a plain word, the rows its rarest
    word (by the term statistics) occurs in, the only rows it can match; else nothing. Exact
    whichever word is taken (a matching row has them all), so the statistics only choose. Not
    where a phrase is a prefix or a column's (the statement's count of such a phrase's rows is
    then taken over the hits: they must all be there). The six-word AND of
    ``why does the docker container miss its volume after a restart`` at 100,000 files: 91,199
    rows summed for 468 matches before, 15,373 after (209 → 117 ms)."""
    root = expression.root
    if (
        table.term_stats is None
        or not isinstance(root, And)
        or len(phrases) < 2
        or not all(_one_word(p) for p in phrases)
        or not all(isinstance(child, Phrase) for child in root.children)
    ):
        return Sql()
    words = sorted({p.tokens[0] for p in phrases})
    return Sql().add(
        f" AND u.d IN (SELECT unnest(r.docs) FROM {table.name} AS r WHERE r.term = coalesce("
        f"(SELECT s.term FROM {table.term_stats} AS s WHERE s.term = ANY(%s::text[])"
        " ORDER BY s.df, s.term LIMIT 1), %s))",
        words,
        words[0],
    )


def hits(
    table: PostingsTable, expression: Expression, weights: Sequence[float], restrict: Sequence[int] | None
) -> Sql:
    """``SELECT id, f0, f1, ...``: every row some phrase occurs in (among ``restrict``), with each
    phrase's frequency there (NULL where it does not occur)."""
    phrases = expression.phrases
    if table.packed and len(phrases) > 1 and all(len(p.tokens) <= 1 for p in phrases):
        return _words_at_once(table, expression, phrases, weights, restrict)
    length = ", len" if table.packed else ""  # a packed table's rows come with their length
    if len(phrases) == 1:
        only = phrase_rows(table, phrases[0], weights, restrict)
        return Sql().add(f"SELECT id{length}, f AS f0 FROM (").extend(only).add(") AS p")
    columns = ", ".join(f"max(f) FILTER (WHERE k = {p.number}) AS f{p.number}" for p in phrases)
    longest = ", max(len) AS len" if table.packed else ""
    sql = Sql().add(f"SELECT id{longest}, {columns} FROM (")
    for i, phrase in enumerate(phrases):
        if i:
            sql.add(" UNION ALL ")
        sql.add(f"SELECT {phrase.number} AS k, id{length}, f FROM (").extend(
            phrase_rows(table, phrase, weights, restrict)
        ).add(f") AS p{phrase.number}")
    return sql.add(") AS every_phrase GROUP BY id")


def idf(n_rows: int, n_hit: int) -> float:
    ratio = (n_rows - n_hit + 0.5) / (n_hit + 0.5)
    value = math.log(ratio) if ratio > 0.0 else 0.0  # not positive only if the statistics drifted
    return value if value > 0.0 else IDF_CLAMP


def score(expression: Expression, idfs: Sequence[str], avgdl: str, length: str) -> str:
    """The SQL of a matching row's bm25 (``length``: its token count; ``idfs`` and ``avgdl`` SQL
    expressions), ranking.py's Evaluation.bm25 term by term: ``-1.0 * (0.0 + part_0 + ...)`` in
    phrase order."""
    norm = f"({_float(K1)} * ({_float(1 - B)} + {_float(B)} * {length}::float8 / {avgdl}))"
    parts = [_float(0.0)]
    active = _active(expression)
    for phrase in expression.phrases:
        if phrase.number not in active:
            continue  # never counts: ranking.py adds idf * 0 / (...), that is +0.0
        f = f"h.f{phrase.number}"
        part = f"{idfs[phrase.number]} * (({f} * {_float(K1 + 1.0)}) / ({f} + {norm}))"
        conditions = active[phrase.number]
        if conditions:
            part = f"CASE WHEN {' AND '.join(conditions)} THEN {part} ELSE {_float(0.0)} END"
        parts.append(part)
    total = parts[0]
    for part in parts[1:]:
        total = f"({total} + {part})"
    return f"{_float(-1.0)} * {total}"


def matches(expression: Expression) -> str:
    return _match(expression.root)


def ranked(
    table: PostingsTable,
    expression: Expression,
    weights: Sequence[float],
    restrict: Sequence[int] | None,
    idf_values: Sequence[float],
    totals: tuple[int, int],
    more: str = "",
    join: bool = True,
) -> Sql:
    """``SELECT id, score[, more] FROM ... WHERE ...``: the rows the expression matches (among
    ``restrict``) with their bm25 from these IDFs and totals (computed here); the row's table is
    ``r``, for the caller's conditions and order (``join=False``: not read, where nothing needs
    it and the postings carry the rows' lengths)."""
    n_rows, n_tokens = totals
    avgdl = float(n_tokens) / float(n_rows) if n_rows else 1.0
    bm25 = score(expression, [_float(v) for v in idf_values], _float(avgdl), _length(table))
    return (
        Sql()
        .add(f"SELECT h.id AS id, {bm25} AS score{', ' + more if more else ''} FROM (")
        .extend(hits(table, expression, weights, restrict))
        .add(f") AS h{_rows(table, join)} WHERE {matches(expression)}")
    )


def _length(table: PostingsTable) -> str:
    """A matching row's token count: from its postings where packed, else its table's."""
    return "h.len" if table.packed else "r.fts_tokens"


def _rows(table: PostingsTable, join: bool) -> str:
    return f" JOIN {table.rows} AS r ON r.id = h.id" if join or not table.packed else ""


def _counted(table: PostingsTable, phrase: Phrase, known: int | None, restrict: Sequence[int] | None) -> Sql:
    """SQL of how many rows of the whole table the phrase occurs in."""
    if known is not None:
        return Sql().add(str(int(known)))
    if table.term_stats is not None and _one_word(phrase):
        # Before counting ``h``: a count over h's rows per word (each an InitPlan over all of them,
        # h spilled to disk) was 190 of a seven-word query's 541 ms at 100,000 files.
        df = f"coalesce((SELECT df FROM {table.term_stats} WHERE term = %s), 0)"
        return Sql().add(df, phrase.tokens[0])
    if restrict is None:
        return Sql().add(f"(SELECT count(f{phrase.number}) FROM h)")  # h holds every row it is in
    return Sql().add("(SELECT count(*) FROM (").extend(phrase_rows(table, phrase, (), None)).add(") AS p)")


def ranked_in_server(
    table: PostingsTable,
    expression: Expression,
    weights: Sequence[float],
    restrict: Sequence[int] | None,
    known: Sequence[int | None],
    more: str = "",
    join: bool = True,
) -> Sql:
    """As :func:`ranked`, with the statistics read and the IDFs computed in the same statement
    (``known``: each phrase's n where the read block knows it). Each row ends with what the
    server used: the table's rows and tokens, each phrase's n, each phrase's IDF."""
    phrases = expression.phrases
    stats = Sql().add("SELECT t.n_rows, t.n_tokens")
    for phrase in phrases:
        counted = _counted(table, phrase, known[phrase.number], restrict)
        stats.add(", ").extend(counted).add(f" AS n{phrase.number}")
    stats.add(f" FROM ({table.totals}) AS t(n_rows, n_tokens)")
    half = _float(0.5)
    ratios = ", ".join(
        f"((s.n_rows - s.n{p.number})::float8 + {half}) / (s.n{p.number}::float8 + {half}) AS x{p.number}"
        for p in phrases
    )
    logs = ", ".join(
        f"CASE WHEN x.x{p.number} > 0 AND ln(x.x{p.number}) > 0 THEN ln(x.x{p.number})"
        f" ELSE {_float(IDF_CLAMP)} END AS idf{p.number}"
        for p in phrases
    )
    avgdl = f"CASE WHEN x.n_rows > 0 THEN x.n_tokens::float8 / x.n_rows::float8 ELSE {_float(1.0)} END"
    bm25 = score(expression, [f"i.idf{p.number}" for p in phrases], "i.avgdl", _length(table))
    numbers = [p.number for p in phrases]
    used = ", ".join(
        ["i.n_rows", "i.n_tokens", *(f"i.n{n}" for n in numbers), *(f"i.idf{n}" for n in numbers)]
    )
    return (
        Sql()
        .add("WITH h AS MATERIALIZED (")
        .extend(hits(table, expression, weights, restrict))
        .add("), s AS MATERIALIZED (")
        .extend(stats)
        # Materialized: inlined, each use of a statistic in the score became a subquery of its
        # own over ``h``, run again per use (66 of them in a six-word query: 140 of its 234 ms).
        .add(f"), x AS (SELECT s.*, {ratios} FROM s),")
        .add(f" i AS MATERIALIZED (SELECT x.*, {logs}, {avgdl} AS avgdl FROM x)")
        .add(f" SELECT h.id AS id, {bm25} AS score{', ' + more if more else ''}, {used}")
        .add(f" FROM h{_rows(table, join)} CROSS JOIN i WHERE {matches(expression)}")
    )


def run_ranked(
    conn: Any,
    table: PostingsTable,
    expression: Expression,
    weights: Sequence[float],
    restrict: Sequence[int] | None,
    cache: dict[Any, Any] | None,
    finish: Callable[[Sql], Sql],
    more: str = "",
    server_idf: bool = True,
    join: bool = True,
) -> list[tuple[Any, ...]]:
    """The rows of :func:`ranked` (``finish`` adds the caller's conditions, order and limit) in one
    round trip: the server computes the IDFs with its ``ln``, and they are checked against
    ``math.log`` here (FTS5's, as ranking.py computes them); where one differs in the last bit (a
    server with another libm), the rows are scored again with the IDFs computed here, so the
    scores are always FTS5's. ``server_idf=False`` goes that second way at once; ``join=False``
    leaves the rows' table out (``finish`` must not need ``r``). Where the read
    block knows the totals and every phrase's n already, the IDFs are computed here and the
    statement is the plain one."""
    phrases = expression.phrases
    known = [cache.get(_frequency_key(table, p)) if cache is not None else None for p in phrases]
    _remember_words(table, phrases, cache)
    totals = None if cache is None else cache.get(("totals", table.name))
    if totals is not None and all(n is not None for n in known):
        # Everything the IDFs need is known: computed here, the statement is the plain one.
        counts = [int(n) for n in known if n is not None]
    elif server_idf:
        sql = finish(ranked_in_server(table, expression, weights, restrict, known, more, join))
        rows = conn.execute(sql.sql, sql.params).fetchall()
        if not rows:
            return []
        width = len(rows[0]) - 2 - 2 * len(phrases)
        n_rows, n_tokens, *rest = rows[0][width:]
        counts, used = [int(n) for n in rest[: len(phrases)]], rest[len(phrases) :]
        totals = int(n_rows), int(n_tokens)
        if cache is not None:
            cache[("totals", table.name)] = totals
            for phrase, n in zip(phrases, counts, strict=True):
                cache[_frequency_key(table, phrase)] = n
        if all(idf(totals[0], n) == float(u) for n, u in zip(counts, used, strict=True)):
            return [tuple(row[:width]) for row in rows]
    else:
        totals = table_totals(conn, table, cache)
        counts = phrase_frequencies(conn, table, phrases, cache)
    idf_values = [idf(totals[0], n) for n in counts]
    sql = finish(ranked(table, expression, weights, restrict, idf_values, totals, more, join))
    return [tuple(row) for row in conn.execute(sql.sql, sql.params)]


def _plain_words(table: PostingsTable, expression: Expression) -> list[str] | None:
    """The words of an expression that is one word or an OR of words (no prefix, no column
    filter), over packed postings; else None."""
    root = expression.root
    phrases = root.children if isinstance(root, Or) else [root]
    if not table.packed or not all(isinstance(p, Phrase) and _one_word(p) for p in phrases):
        return None
    return sorted({p.tokens[0] for p in phrases if isinstance(p, Phrase)})


def matching(table: PostingsTable, expression: Expression, restrict: Sequence[int] | None) -> Sql:
    """``SELECT id FROM ... WHERE ...``: the rows the expression matches (among ``restrict``)."""
    words = _plain_words(table, expression)
    if words is not None:
        # A row matches an OR of words where it has an entry of one of them: only the blocks'
        # ``docs`` are read, and no frequency is summed (a long query's count of its OR: 450 ms
        # at 100,000 files with the sums, one FILTER per word).
        sql = Sql().add(
            "SELECT DISTINCT u.d::bigint AS id FROM (SELECT p.term, p.docs, unnest(p.docs) AS d"
            f" FROM {table.name} AS p) AS u WHERE u.term = ANY(%s::text[])",
            words,
        )
        if restrict is not None:
            sql.extend(_restricted("u", "u", restrict, blocks=False))
        return sql
    return (
        Sql()
        .add("SELECT h.id AS id FROM (")
        .extend(hits(table, expression, (), restrict))
        .add(f") AS h WHERE {matches(expression)}")
    )


def table_totals(conn: Any, table: PostingsTable, cache: dict[Any, Any] | None) -> tuple[int, int]:
    """(rows, tokens) of the whole table; read once per read block (``cache``)."""
    key = ("totals", table.name)
    if cache is not None and key in cache:
        return cache[key]  # type: ignore[no-any-return]
    row = conn.execute(table.totals).fetchone()
    totals = int(row[0]), int(row[1])
    if cache is not None:
        cache[key] = totals
    return totals


def _frequency_key(table: PostingsTable, phrase: Phrase) -> tuple[Any, ...]:
    return ("n", table.name, phrase.tokens, phrase.prefix, phrase.columns)


def _one_word(phrase: Phrase) -> bool:
    return len(phrase.tokens) == 1 and not phrase.prefix and phrase.columns is None


def _pending(table: PostingsTable, cache: dict[Any, Any] | None) -> dict[Any, Phrase]:
    """The one-word phrases of the read block's expressions whose frequency is not known yet
    (only where term statistics make them cheap to read together)."""
    if cache is None or table.term_stats is None:
        return {}
    return cache.setdefault(("pending words", table.name), {})  # type: ignore[no-any-return]


def _remember_words(table: PostingsTable, phrases: Sequence[Phrase], cache: dict[Any, Any] | None) -> None:
    pending = _pending(table, cache)
    if cache is None or table.term_stats is None:
        return
    for phrase in phrases:
        key = _frequency_key(table, phrase)
        if _one_word(phrase) and key not in cache:
            pending[key] = phrase


def phrase_frequencies(
    conn: Any, table: PostingsTable, phrases: Sequence[Phrase], cache: dict[Any, Any] | None
) -> list[int]:
    """For each phrase, how many rows of the whole table it occurs in (FTS5's n for its IDF), in
    one statement for those ``cache`` (the read block's) does not know yet. One word's comes from
    the table's term statistics where it has them (a common word's postings are many)."""
    keys = [_frequency_key(table, p) for p in phrases]
    known: dict[Any, int] = {} if cache is None else cache
    missing = [(key, phrase) for key, phrase in zip(keys, phrases, strict=True) if key not in known]
    if missing:
        # The words of the read block's other expressions come along: a search asks for its
        # words' frequencies one expression at a time, each a round trip otherwise.
        pending = _pending(table, cache)
        missing += [(key, phrase) for key, phrase in pending.items() if key not in known]
        pending.clear()
        unique = list(dict((key, phrase) for key, phrase in missing).items())
        sql = Sql().add("SELECT ")
        for i, (_, phrase) in enumerate(unique):
            if i:
                sql.add(", ")
            if table.term_stats is not None and _one_word(phrase):
                sql.add(f"coalesce((SELECT df FROM {table.term_stats} WHERE term = %s), 0)", phrase.tokens[0])
            else:
                sql.add("(SELECT count(*) FROM (").extend(phrase_rows(table, phrase, (), None)).add(") AS p)")
        row = conn.execute(sql.sql, sql.params).fetchone()
        for (key, _), n in zip(unique, row, strict=True):
            known[key] = int(n)
    return [known[key] for key in keys]


def idfs(
    conn: Any, table: PostingsTable, expression: Expression, n_rows: int, cache: dict[Any, Any] | None
) -> list[float]:
    return [idf(n_rows, n) for n in phrase_frequencies(conn, table, expression.phrases, cache)]
