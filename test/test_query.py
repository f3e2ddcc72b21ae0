from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlean as sqlite3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tansaku.search.query import Mode, ParsedQuery, Term, fts_expression, fts_term, parse_query
from tansaku.text.cjk import segment

SCHEMA = (
    "CREATE VIRTUAL TABLE fts USING fts5(path, title, body, "
    "tokenize='porter unicode61 remove_diacritics 2', content='', contentless_delete=1)"
)
ROWS = [
    ("a.md", "Running notes", "we run the exact phrase test every day"),
    ("b.md", "Phrase order", "the phrase exact appears reversed here"),
    ("c.md", "Compression", segment("文件压缩和权限管理")),
    ("d.md", "Café", "naïve résumé with (parentheses) and AND OR NOT NEAR words"),
]


@pytest.fixture(scope="module")
def db() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:")
    connection.execute(SCHEMA)
    connection.executemany("INSERT INTO fts(path, title, body) VALUES (?, ?, ?)", ROWS)
    yield connection
    connection.close()


def search(db: sqlite3.Connection, query: str, mode: Mode = "all") -> set[str]:
    expression = fts_expression(parse_query(query), mode)
    if expression is None:
        return set()
    # A contentless table stores no columns, so map rowids back to the inserted paths.
    rows = db.execute("SELECT rowid FROM fts WHERE fts MATCH ?", (expression,)).fetchall()
    return {ROWS[rowid - 1][0] for (rowid,) in rows}


def W(text: str, negated: bool = False) -> Term:
    return Term(text, "word", negated)


def P(text: str, negated: bool = False) -> Term:
    return Term(text, "phrase", negated)


def X(text: str, negated: bool = False) -> Term:
    return Term(text, "prefix", negated)


def I(text: str, negated: bool = False, hyphenated: bool = False) -> Term:  # noqa: E743
    return Term(text, "ident", negated, tuple(text.split()), hyphenated=hyphenated)


def N(text: str) -> Term:
    """``-word``: excluded, unless the index knows it as an option name (resolve_options)."""
    return Term(text, "word", True, option=True)


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("hello world", [W("hello"), W("world")]),
        ("Hello WORLD", [W("hello"), W("world")]),
        ('"exact phrase" other', [P("exact phrase"), W("other")]),
        ('"  spaced   out  "', [P("spaced out")]),
        ('"unbalanced phrase', [P("unbalanced phrase")]),
        ('foo "bar baz', [W("foo"), P("bar baz")]),
        ('foo"bar baz"', [W("foo"), P("bar baz")]),
        ("-negated word", [N("negated"), W("word")]),
        ('-"not this" that', [P("not this", True), W("that")]),
        ("foo-bar", [I("foo bar", hyphenated=True)]),
        ("os.path.join", [I("os path join")]),
        ("Py_INCREF a::b", [I("py incref"), I("a b")]),
        ("project's don't", [W("project"), W("don")]),
        (
            "--user -x -9",
            [
                Term("user", "word", option=True),
                Term("x", "word", option=True),
                Term("9", "word", option=True),
            ],
        ),
        # An option's value is a word of the query, not a part of the option's name.
        ("--omit=dev", [Term("omit", "word", option=True), W("dev")]),
        (
            "tar --exclude=node_modules",
            [W("tar"), Term("exclude", "word", option=True), I("node modules")],
        ),
        # A login shell's message: "-bash:" names bash, it does not exclude it.
        ("-bash: ./deploy.sh", [W("bash"), I("deploy sh")]),
        # A letter with its value attached is that option, never an exclusion of "f1" or "d".
        (
            "cut -d: -f1",
            [W("cut"), Term("d", "word", option=True), Term("f", "word", option=True)],
        ),
        ("sort -k2,2n", [W("sort"), Term("k", "word", option=True)]),
        ("sed -i.bak", [W("sed"), Term("i", "word", option=True)]),
        ("head -20", [W("head"), Term("20", "word", option=True)]),
        ("-foo.bar", [I("foo bar", True)]),
        ("- lonely dash", [W("lonely"), W("dash")]),
        ("ab* c", [X("ab"), W("c")]),
        ("ab** c", [X("ab"), W("c")]),
        ("-ab*", [X("ab", True)]),
        ("* ** *ab a*b", [W("ab"), I("a b")]),
        (
            "cats AND dogs OR NOT birds NEAR",
            [W("cats"), W("and"), W("dogs"), W("or"), W("not"), W("birds"), W("near")],
        ),
        ("title:foo (bar) +baz ^qux", [I("title foo"), W("bar"), W("baz"), W("qux")]),
        ("!!! ... 🎉 -- ( ) _", []),
        ("back\\slash", [I("back slash")]),
        ("Ünïcödé", [W("ünïcödé")]),
        ("repeat repeat", [W("repeat")]),
        ("nul\x00byte", [W("nul"), W("byte")]),
        ("lone\udcffsurrogate", [W("lone"), W("surrogate")]),
        ("", []),
        ("文件压缩", [W("文件"), W("压缩")]),
        ("abc压缩", [W("abc"), W("压缩")]),
        ("-文件压缩", [P("文件 压缩", True)]),
        ("-压缩", [W("压缩", True)]),
        ("压缩*", [X("压缩")]),
        ('"文件压缩"', [P("文件 压缩")]),
    ],
)
def test_parse_query(query: str, terms: list[Term]) -> None:
    assert parse_query(query) == ParsedQuery(tuple(terms))


