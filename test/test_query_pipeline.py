"""`query`'s full pipeline: probe, expansion, retrieval, fusion, rerank, blend, budgets, fallbacks.

The step logic is checked with stand-in steps (hand-computed cases); the command with the real
test models: MiniLM as the embedder, Gemma 3 270M as generate and as a yes/no reranker. Gemma is
a base model, so those tests check the plumbing (codes, caches, stages, order rules), never the
quality of what it says.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from tansaku.hybrid.blend import blend
from tansaku.hybrid.passages import choose_passage, estimated_tokens, passage_scorer, window
from tansaku.hybrid.reorder import reorder
from tansaku.hybrid.run import QuerySteps, VectorBatch, run_query, strong_probe
from tansaku.models.generate import Expansion
from tansaku.models.rerank import Reranked
from tansaku.types import Hit, Notice, SearchResult, Snippet

from .gemma_fixture import gemma_gguf, requires_gemma
from .models_fixture import requires_minilm

# --- pure parts -----------------------------------------------------------------------------------


def test_reorder_blends_reached_candidates_and_keeps_the_rest_in_fused_order() -> None:
    keys = ["a", "b", "c", "d", "e", "f"]
    scores = {"a": 0.0, "b": 0.1, "c": 0.9, "d": 1.0}  # e and f: the budget ran out
    placed = reorder(keys, scores)
    # Hand-computed: a 0.75*1 + 0.25*0 = 0.75; b 0.375 + 0.025 = 0.4; c 0.25 + 0.225 = 0.475;
    # d 0.6*0.25 + 0.4*1 = 0.55.
    assert [p.key for p in placed] == ["a", "d", "c", "b", "e", "f"]
    assert [round(p.score, 4) for p in placed[:4]] == [0.75, 0.55, 0.475, 0.4]
    assert [p.rrf_rank for p in placed] == [1, 4, 3, 2, 5, 6]
    # Not reached: blend(rank, 0) but never above the one before, so scores fall down the list.
    assert placed[4].score == pytest.approx(min(0.4, blend(5, 0.0)))
    assert placed[4].rerank is None and placed[5].score <= placed[4].score
    assert all(x.score >= y.score for x, y in itertools.pairwise(placed))


def test_a_weak_reranker_cannot_push_the_first_fused_hit_out() -> None:
    placed = reorder(["top", "second"], {"top": 0.0, "second": 1.0})
    assert [p.key for p in placed] == ["top", "second"]  # 0.75 against 0.375 + 0.25


def test_the_first_fused_hit_keeps_its_place_unscored() -> None:
    # The reranker scores rank 1 last; with only ranks 2 and 3 scored, rank 1 still leads, at the
    # least the blend could give it (0.75), and rank 3 passes rank 2 (0.25 + 0.25 > 0.375 + 0).
    placed = reorder(["top", "b", "c", "d"], {"b": 0.0, "c": 1.0})
    assert [p.key for p in placed] == ["top", "c", "b", "d"]
    assert placed[0].score == pytest.approx(0.75) and placed[0].rerank is None
    assert all(x.score >= y.score for x, y in itertools.pairwise(placed))


def hit(path: str, score: float, terms: tuple[int, int] = (1, 1)) -> Hit:
    return Hit(
        docid="abc123",
        score=score,
        collection="c",
        path=path,
        virtual_path=f"tansaku://c/{path}",
        disk_path=f"/c/{path}",
        title=path,
        contexts=(),
        snippet=Snippet(1, ("line",)),
        matched_terms=terms[0],
        total_terms=terms[1],
    )


def result(*hits: Hit, query: str = "q") -> SearchResult:
    return SearchResult(query=query, mode="search", hits=tuple(hits), total=len(hits), limit=40)


def test_strong_probe_needs_a_high_top_score_and_the_next_at_most_half_in_raw_bm25() -> None:
    assert strong_probe(result(hit("a", 0.9), hit("b", 0.8)))  # raw 9 against 4
    assert not strong_probe(result(hit("a", 0.9), hit("b", 0.85)))  # raw 9 against 5.7
    assert strong_probe(result(hit("a", 0.96), hit("b", 0.91)))  # raw 24 against 10.1
    # 0.6: 1.5 times the query's reference evidence (search/score_scale.py)
    assert not strong_probe(result(hit("a", 0.59)))
    assert strong_probe(result(hit("a", 0.61)))
    assert not strong_probe(result(hit("a", 0.7), hit("b", 0.6)))  # raw 2.3 against 1.5
    assert not strong_probe(result())


class Recorder:
    """Stand-in steps that record what each one was asked."""

    def __init__(self, keyword_top: float = 0.5, expansion: Expansion | None = None) -> None:
        self.keyword_texts: list[str] = []
        self.vector_texts: list[list[str]] = []
        self.expanded: list[tuple[str, str | None]] = []
        self.reranked: list[tuple[str, list[str]]] = []
        self.keyword_top = keyword_top
        self.expansion = expansion

    def steps(self, *, expand: bool = True, rerank: bool = True, scores: dict[str, float] | None = None):
        def keyword(text: str) -> SearchResult:
            self.keyword_texts.append(text)
            return result(hit("k1.md", self.keyword_top), hit("k2.md", 0.2), hit("both.md", 0.1), query=text)

        def vectors(texts: Sequence[str]) -> VectorBatch:
            self.vector_texts.append(list(texts))
            return VectorBatch(
                [(result(hit("both.md", 0.8), hit("v1.md", 0.7), query=t), 0.0) for t in texts]
            )

        def expansion(query: str, intent: str | None) -> Expansion:
            self.expanded.append((query, intent))
            return self.expansion or Expansion(
                query=query,
                lex=[query, f"{query} variant"],  # keeps every word: weighs in full
                vec=[query, "semantic variant"],
                hyde=["a passage"],
            )

        def reranking(query: str, candidates: list[tuple[str, str]], first_rank: int) -> Reranked:
            self.reranked.append((query, [key for key, _ in candidates]))
            table = scores or {}
            return Reranked([(key, table.get(key)) for key, _ in candidates])

        return QuerySteps(
            keyword,
            vectors,
            lambda text: False,
            lambda text, hits: list(hits),
            expand=expansion if expand else None,
            passages=(lambda hits, text, intent: [h.path for h in hits]) if rerank else None,
            rerank=reranking if rerank else None,
        )


def run(steps: QuerySteps, query: str = "find the thing", **options) -> SearchResult:
    defaults = {"limit": 10, "min_score": 0.0, "candidate_limit": 40, "explain": True}
    return run_query(query, steps, **{**defaults, **options})


def test_expansion_lines_become_lists_weighing_half_and_vectors_are_embedded_in_one_batch() -> None:
    recorder = Recorder()
    out = run(recorder.steps(rerank=False))
    assert recorder.keyword_texts == ["find the thing", "find the thing variant"]
    assert recorder.vector_texts == [["find the thing", "semantic variant", "a passage"]]
    lists = {w.name: w.weight for w in out.explain.lists}
    # The stand-in vector lists' first result stands 12.5% above the second: x1.25.
    assert lists == pytest.approx(
        {"keyword": 2.0, "lex 1": 1.0, "vector": 2.5, "vec 1": 1.25, "hyde 1": 1.25}
    )
    assert out.used == "hybrid"
    assert [s.stage for s in out.explain.stages] == ["probe", "expansion", "embedding", "retrieval", "fusion"]


def test_a_strong_probe_skips_expansion_unless_there_is_an_intent() -> None:
    recorder = Recorder(keyword_top=0.95)
    out = run(recorder.steps(rerank=False))
    assert recorder.expanded == [] and out.used == "keyword+vector"
    assert any("not expanded" in note for note in out.explain.notes)
    run(recorder.steps(rerank=False), intent="python docs")
    assert recorder.expanded == [("find the thing", "python docs")]


def test_the_intent_is_never_searched_but_reaches_the_reranker() -> None:
    recorder = Recorder()
    run(recorder.steps(scores={}), intent="kitchen sink")
    assert not any("kitchen" in text for text in recorder.keyword_texts)
    assert not any("kitchen" in text for texts in recorder.vector_texts for text in texts)
    assert recorder.reranked[0][0] == "find the thing (kitchen sink)"


def test_rerank_reorders_by_the_blend_and_sets_scores_and_explain() -> None:
    recorder = Recorder()
    plain = run(recorder.steps(rerank=False))
    fused_order = [h.virtual_path for h in plain.hits]
    last = fused_order[-1]
    reranked = run(recorder.steps(scores=dict.fromkeys(fused_order, 0.0) | {last: 1.0}))
    order = [h.virtual_path for h in reranked.hits]
    assert order[0] == fused_order[0]  # rank 1 keeps its place against a perfect rerank score
    rank = fused_order.index(last) + 1
    assert reranked.hits[order.index(last)].score == pytest.approx(blend(rank, 1.0))
    explained = {e.path: e for e in reranked.explain.hits}
    assert explained[last].rerank == 1.0 and explained[last].rrf_rank == rank
    assert reranked.explain.stages[-1].stage == "rerank"


def test_no_rerank_scores_keeps_the_fused_order_with_the_warning() -> None:
    recorder = Recorder()
    plain = run(recorder.steps(rerank=False))
    steps = recorder.steps()
    missing = Notice("MODEL_MISSING", "no rerank model")
    steps = replace(steps, rerank=lambda q, c, first: Reranked([(k, None) for k, _ in c], warnings=[missing]))
    out = run(steps)
    assert [h.virtual_path for h in out.hits] == [h.virtual_path for h in plain.hits]
    assert missing in out.warnings


def test_a_budget_too_short_to_reorder_chooses_no_passage_and_says_so() -> None:
    recorder = Recorder()
    plain = run(recorder.steps(rerank=False))
    steps = recorder.steps()
    too_short = Notice("RERANK_PARTIAL", "the rerank budget (0.75 s) covers fewer than two passages")
    asked: list[int] = []

    def no_passages(hits, text, intent):
        raise AssertionError("no passage is needed")

    def room(count: int, first_rank: int) -> Notice:
        asked.append(count)
        return too_short

    steps = replace(steps, passages=no_passages, rerank_room=room)
    out = run(steps)
    assert asked == [len(plain.hits)]
    assert [h.virtual_path for h in out.hits] == [h.virtual_path for h in plain.hits]
    assert too_short in out.warnings and out.explain.stages[-1].stage == "rerank"
    assert any(note.startswith("reranking skipped: the rerank budget") for note in out.explain.notes)


def test_min_score_and_limit_apply_after_the_blend() -> None:
    recorder = Recorder()
    out = run(recorder.steps(scores={}), limit=2)
    assert len(out.hits) == 2 and out.total >= 2
    floor = run(recorder.steps(scores={}), min_score=0.99)
    assert all(h.score >= 0.99 for h in floor.hits)


def test_a_query_document_is_not_expanded() -> None:
    recorder = Recorder()
    out = run(recorder.steps(rerank=False), query="lex: alpha\nvec: beta gamma")
    assert recorder.expanded == []
    assert [w.name for w in out.explain.lists] == ["lex 1", "vec 1"]


def test_passage_choice_prefers_the_chunk_with_most_query_terms_and_intent_counts_less() -> None:
    lines = ["intro words"] * 3 + ["alpha beta"] + ["filler"] * 3 + ["alpha", "gamma delta"]
    chunks = [(1, 4, ("One",)), (5, 8, ("Two",)), (9, 9, ("Three",))]
    score = passage_scorer(["alpha", "beta"], ["gamma", "delta"])
    assert choose_passage(lines, chunks, score)[2] == ("One",)  # alpha and beta beat alpha alone
    # Two intent words (0.3 each) do not outweigh a query term.
    assert (
        choose_passage(lines, [(5, 8, ()), (9, 9, ("Three",))], passage_scorer(["alpha", "beta"], []))[2]
        == ()
    )
    first, last, _ = choose_passage(lines, [], score)
    assert first <= 4 <= last  # no chunks: the whole document, around its best line


def test_passage_window_stays_within_its_token_estimate() -> None:
    lines = [f"line {i} " + "word " * 30 for i in range(100)]
    first, last = window(lines, 50, 256)
    assert first == 49
    assert sum(estimated_tokens(line) + 1 for line in lines[first:last]) <= 256
    assert estimated_tokens("漢字かな") == 4 and estimated_tokens("abcdefgh") == 2


# --- the command with the real test models -------------------------------------------------------


@pytest.fixture
def models(model: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MiniLM embeds; Gemma generates and reranks (yes/no)."""
    gemma = gemma_gguf()
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", str(gemma))
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", str(gemma))
    return gemma


