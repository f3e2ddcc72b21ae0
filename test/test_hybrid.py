"""`query`: weighted Reciprocal Rank Fusion, the language trust rule, and the command end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tansaku.hybrid.fusion import RankedList, fuse
from tansaku.hybrid.pipeline import hybrid_query
from tansaku.hybrid.trust import keyword_confidence, vector_peak, vector_weight
from tansaku.types import Hit, Notice, SearchResult, Snippet

pytestmark = pytest.mark.both_backends


def ranked(name: str, keys: str, weight: float = 2.0) -> RankedList:
    return RankedList(name, tuple(keys), tuple(1.0 - i / 10 for i in range(len(keys))), weight)


def test_rrf_sums_weight_over_k_plus_rank_and_adds_the_best_bonus_once() -> None:
    fused = {f.key: f for f in fuse([ranked("keyword", "abc"), ranked("vector", "cad")])}
    # a: keyword #1 and vector #2 -> 2/61 + 2/62, bonus 0.05 (first somewhere)
    assert fused["a"].score == pytest.approx(2 / 61 + 2 / 62 + 0.05)
    assert fused["a"].bonus == 0.05
    # c: keyword #3, vector #1 -> 2/63 + 2/61 + 0.05
    assert fused["c"].score == pytest.approx(2 / 63 + 2 / 61 + 0.05)
    # b: keyword #2 only -> 2/62 + 0.02; d: vector #3 only -> 2/63 + 0.02
    assert fused["b"].score == pytest.approx(2 / 62 + 0.02)
    assert fused["d"].score == pytest.approx(2 / 63 + 0.02)
    assert [f.key for f in fuse([ranked("keyword", "abc"), ranked("vector", "cad")])] == ["a", "c", "b", "d"]


def test_a_distrusted_list_neither_ranks_nor_buys_bonuses() -> None:
    fused = fuse([ranked("keyword", "ab"), ranked("vector", "zyx", weight=0.0)])
    assert [f.key for f in fused] == ["a", "b"]
    half = {f.key: f for f in fuse([ranked("keyword", "ab"), ranked("vector", "z", weight=1.0)])}
    assert half["z"].score == pytest.approx(1 / 61 + 0.05 * 0.5)


def test_candidate_limit_and_ties() -> None:
    fused = fuse([ranked("keyword", "ab"), ranked("vector", "ba")], limit=1)
    assert [f.key for f in fused] == ["a"]  # equal sums: the earlier list's better rank wins


def test_vector_weight_grows_with_its_peak_and_halves_only_for_a_sure_name_lookup() -> None:
    assert vector_weight(0.0, peak=0.25)[0] == pytest.approx(2.0 * 1.5)
    assert vector_weight(0.0, name_lookup=True, keyword_sure=True)[0] == pytest.approx(1.0)
    assert vector_weight(0.0, name_lookup=True, keyword_sure=False)[0] == pytest.approx(2.0)
    assert vector_weight(0.75, peak=0.5)[0] == 0.0  # unreadable stays out, however peaked
    # Keyword confidence is read in raw BM25: 0.96 against 0.91 is 24 against 10.1.
    assert keyword_confidence([0.96, 0.91]) == pytest.approx(1 - (0.91 / 0.09) / 24, abs=1e-3)
    assert keyword_confidence([0.9, 0.9]) == 0.0 and keyword_confidence([0.5]) == 1.0
    assert vector_peak([0.8, 0.6]) == pytest.approx(0.25) and vector_peak([0.5]) == 0.0


def test_vector_weight_follows_what_the_embedder_can_read() -> None:
    assert vector_weight(0.0)[0] == 2.0
    assert vector_weight(0.25)[0] == pytest.approx(1.5)
    weight, reason = vector_weight(0.75)
    assert weight == 0.0 and "cannot read" in reason


def hit(path: str, score: float) -> Hit:
    return Hit(
        docid=path[:6],
        score=score,
        collection="c",
        path=path,
        virtual_path=f"tansaku://c/{path}",
        disk_path=f"/c/{path}",
        title=path,
        contexts=(),
        snippet=Snippet(1, (path,)),
    )


def result(
    mode: str, *paths: str, total: int | None = None, warnings: tuple[Notice, ...] = ()
) -> SearchResult:
    hits = tuple(hit(p, 0.9 - i / 10) for i, p in enumerate(paths))
    return SearchResult("q", mode, hits, total if total is not None else len(hits), 10, warnings)


def test_fused_scores_are_scaled_to_first_everywhere() -> None:
    out = hybrid_query("q", result("search", "a.md", "b.md"), result("vsearch", "a.md", "c.md"), limit=10)
    # The vector list's first result stands 11% above its second (0.9 against 0.8), so the list
    # weighs 2 x (1 + 2 x 0.111) = 2.44: c (vector #2) comes before b (keyword #2).
    assert [h.path for h in out.hits] == ["a.md", "c.md", "b.md"]
    assert out.hits[0].score == pytest.approx(1.0)
    assert 0 < out.hits[2].score < out.hits[1].score < 1
    assert out.mode == "query" and out.used == "keyword+vector"


def test_without_vectors_the_keyword_order_stands_and_says_so() -> None:
    warning = Notice("VECTORS_UNAVAILABLE", "no vectors")
    out = hybrid_query("q", result("search", "a.md", "b.md"), None, warnings=(warning,), limit=10)
    assert [h.path for h in out.hits] == ["a.md", "b.md"]
    assert out.used == "keyword" and out.warnings == (warning,)


def test_an_unreadable_query_drops_the_vector_list() -> None:
    out = hybrid_query(
        "压缩", result("search", "a.md"), result("vsearch", "z.md"), unreadable_share=1.0, explain=True
    )
    assert [h.path for h in out.hits] == ["a.md"]
    assert out.used == "keyword"
    assert out.explain is not None
    assert [w.weight for w in out.explain.lists] == [2.0, 0.0]


def test_explain_records_every_list_rank() -> None:
    out = hybrid_query("q", result("search", "a.md", "b.md"), result("vsearch", "b.md"), explain=True)
    assert out.explain is not None
    by_path = {e.path: e for e in out.explain.hits}
    ranks = {(r.name, r.rank) for r in by_path["tansaku://c/b.md"].ranks}
    assert ranks == {("keyword", 2), ("vector", 1)}


def test_total_is_not_exact_when_a_list_was_capped() -> None:
    out = hybrid_query("q", result("search", "a.md", total=50), result("vsearch", "a.md"))
    assert out.total_exact is False


# --- the command, on a real index -------------------------------------------------------------


@pytest.mark.usefixtures("indexed")
def test_query_without_a_model_returns_keyword_results_with_a_warning(cli) -> None:
    result = cli("query", "restore", "a", "file", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["mode"] == "query" and data["used"] == "keyword"
    search = cli("search", "restore", "a", "file", "--json").json()
    assert [h["path"] for h in data["results"]] == [h["path"] for h in search["results"]]
    assert "MODEL_MISSING" in [w["code"] for w in data["warnings"]]


@pytest.mark.usefixtures("indexed")
def test_query_without_vectors_returns_keyword_results_with_a_warning(cli, model: Path) -> None:
    data = cli("query", "restore", "a", "file", "--json").json()
    assert data["used"] == "keyword" and data["results"]
    assert "VECTORS_UNAVAILABLE" in [w["code"] for w in data["warnings"]]


@pytest.mark.usefixtures("indexed")
def test_query_fuses_keyword_and_vectors_with_the_real_model(cli, model: Path) -> None:
    assert cli("embed").exit_code == 0
    question = "how do I get a deleted file back"
    data = cli("query", question, "--json", "--explain", "-n", "20").json()
    assert data["used"] == "keyword+vector"
    keyword = [h["path"] for h in cli("search", question, "--json", "-n", "40").json()["results"]]
    vector = [
        h["path"]
        for h in cli("vsearch", question, "--json", "-n", "40", "--min-score", "0").json()["results"]
    ]
    fused = [h["path"] for h in data["results"]]
    assert set(fused) == set(keyword) | set(vector)
    if keyword[0] == vector[0]:
        assert fused[0] == keyword[0]
    assert [w["name"] for w in data["explain"]["lists"]] == ["keyword", "vector"]
    first = data["explain"]["hits"][0]
    assert first["fused"] == pytest.approx(sum(r["rrf"] for r in first["ranks"]) + first["bonus"], abs=1e-3)
    text = cli("query", question, "--explain").stdout
    vector_weight = data["explain"]["lists"][1]["weight"]
    assert vector_weight >= 2.0  # read in full, and more when its first result stands out
    assert "explain:" in text and f"list vector: weight {vector_weight:.2f}" in text


@pytest.mark.usefixtures("indexed")
def test_a_chinese_query_the_english_embedder_cannot_read_stays_keyword(cli, model: Path) -> None:
    assert cli("embed").exit_code == 0
    data = cli("query", "压缩", "--json", "--explain").json()
    assert data["used"] == "keyword"
    assert data["results"][0]["path"] == "zh/压缩.md"
    assert data["explain"]["lists"][1]["weight"] == 0.0


@pytest.mark.usefixtures("indexed")
def test_chinese_mixed_with_english_names_stays_keyword_for_an_english_embedder(cli, model: Path) -> None:
    # MiniLM's vocabulary has some of these characters: half of the tokens are unknown, which
    # alone would keep the vector list (at weight 1); its declared language, English, makes
    # 62% of them unreadable.
    assert cli("embed").exit_code == 0
    data = cli("query", "zstd 大多数 情况", "--json", "--explain", "--no-rerank").json()
    vector = data["explain"]["lists"][1]
    assert vector["weight"] == 0.0 and "languages leave out" in vector["reason"], vector
    assert data["used"] == "keyword"
    assert data["results"][0]["path"] == "zh/压缩.md"


@pytest.mark.usefixtures("indexed")
def test_exclusions_hold_for_results_found_by_vectors(cli, model: Path) -> None:
    assert cli("embed").exit_code == 0
    with_laptops = [h["path"] for h in cli("query", "laptop backups", "--json", "--all").json()["results"]]
    assert "notes/2024-04-meeting.md" in with_laptops  # "Laptops skip backups on metered connections"
    without = [h["path"] for h in cli("query", "backups", "-laptop", "--json", "--all").json()["results"]]
    assert without and not any(p.startswith("notes/2024-") for p in without)


def test_the_embedded_text_leaves_exclusions_out() -> None:
    from tansaku.search.query import without_exclusions

    known = {"mtime", "s", "h"}.__contains__
    assert without_exclusions('restore -laptop "a b" -"c d" --user -x', known) == 'restore "a b" --user -x'
    assert without_exclusions("find -mtime du -sh", known) == "find -mtime du -sh"


def test_the_keyword_list_weighs_less_when_its_best_match_lacks_terms() -> None:
    from dataclasses import replace

    from tansaku.hybrid.trust import keyword_weight

    assert keyword_weight(1.0)[0] == 2.0
    assert keyword_weight(0.5)[0] == pytest.approx(0.5)  # 2 x 0.5^2
    keyword = result("search", "a.md", "b.md")
    partial = replace(keyword, hits=tuple(replace(h, matched_terms=1, total_terms=2) for h in keyword.hits))
    out = hybrid_query("q", partial, result("vsearch", "c.md", "a.md"), explain=True, limit=10)
    assert out.explain is not None and out.explain.lists[0].weight == pytest.approx(0.5)
    # vector's first place now outweighs keyword's
    assert [h.path for h in out.hits][:2] == ["c.md", "a.md"]


def test_an_added_line_never_outweighs_its_share_of_the_querys_own_list() -> None:
    from dataclasses import replace

    from tansaku.hybrid.pipeline import Retrieval, fuse_retrievals

    keyword = result("search", "a.md", "b.md")
    # The query's best match has 2 of its 3 terms: 2 x (2/3)^2 = 0.89. The expansion's best
    # match has all of its own terms (2.0 before its x0.5), but may count for at most half of
    # the query's list: 0.44, not 1.0.
    partial = replace(keyword, hits=tuple(replace(h, matched_terms=2, total_terms=3) for h in keyword.hits))
    added = replace(result("search", "c.md", "a.md"), query="q variant")
    out = fuse_retrievals(
        "q",
        [Retrieval("keyword", "keyword", partial), Retrieval("lex 1", "keyword", added, 1.0)],
        explain=True,
        limit=10,
    )
    assert out.explain is not None
    weights = {w.name: w for w in out.explain.lists}
    assert weights["keyword"].weight == pytest.approx(2 * (2 / 3) ** 2)
    assert weights["lex 1"].weight == pytest.approx((2 * (2 / 3) ** 2) / 2)
    assert "capped" in weights["lex 1"].reason and "capped" not in weights["keyword"].reason
    # Uncapped, c (the expansion's first) would come before b (the query's second).
    assert [h.path for h in out.hits] == ["a.md", "b.md", "c.md"]
    # An expansion weaker than the cap keeps its own weight.
    weak = replace(added, hits=tuple(replace(h, matched_terms=1, total_terms=2) for h in added.hits))
    out = fuse_retrievals(
        "q",
        [Retrieval("keyword", "keyword", keyword), Retrieval("lex 1", "keyword", weak, 1.0)],
        explain=True,
    )
    assert out.explain is not None
    assert [w.weight for w in out.explain.lists] == [2.0, pytest.approx(0.25)]


def test_a_name_lookup_halves_the_vector_list() -> None:
    assert vector_weight(0.0, name_lookup=True)[0] == pytest.approx(1.0)
    out = hybrid_query(
        "q", result("search", "a.md"), result("vsearch", "b.md"), name_lookup=True, explain=True
    )
    assert out.explain is not None
    assert [w.weight for w in out.explain.lists] == [2.0, 1.0]
    assert [h.path for h in out.hits] == ["a.md", "b.md"]


def lex_weight(query: str, line: str) -> tuple[float, str]:
    from dataclasses import replace

    from tansaku.hybrid.pipeline import Retrieval, fuse_retrievals

    keyword = replace(result("search", "a.md", "b.md"), query=query)
    added = replace(result("search", "c.md", "a.md"), query=line)
    out = fuse_retrievals(
        query,
        [Retrieval("keyword", "keyword", keyword), Retrieval("lex 1", "keyword", added, 1.0)],
        explain=True,
    )
    assert out.explain is not None
    return out.explain.lists[1].weight, out.explain.lists[1].reason


def test_an_added_keyword_line_weighs_by_the_share_of_the_querys_terms_it_keeps() -> None:
    # Two of the three terms: two thirds of an added line's 1.0.
    weight, reason = lex_weight("apt 源 配置", "apt 源 镜像")
    assert weight == pytest.approx(2 / 3)
    assert "keeps 67% of the query's terms" in reason
    # A variant that keeps every term (and adds one) keeps its weight.
    assert lex_weight("apt 源 配置", "apt 源 配置 sources.list")[0] == pytest.approx(1.0)


def test_an_added_keyword_line_that_keeps_under_half_of_the_query_is_left_out() -> None:
    # Gemma's "apt 启动命令" keeps one of the three terms: another search, not a variant.
    weight, reason = lex_weight("apt 源 配置", "apt 启动命令")
    assert weight == 0.0 and "under half: left out" in reason


def test_an_added_keyword_line_that_only_adds_asking_words_is_left_out() -> None:
    # 怎样 for 怎么, "how to" before the query's words: the query searched again.
    for query, line in (
        ("怎么更改系统默认的文本编辑器", "怎样更改系统默认的文本编辑器"),
        ("install npm", "how to install npm"),
    ):
        weight, reason = lex_weight(query, line)
        assert weight == 0.0 and "adds no word the query lacks" in reason
    assert lex_weight("install npm", "install npm globally")[0] == pytest.approx(1.0)


def test_a_defining_first_result_makes_keyword_search_sure_however_close_its_scores() -> None:
    from dataclasses import replace

    keyword = result("search", "a.md", "b.md")
    keyword = replace(keyword, hits=tuple(replace(h, score=0.95) for h in keyword.hits))
    vector = result("vsearch", "b.md", "a.md")

    def vector_weight_with(definers: tuple[str, ...]) -> tuple[float, str]:
        out = hybrid_query("q", replace(keyword, definers=definers), vector, name_lookup=True, explain=True)
        assert out.explain is not None
        return out.explain.lists[1].weight, out.explain.lists[1].reason

    # Tied scores and no definition first: keyword search is not sure, the vectors keep their
    # weight (more than 2: their first stands out) ...
    unsure, _ = vector_weight_with(())
    assert unsure > 2.0
    assert vector_weight_with(("tansaku://c/b.md",))[0] == pytest.approx(unsure)
    # ... unless its first result defines the name, alone or with others.
    for definers in (("tansaku://c/a.md",), ("tansaku://c/a.md", "tansaku://c/b.md")):
        weight, reason = vector_weight_with(definers)
        assert weight == pytest.approx(unsure / 2)
        assert "its first result defines the name" in reason


def test_in_a_name_lookup_keyword_searchs_leading_definitions_come_first() -> None:
    from dataclasses import replace

    # "help": keyword search ranks argparse and functions (both define it) first and second, and
    # bugs.rst 6th; the vectors rank bugs.rst first. Plain RRF puts bugs.rst second.
    paths = ["argparse.md", "functions.md", "c.md", "d.md", "e.md", "bugs.md"]
    keyword = replace(
        result("search", *paths), definers=("tansaku://c/argparse.md", "tansaku://c/functions.md")
    )
    vector = result("vsearch", "bugs.md", "x.md", "argparse.md")
    plain = hybrid_query("help", keyword, vector, name_lookup=False, limit=10)
    assert [h.path for h in plain.hits][:2] == ["argparse.md", "bugs.md"]
    out = hybrid_query("help", keyword, vector, name_lookup=True, limit=10, explain=True)
    assert [h.path for h in out.hits][:3] == ["argparse.md", "functions.md", "bugs.md"]
    scores = [h.score for h in out.hits]
    assert scores == sorted(scores, reverse=True)
    assert out.explain is not None and any("definitions first" in n for n in out.explain.notes)
    assert out.pinned == 2 and plain.pinned == 0  # reranking keeps the two in their places
    # Without a definition first, the fused order stands.
    unsure = hybrid_query("help", replace(keyword, definers=()), vector, name_lookup=True, limit=10)
    assert [h.path for h in unsure.hits][1] != "functions.md" and unsure.pinned == 0


def test_reranking_keeps_the_leading_definitions_in_place_and_reranks_the_rest() -> None:
    from dataclasses import replace

    from tansaku.hybrid.run import QuerySteps, _rerank
    from tansaku.models.rerank import Reranked

    fused = replace(result("query", "def1.md", "def2.md", "c.md", "d.md", "e.md"), pinned=2)
    sent: list[tuple[list[str], int]] = []

    def reranking(query: str, candidates: list[tuple[str, str]], first_rank: int) -> Reranked:
        sent.append(([key for key, _ in candidates], first_rank))
        return Reranked([(key, 1.0 if key.endswith("e.md") else 0.0) for key, _ in candidates])

    steps = QuerySteps(
        lambda text: fused,
        lambda texts: None,  # type: ignore[arg-type,return-value]
        lambda text: True,
        lambda text, hits: list(hits),
        passages=lambda hits, text, intent: [h.path for h in hits],
        rerank=reranking,
    )
    out, outcome = _rerank(fused, steps, "help", ["help"], None)
    # The definitions are not sent to the reranker; the rest is, ranked from 3.
    assert sent == [(["tansaku://c/c.md", "tansaku://c/d.md", "tansaku://c/e.md"], 3)]
    # e.md (rank 5, a perfect score: 0.12 + 0.4) passes c.md (rank 3: 0.25) but not the lead.
    assert [h.path for h in out.hits] == ["def1.md", "def2.md", "e.md", "c.md", "d.md"]
    scores = [h.score for h in out.hits]
    assert scores == sorted(scores, reverse=True) and outcome is not None


@pytest.mark.sqlite_only("opens the SQLite file")
@pytest.mark.usefixtures("indexed")
def test_is_name_lookup(index_path: Path) -> None:
    from tansaku.search.keyword import is_name_lookup
    from tansaku.store import db

    conn = db.open_read(index_path)
    try:
        assert is_name_lookup(conn, "os.path.join")
        assert is_name_lookup(conn, "restic")  # a lone word may be a name
        assert not is_name_lookup(conn, "how do I restore a file from the backup")
        assert not is_name_lookup(conn, "压缩")
        # A command with its options (an option as typed: one letter, or --long) and an argument.
        assert is_name_lookup(conn, "python -X importtime")
        assert is_name_lookup(conn, "date -d yesterday")
        assert not is_name_lookup(conn, "backup file -X")  # no option right after the first word
        assert not is_name_lookup(conn, "tar -x -z -v -f archive")  # more than four terms
    finally:
        conn.close()


# --- query documents ---------------------------------------------------------------------------


def test_a_query_document_is_parsed_line_by_line() -> None:
    from tansaku.hybrid.document import parse_query_document

    assert parse_query_document("how do I restore a file") is None
    doc = parse_query_document(
        "lex: restic restore\n\nVEC: get a file back\nhyde: Run restic restore.\nintent: laptops"
    )
    assert doc is not None
    assert doc.lines == (
        ("lex", "restic restore"),
        ("vec", "get a file back"),
        ("hyde", "Run restic restore."),
    )
    assert doc.intent == "laptops"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lex: a\nplain words", "line 2 has no type"),
        ("lex: a\nvec:", r"line 2 \(vec:\) is empty"),
        ("intent: x", "no lex:, vec: or hyde: line"),
        ("lex: a\nintent: x\nintent: y", "line 3: a second intent"),
        ("\n".join(f"lex: w{i}" for i in range(11)), "11 sub-searches; at most 10"),
    ],
)
def test_a_malformed_query_document_is_a_usage_error_naming_the_line(text: str, message: str) -> None:
    from tansaku.errors import UsageError
    from tansaku.hybrid.document import parse_query_document

    with pytest.raises(UsageError, match=message):
        parse_query_document(text)


@pytest.mark.usefixtures("indexed")
def test_a_query_document_runs_each_line_as_its_own_list(cli, model: Path) -> None:
    assert cli("embed").exit_code == 0
    data = cli(
        "query", "lex: restore\nlex: snapshots\nvec: get a deleted file back", "--json", "--explain"
    ).json()
    assert [w["name"] for w in data["explain"]["lists"]] == ["lex 1", "lex 2", "vec 1"]
    assert [w["weight"] for w in data["explain"]["lists"]][:2] == [2.0, 1.0]  # a further lex line weighs half
    assert data["used"] == "keyword+vector" and data["results"]
    bad = cli("query", "lex: restore\nnot typed", "--json")
    assert bad.exit_code == 2 and "line 2" in bad.error()["message"]