def test_positive_and_negative() -> None:
    parsed = parse_query('a -bb "c d" -"e f" g*')
    assert parsed.positive == (W("a"), P("c d"), X("g"))
    assert parsed.negative == (N("bb"), P("e f", True))
    assert parsed.highlight_terms == ("a", "c d", "g*")


@pytest.mark.parametrize(
    ("query", "mode", "expression"),
    [
        ("hello world", "all", '"hello" AND "world"'),
        ("hello world", "any", '("hello" OR "world")'),
        ("single", "any", '("single")'),
        ('"exact phrase" pre*', "all", '"exact phrase" AND "pre" *'),
        ('a -bb -"c d"', "all", '"a" NOT "bb" NOT "c d"'),
        ("a b -cc", "any", '("a" OR "b") NOT "cc"'),
        ("os.path x", "all", '("os" AND "path") AND "x"'),
        ("os.path x", "clauses", '(("os" AND "path") OR "x")'),
        ("os.path x", "any", '("os" OR "path" OR "x")'),
        ("x -os.path", "all", '"x" NOT "os path"'),
        ('say"hi', "all", '"say" AND "hi"'),
        ('"say ""hi"""', "all", '"say" AND "hi"'),
        ("NEAR(a b)", "all", '("near" AND "a") AND "b"'),
        ("-only -negatives", "all", None),
        ("", "all", None),
        ("🎉 ***", "any", None),
    ],
)
def test_fts_expression(query: str, mode: Mode, expression: str | None) -> None:
    assert fts_expression(parse_query(query), mode) == expression


def test_embedded_quotes_are_doubled() -> None:
    assert fts_term(W('a"b')) == '"a""b"'
    assert fts_term(X('a"b')) == '"a""b" *'
    assert fts_term(P("a b", True)) == '"a b"'


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="mode"):
        fts_expression(parse_query("a"), "some")  # type: ignore[arg-type]


def test_many_negatives_stay_within_fts5_depth_limit(db: sqlite3.Connection) -> None:
    # Letters only: a dash before a letter and a digit is an option with its value (-f1).
    words = ("x" + "".join("abcdefghij"[int(d)] for d in str(i)) for i in range(400))
    query = "run " + " ".join(f"-{word}" for word in words)
    assert search(db, query) == {"a.md"}


def test_porter_stemming_matches_inflections(db: sqlite3.Connection) -> None:
    assert search(db, "running") == {"a.md"}
    assert search(db, "runs") == {"a.md"}


def test_phrase_requires_adjacency(db: sqlite3.Connection) -> None:
    assert search(db, "exact phrase") == {"a.md", "b.md"}
    assert search(db, '"exact phrase"') == {"a.md"}
    assert search(db, '"phrase exact"') == {"b.md"}


def test_modes_and_negation(db: sqlite3.Connection) -> None:
    assert search(db, "exact reversed") == {"b.md"}
    assert search(db, "exact reversed", "any") == {"a.md", "b.md"}
    assert search(db, "exact -reversed") == {"a.md"}
    assert search(db, 'phrase -"phrase exact"') == {"a.md"}


def test_prefix_and_diacritics(db: sqlite3.Connection) -> None:
    assert search(db, "parenth*") == {"d.md"}
    assert search(db, "cafe resume") == {"d.md"}
    assert search(db, "p*") == {"a.md", "b.md", "d.md"}


def test_operators_typed_by_users_are_words(db: sqlite3.Connection) -> None:
    assert search(db, "AND OR NOT NEAR") == {"d.md"}
    assert search(db, "(parentheses)") == {"d.md"}
    assert search(db, "body:naïve") == set()  # "body" is a word here, not a column
    assert search(db, "naïve:résumé") == {"d.md"}


def test_cjk_words_are_found(db: sqlite3.Connection) -> None:
    assert search(db, "压缩") == {"c.md"}
    assert search(db, "权限管理") == {"c.md"}
    assert search(db, '"压缩"') == {"c.md"}
    assert search(db, '"文件压缩"') == {"c.md"}
    assert search(db, "压缩 -权限") == set()


QUERY_CHARS = [*'"()*:^-+ \\', " AND ", " OR ", " NOT ", " NEAR ", "NEAR(", "a", "b", "压缩", "é", "\x00"]


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.one_of(
        st.text(),
        st.text(alphabet=st.characters(codec="utf-8")),
        st.lists(st.sampled_from(QUERY_CHARS)).map("".join),
        st.text(alphabet='"()*:^-+ ANDORTNEA'),
    ),
    mode=st.sampled_from(["all", "clauses", "any"]),
)
def test_no_query_raises(db: sqlite3.Connection, query: str, mode: Mode) -> None:
    expression = fts_expression(parse_query(query), mode)
    if expression is not None:
        db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (expression,)).fetchone()