@requires_minilm
@requires_gemma
@pytest.mark.both_backends  # the cache of model results is kept in either index
@pytest.mark.usefixtures("indexed")
def test_full_query_runs_every_stage_and_caches_expansion_and_rerank_scores(cli, models: Path) -> None:
    assert cli("embed").exit_code == 0
    question = ["how", "do", "I", "get", "a", "deleted", "file", "back"]
    first = cli("query", *question, "--expand", "--json", "--explain", "--rerank-budget", "60", "-n", "20")
    assert first.exit_code == 0, first.stderr
    data = first.json()
    codes = [w["code"] for w in data["warnings"]]
    assert "MODEL_MISSING" not in codes and "RERANK_PARTIAL" not in codes
    assert data["used"] == "hybrid" and data["results"]
    stages = [s["stage"] for s in data["explain"]["stages"]]
    assert stages[0] == "probe" and stages[-1] == "rerank" and "fusion" in stages
    explained = data["explain"]["hits"]
    assert all(e["rerank"] is not None and 0.0 <= e["rerank"] <= 1.0 for e in explained)
    for shown, e in zip(data["results"], explained, strict=True):
        assert shown["score"] == pytest.approx(e["blended"], abs=1e-6)
    again = ["--expand", "--json", "--explain", "--rerank-budget", "60", "-n", "20"]
    second = cli("query", *question, *again).json()
    assert [h["path"] for h in second["results"]] == [h["path"] for h in data["results"]]
    notes = " ".join(second["explain"]["notes"])
    assert "(0 by the model" in notes  # every passage score came from the cache
    if any(n.startswith("expansion:") for n in data["explain"]["notes"]):
        assert "expansion (cached)" in notes


