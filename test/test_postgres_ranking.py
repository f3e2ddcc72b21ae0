"""The PostgreSQL backend's bm25 is FTS5's, to the last bit: checked against FTS5 itself.

The documents of a real SQLite index (the sample collection, Chinese included, and the chunking
fixtures' code) are tokenized as the PostgreSQL backend does it (store/postgres/tokens.py) into
in-memory positions; every expression keyword search writes for a list of queries (all terms,
any clause, any word, one term at a time, an identifier as a phrase, the definitions filters)
is then evaluated by store/postgres/ranking.py and by FTS5, and must match the same documents
with exactly the same scores. No server is needed: this is the ranking arithmetic alone.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from tansaku.search.query import fts_adjacent, fts_expression, fts_term, parse_query, required_terms
from tansaku.store import db
from tansaku.store import documents as sqlite_store
from tansaku.store.postgres.expression import parse
from tansaku.store.postgres.ranking import Evaluation
from tansaku.store.postgres.tokens import column_tokens

from .conftest import REPO, CliResult

QUERIES = [
    "backup",
    "restore backups",
    "how do I restore a backup from yesterday",
    "tar -x",
    "tar -czf backup.tar.gz",
    "--preserve-root",
    "chmod permissions",
    "compress*",
    '"exit code"',
    "config -yaml",
    "os.path.join",
    "Py_INCREF",
    "RateLimiter allow",
    "def __init__",
    "压缩",
    "恢复 备份",
    "权限 chmod",
    "the",
    "zebrafish the",
    "meeting 2024",
]


@pytest.fixture
def corpus(cli: Callable[..., CliResult], tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(REPO / "fixtures" / "sample", root / "sample")
    shutil.copytree(REPO / "fixtures" / "chunking", root / "chunking")
    result = cli("collection", "add", root, "--name", "corpus", "--mask", "**/*")
    assert result.exit_code == 0, result.stderr
    return root


def _expressions() -> list[str]:
    found: list[str] = []
    for query in QUERIES:
        parsed = parse_query(query)
        clauses = required_terms(parsed)
        for mode in ("all", "clauses", "any"):
            expression = fts_expression(clauses, mode)
            if expression is not None:
                found.append(expression)
        for term in parsed.positive:
            found.append(fts_term(term))
            found.append(f"{{title headings}} : {fts_adjacent(term)}")
            found.append(f"options : {fts_term(term)}")
            if term.kind == "ident":
                found.append(fts_adjacent(term))
    return list(dict.fromkeys(found))


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
def test_every_expression_scores_as_fts5_does(corpus: Path, index_path: Path) -> None:
    conn = db.open_read(index_path)
    ids = [row[0] for row in conn.execute("SELECT id FROM documents")]
    positions: dict[str, dict[tuple[int, int], list[int]]] = defaultdict(dict)
    lengths: dict[int, int] = {}
    for doc_id in ids:
        fts = sqlite_store.stored_keywords(conn, doc_id)
        assert fts is not None
        columns = column_tokens([fts.path, fts.title, fts.body, fts.headings, fts.options])
        lengths[doc_id] = sum(len(column) for column in columns)
        for number, column in enumerate(columns):
            for at, token in column:
                positions[token].setdefault((doc_id, number), []).append(at)
    n_tokens = sum(lengths.values())

    def lookup(token: str, prefix: bool) -> dict[tuple[int, int], list[int]]:
        if not prefix:
            return positions.get(token, {})
        merged: dict[tuple[int, int], list[int]] = defaultdict(list)
        for name, places in positions.items():
            if name.startswith(token):
                for key, at in places.items():
                    merged[key].extend(at)
        return {key: sorted(at) for key, at in merged.items()}

    expressions = _expressions()
    assert len(expressions) > 100
    matched = 0
    for expression in expressions:
        for weights in (sqlite_store.BM25_WEIGHTS, sqlite_store.PROSE_WEIGHTS):
            fts5 = sqlite_store.phrase_bm25(conn, expression, ids, weights)
            ours = Evaluation(parse(expression), lookup).bm25(ids, weights, len(ids), n_tokens, lengths)
            assert ours == fts5, expression
            matched += len(fts5)
        assert Evaluation(parse(expression), lookup).matches == set(fts5), expression
    assert matched > 500  # the expressions match something: the comparison is not of empty sets
    conn.close()


def test_a_column_filter_and_a_prefix_read_as_fts5_reads_them() -> None:
    expression = parse('"os" AND ("path" OR {title headings} : "join" *) NOT "x y"')
    words = [(p.tokens, p.prefix, p.columns) for p in expression.phrases]
    assert words == [
        (("os",), False, None),
        (("path",), False, None),
        (("join",), True, frozenset({1, 3})),
        (("x", "y"), False, None),
    ]