@requires_minilm
@requires_gemma
@pytest.mark.usefixtures("indexed")
def test_a_zero_rerank_budget_keeps_the_fused_order_with_rerank_partial(cli, models: Path) -> None:
    assert cli("embed").exit_code == 0
    words = ["restore", "snapshots", "from", "the", "backup"]
    fused = cli("query", *words, "--json", "--no-rerank", "--no-expand").json()
    partial = cli("query", *words, "--json", "--rerank-budget", "0", "--no-expand").json()
    assert "RERANK_PARTIAL" in [w["code"] for w in partial["warnings"]]
    assert [h["path"] for h in partial["results"]] == [h["path"] for h in fused["results"]]


@requires_minilm
@pytest.mark.usefixtures("indexed")
def test_no_expand_and_no_rerank_load_no_model_and_warn_of_none(cli, model: Path) -> None:
    assert cli("embed").exit_code == 0
    data = cli("query", "restore", "a", "file", "--json", "--no-expand", "--no-rerank").json()
    assert data["used"] == "keyword+vector"
    assert "MODEL_MISSING" not in [w["code"] for w in data["warnings"]]


@requires_minilm
@pytest.mark.usefixtures("indexed")
def test_missing_generate_and_rerank_models_still_give_results_and_say_so(cli, model: Path) -> None:
    assert cli("embed").exit_code == 0
    asked = ("how", "do", "I", "get", "a", "deleted", "file", "back", "--expand", "--rerank", "--json")
    data = cli("query", *asked).json()
    assert data["results"] and data["used"] == "keyword+vector"
    missing = [w["message"] for w in data["warnings"] if w["code"] == "MODEL_MISSING"]
    assert any("generate model" in m for m in missing) and any("rerank model" in m for m in missing)


@pytest.mark.usefixtures("indexed")
def test_a_broken_model_file_costs_its_steps_not_the_query(cli, tmp_path: Path, monkeypatch) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", str(broken))
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", str(broken))
    result = cli("query", "how", "do", "I", "get", "a", "deleted", "file", "back", "--expand", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["results"]
    codes = {w["code"]: w["message"] for w in data["warnings"]}
    # The file is there, so the steps run and fail: each says why, and the search goes on.
    assert "cannot load the generate model" in codes["EXPANSION_FAILED"]
    assert "cannot load the rerank model" in codes["RERANK_SKIPPED"]


def test_the_cli_default_budget_matches_the_pipeline() -> None:
    from tansaku.cli.query import DEFAULT_RERANK_BUDGET as cli_default
    from tansaku.hybrid.steps import DEFAULT_RERANK_BUDGET

    assert cli_default == DEFAULT_RERANK_BUDGET


@pytest.fixture
def cross_encoder(model: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MiniLM embeds; the tests' MiniLM cross-encoder (rank pooling) reranks; no generate model."""
    from .models_fixture import cross_encoder_gguf

    path = cross_encoder_gguf()
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", str(path))
    return path


@requires_minilm
@pytest.mark.usefixtures("indexed")
def test_a_cross_encoder_reranks_and_skips_a_query_it_cannot_read(cli, cross_encoder: Path) -> None:
    assert cli("embed").exit_code == 0
    english = cli("query", "restore", "snapshots", "--json", "--explain", "--rerank-budget", "30").json()
    assert english["used"] == "hybrid"
    assert all(e["rerank"] is not None for e in english["explain"]["hits"])
    assert "RERANK_PARTIAL" not in [w["code"] for w in english["warnings"]]
    # The English vocabulary reads 压缩 as unknown tokens: no reranking, the fused order stands.
    chinese = cli("query", "压缩", "--json", "--explain").json()
    fused = cli("query", "压缩", "--json", "--no-rerank").json()
    skipped = [w["message"] for w in chinese["warnings"] if w["code"] == "RERANK_SKIPPED"]
    assert skipped and "cannot read this query" in skipped[0]
    assert [h["path"] for h in chinese["results"]] == [h["path"] for h in fused["results"]]


def test_the_rerank_budget_is_the_flag_then_the_environment_then_the_default(monkeypatch) -> None:
    from tansaku.hybrid.steps import DEFAULT_RERANK_BUDGET, rerank_budget

    monkeypatch.delenv("TANSAKU_RERANK_BUDGET", raising=False)
    assert rerank_budget(None) == DEFAULT_RERANK_BUDGET
    monkeypatch.setenv("TANSAKU_RERANK_BUDGET", "7.5")
    assert rerank_budget(None) == 7.5 and rerank_budget(1.0) == 1.0
    monkeypatch.setenv("TANSAKU_RERANK_BUDGET", "soon")
    assert rerank_budget(None) == DEFAULT_RERANK_BUDGET


def test_chunks_are_ranked_by_a_cheap_presence_count_that_bounds_the_exact_one() -> None:
    from tansaku.hybrid.passages import presence_scorer

    cheap = presence_scorer(["read file", "lines", "迭代"], ["python"])
    assert cheap("How to READ a whole FILE, line by line (lines)") == 2
    assert cheap("迭代器 in Python") == pytest.approx(1.3)
    exact = passage_scorer(["read file", "lines"], [])
    for text in ["read the file", "file read lines", "nothing here"]:
        assert cheap(text) >= exact(text)


@requires_minilm
@requires_gemma
@pytest.mark.both_backends  # the cache of model results is kept in either index
@pytest.mark.usefixtures("indexed")
def test_a_query_answered_from_the_cache_loads_no_model(cli, models: Path, monkeypatch) -> None:
    from tansaku.models import roles

    assert cli("embed").exit_code == 0
    words = ["restore", "snapshots", "from", "the", "backup", "--no-expand", "--rerank-budget", "60"]
    first = cli("query", *words, "--json").json()
    monkeypatch.setattr(roles, "_LOADED", {})  # as a new process would start
    second = cli("query", *words, "--json").json()
    assert roles._LOADED == {}  # every passage score came from the index
    assert [(h["path"], h["score"]) for h in second["results"]] == [
        (h["path"], h["score"]) for h in first["results"]
    ]
    assert second["used"] == "hybrid"


JUDGED = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts" / "judged"


def test_query_aggregates_transcripts_to_the_level_asked(cli, model: Path) -> None:
    added = cli("collection", "add", "--type", "claude", str(JUDGED / "claude"), "--name", "claude")
    assert added.exit_code == 0, added.stderr
    assert cli("embed").exit_code == 0
    words = ["freeze", "the", "clock", "in", "a", "pytest", "test", "--no-expand", "--no-rerank", "--json"]
    turns = cli("query", *words, "--level", "turn").json()
    sessions = cli("query", *words, "--level", "session").json()
    assert turns["results"] and sessions["results"]
    assert all(h["virtual_path"].rsplit(":", 1)[-1].isdigit() for h in turns["results"])  # SESSION.jsonl:LINE
    assert all(h["virtual_path"].endswith(".jsonl") for h in sessions["results"])
    assert len({h["virtual_path"] for h in sessions["results"]}) == len(sessions["results"])
    assert sessions["results"][0]["path"].endswith("3f6c2a90-5b1d-4e7a-9c28-1d4e8b7a6f01.jsonl")
    assert sessions["used"] == "keyword+vector"


def test_explain_times_the_searches_of_the_lines_as_retrieval() -> None:
    import time

    recorder = Recorder()
    steps = recorder.steps(rerank=False)

    def slow_keyword(text: str) -> SearchResult:
        if text != "find the thing":  # the expansion's lex line, searched in the retrieval step
            time.sleep(0.05)
        return steps.keyword(text)

    def timed_vectors(texts: Sequence[str]) -> VectorBatch:
        return replace(steps.vectors(texts), embed_seconds=0.01)

    out = run(replace(steps, keyword=slow_keyword, vectors=timed_vectors))
    seconds = {s.stage: s.seconds for s in out.explain.stages}
    assert seconds["embedding"] == pytest.approx(0.01)
    assert seconds["retrieval"] >= 0.04  # it read 0 while the searches took their time
