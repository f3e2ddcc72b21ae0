"""Generation, query expansion, yes/no reranking and the LLM cache, with a real (base) model.

Gemma 3 270M is a base model: these tests check the plumbing (shapes, ranges, determinism,
caching, fallbacks), never whether an expansion or a judgement is any good.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tansaku.hybrid.blend import blend, fixed_ranks
from tansaku.models import generate as gen_mod
from tansaku.models import rerank as rerank_mod
from tansaku.models.generate import Expansion, expand_query, parse_expansion
from tansaku.models.rerank import rerank
from tansaku.store import db
from tansaku.store.llm_cache import LlmCache

from .gemma_fixture import gemma_gguf, requires_gemma
from .models_fixture import requires_llama

QUERY = "how to repair a bicycle puncture"
# One thread: with all cores busy llama.cpp's threads wait on each other, and a single competing
# process (another test run) made two threads 20x slower than one (1.9 against 41 tokens/s).
THREADS = 1


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[LlmCache]:
    conn = db.open_write(tmp_path / "i.sqlite")
    yield LlmCache(conn)
    conn.close()


@pytest.fixture(scope="module")
def generator() -> Iterator[Any]:
    from tansaku.models.llama_causal import LlamaGenerator

    with LlamaGenerator(gemma_gguf(), n_threads=THREADS) as model:
        yield model


@pytest.fixture(scope="module")
def scorer() -> Iterator[Any]:
    from tansaku.models.llama_causal import LlamaYesNoScorer

    with LlamaYesNoScorer(gemma_gguf(), n_threads=THREADS) as model:
        yield model


class CountingGenerator:
    """Wraps a generator (or a fixed reply) and counts generate() calls."""

    def __init__(self, inner: Any = None, reply: str | None = None, error: Exception | None = None) -> None:
        self.inner, self.reply, self.error = inner, reply, error
        self.calls = 0

    @property
    def model_sha256(self) -> str:
        return self.inner.model_sha256 if self.inner is not None else "fixed-reply-model"

    def generate(
        self,
        prompt: str,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
        timeout: float | None = None,
        stable_prefix: int = 0,
    ) -> str:
        self.calls += 1
        self.grammar = grammar
        if self.error is not None:
            raise self.error
        if self.reply is not None:
            return self.reply
        text = self.inner.generate(
            prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            stop=stop,
            grammar=grammar,
            timeout=timeout,
            stable_prefix=stable_prefix,
        )
        self.timed_out = self.inner.timed_out
        return str(text)


class CountingScorer:
    def __init__(self, inner: Any = None, error: Exception | None = None) -> None:
        self.inner, self.error = inner, error
        self.calls = 0
        self.prompt_version = inner.prompt_version if inner is not None else 1

    @property
    def model_sha256(self) -> str:
        return self.inner.model_sha256 if self.inner is not None else "no-model"

    def score(self, query: str, document: str) -> float:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return float(self.inner.score(query, document))


# -- generation ----------------------------------------------------------------------------


@requires_gemma
def test_generation_is_deterministic_at_temperature_zero(generator: Any) -> None:
    prompt = "A short list of fruits: apple, banana,"
    first = generator.generate(prompt, max_tokens=24)
    second = generator.generate(prompt, max_tokens=24)
    assert first == second
    assert first.strip()


@requires_gemma
def test_generation_respects_max_tokens(generator: Any) -> None:
    text = generator.generate("Once upon a time", max_tokens=5)
    assert 1 <= generator.last_tokens <= 5
    assert len(generator._llm.tokenize(text.encode("utf-8"), add_bos=False)) <= 6  # re-tokenising may split
    with pytest.raises(ValueError):
        generator.generate("Once upon a time", max_tokens=0)


@requires_gemma
def test_generation_stops_before_a_stop_string(generator: Any) -> None:
    text = generator.generate("1, 2, 3, 4, 5, 6, 7, 8,", max_tokens=16, stop=["7"])
    assert "7" not in text


@requires_gemma
def test_loading_and_generating_print_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    from tansaku.models.llama_causal import LlamaGenerator, LlamaYesNoScorer

    capfd.readouterr()
    with LlamaGenerator(gemma_gguf()) as model:
        model.generate("Hello", max_tokens=3)
    with LlamaYesNoScorer(gemma_gguf()) as judge:
        judge.score("greeting", "Hello there")
    out, err = capfd.readouterr()
    assert out == ""
    assert err == ""


@requires_gemma
def test_closed_generator_refuses(tmp_path: Path) -> None:
    from tansaku.models.llama_causal import LlamaGenerator

    model = LlamaGenerator(gemma_gguf(), n_threads=THREADS)
    model.close()
    model.close()  # twice is harmless
    with pytest.raises(RuntimeError, match="closed"):
        model.generate("x", max_tokens=1)


@requires_llama
def test_generator_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    from tansaku.models.llama_causal import LlamaGenerator

    with pytest.raises(FileNotFoundError):
        LlamaGenerator(tmp_path / "absent.gguf")


# -- expansion -----------------------------------------------------------------------------


def test_parse_keeps_typed_lines_only_deduplicated_and_capped() -> None:
    text = "\n".join(
        [
            "lex: bicycle tyre puncture",
            "  LEX :  bicycle   tyre puncture ",  # a duplicate once spaces and case are normalised
            "lex: inner tube repair",
            "lex: How to repair a bicycle puncture",  # the query itself adds nothing
            "lex: puncture kit",
            "lex: fourth puncture line",  # over the cap of three
            "lex: tyre patch",  # shares no word with the query: drift, not an expansion
            "vec: how do I fix a puncture on my bike",
            "some chatter the model added",
            "hyde: Remove the wheel, find the puncture and glue a patch over it.",
            "hyde:   ",
            "vec: how often should I feed a sourdough starter",  # copied from the prompt's example
            "Query: another invented example",
            "lex: belongs to the invented puncture example",
        ]
    )
    parsed = parse_expansion(text, QUERY)
    assert parsed == {
        "lex": ["bicycle tyre puncture", "inner tube repair", "puncture kit"],
        "vec": ["how do I fix a puncture on my bike"],
        "hyde": ["Remove the wheel, find the puncture and glue a patch over it."],
    }


def test_parse_keeps_the_query_language() -> None:
    chinese = "如何 修改 文件 权限"
    text = "\n".join(
        [
            "lex: 文件 权限 命令",
            "lex: change file permissions",
            "vec: 怎样修改文件的权限",
            "hyde: chmod 修改文件权限。",
        ]
    )
    assert parse_expansion(text, chinese) == {
        "lex": ["文件 权限 命令"],  # the English line is another language: dropped
        "vec": ["怎样修改文件的权限"],
        "hyde": ["chmod 修改文件权限。"],
    }
    # An English query keeps its English lines and drops the Chinese ones.
    assert parse_expansion("lex: 修改 文件\nlex: file permission bits\n", "file permissions")["lex"] == [
        "file permission bits"
    ]


def test_expansion_is_constrained_by_the_grammar_and_keeps_the_query_first(cache: LlmCache) -> None:
    fixed = CountingGenerator(
        reply="lex: puncture patch\nvec: fixing a bicycle puncture quickly\n"
        "hyde: Glue the patch over the puncture.\n"
    )
    result = expand_query(QUERY, fixed, cache)
    assert fixed.grammar == gen_mod.EXPANSION_GRAMMAR
    assert result == Expansion(
        query=QUERY,
        lex=[QUERY, "puncture patch"],
        vec=[QUERY, "fixing a bicycle puncture quickly"],
        hyde=["Glue the patch over the puncture."],
    )


def test_intent_is_in_the_prompt_and_the_cache_key(cache: LlmCache) -> None:
    assert "Intent: road bikes" in gen_mod.build_prompt(QUERY, "road bikes")
    assert "Intent" not in gen_mod.build_prompt(QUERY).split("Query: " + QUERY)[1]
    fixed = CountingGenerator(reply="lex: puncture patch\n")
    expand_query(QUERY, fixed, cache)
    expand_query(QUERY, fixed, cache, intent="road bikes")
    expand_query(QUERY, fixed, cache, intent="road bikes")
    assert fixed.calls == 2  # one per intent; the repeat came from the cache


def test_no_generator_falls_back_with_unavailable(cache: LlmCache) -> None:
    result = expand_query(QUERY, None, cache)
    assert result.fallback
    assert (result.lex, result.vec, result.hyde) == ([QUERY], [QUERY], [])
    assert [w.code for w in result.warnings] == ["MODEL_MISSING"]


def test_junk_output_falls_back_with_empty_and_is_cached(cache: LlmCache) -> None:
    junk = CountingGenerator(reply="The weather is nice today.\nQuery: lex: not a line start\n")
    for _ in range(2):
        result = expand_query(QUERY, junk, cache)
        assert result.fallback
        assert (result.lex, result.vec, result.hyde) == ([QUERY], [QUERY], [])
        assert [w.code for w in result.warnings] == ["EXPANSION_FAILED"]
    assert junk.calls == 1


def test_generation_error_falls_back_and_is_not_cached(cache: LlmCache) -> None:
    broken = CountingGenerator(error=RuntimeError("llama_decode returned -1"))
    for _ in range(2):
        result = expand_query(QUERY, broken, cache)
        assert result.fallback
        assert [w.code for w in result.warnings] == [gen_mod.EXPANSION_FAILED]
        assert "llama_decode" in result.warnings[0].message
    assert broken.calls == 2


def test_expansion_works_without_a_cache() -> None:
    fixed = CountingGenerator(reply="vec: bicycle puncture fix\n")
    assert expand_query(QUERY, fixed, None).vec == [QUERY, "bicycle puncture fix"]


@requires_gemma
def test_real_expansion_has_the_typed_shape_and_is_cached(generator: Any, cache: LlmCache) -> None:
    counting = CountingGenerator(generator)
    first = expand_query(QUERY, counting, cache)
    assert counting.calls == 1
    assert first.lex[0] == QUERY and first.vec[0] == QUERY
    assert len(first.lex) <= 4 and len(first.vec) <= 4 and len(first.hyde) <= 3
    assert all(isinstance(s, str) and s.strip() == s and s for s in first.lex + first.vec + first.hyde)
    if first.fallback:  # a base model may produce nothing usable; that must be the clean fallback
        assert [w.code for w in first.warnings] == ["EXPANSION_FAILED"]
    else:
        assert first.warnings == [] and not first.cached

    second = expand_query(QUERY, counting, cache)
    assert counting.calls == 1  # answered from the index
    assert (second.lex, second.vec, second.hyde, second.fallback) == (
        first.lex,
        first.vec,
        first.hyde,
        first.fallback,
    )
    assert second.cached or second.fallback


# -- reranking -----------------------------------------------------------------------------

DOCS = [
    ("a", "To fix a puncture, remove the tyre, find the hole in the inner tube and apply a patch."),
    ("b", "The stock market closed higher on Friday after strong earnings reports."),
    ("c", "To fix a puncture, remove the tyre, find the hole in the inner tube and apply a patch."),
]


@requires_gemma
def test_yes_no_scores_are_probabilities_and_deterministic(scorer: Any) -> None:
    scores = [scorer.score(QUERY, text) for _, text in DOCS]
    assert all(0.0 <= s <= 1.0 and math.isfinite(s) for s in scores)
    assert [scorer.score(QUERY, text) for _, text in DOCS] == scores
    assert scores[0] == scores[2]


@requires_gemma
def test_scorer_cuts_a_document_longer_than_the_window() -> None:
    from tansaku.models.llama_causal import LlamaYesNoScorer

    # A small window keeps the full forward pass cheap (llama.cpp may round it up).
    with LlamaYesNoScorer(gemma_gguf(), n_ctx=128, n_threads=THREADS) as small:
        assert small.context_tokens < 1000
        assert 0.0 <= small.score(QUERY, "puncture repair " * 500) <= 1.0
        with pytest.raises(ValueError, match="too long"):
            small.score("query " * 1000, "short")


@requires_gemma
def test_rerank_scores_in_order_and_caches(scorer: Any, cache: LlmCache) -> None:
    counting = CountingScorer(scorer)
    first = rerank(QUERY, DOCS, counting, cache)
    assert [cid for cid, _ in first.scores] == ["a", "b", "c"]
    assert first.available and first.warnings == []
    assert counting.calls == 2 == first.computed  # identical texts are scored once
    assert all(score is not None and 0.0 <= score <= 1.0 for _, score in first.scores)

    second = rerank(QUERY, list(reversed(DOCS)), counting, cache)
    assert counting.calls == 2 and second.computed == 0
    assert dict(second.scores) == dict(first.scores)

    # One candidate: nothing can move it (hybrid.blend.fixed_ranks(1) == {1}), and it is scored.
    other = rerank("stock market news", DOCS[:1], counting, cache, unmovable={0})
    assert counting.calls == 3 and other.computed == 1  # the query is part of the key


def test_rerank_without_scorer_keeps_order_with_unavailable(cache: LlmCache) -> None:
    result = rerank(QUERY, DOCS, None, cache)
    assert result.scores == [("a", None), ("b", None), ("c", None)]
    assert not result.available
    assert [w.code for w in result.warnings] == [rerank_mod.RERANK_UNAVAILABLE]


def test_rerank_failure_gives_no_partial_scores(cache: LlmCache) -> None:
    result = rerank(QUERY, DOCS, CountingScorer(error=RuntimeError("boom")), cache)
    assert result.scores == [("a", None), ("b", None), ("c", None)]
    assert [w.code for w in result.warnings] == [rerank_mod.RERANK_FAILED]


DISTINCT = [
    ("a", "To fix a puncture, remove the tyre and patch the inner tube."),
    ("b", "The stock market closed higher on Friday."),
    ("c", "A bicycle pump inflates the tyre after the repair."),
]


class RecordingScorer(CountingScorer):
    def __init__(self, inner: Any = None) -> None:
        super().__init__(inner)
        self.texts: list[str] = []

    def score(self, query: str, document: str) -> float:
        self.texts.append(document)
        return super().score(query, document)


def test_only_the_first_fused_rank_is_beyond_any_rerank_score() -> None:
    # Rank 1 blends to 0.75 at worst; rank 2 at best to 0.375 + 0.25, rank 11 to 0.4/11 + 0.6.
    assert fixed_ranks(40) == {1}
    assert fixed_ranks(2) == {1, 2}  # the second cannot pass the first either
    assert fixed_ranks(0) == frozenset()


@requires_gemma
def test_rerank_scores_the_first_candidate_last(scorer: Any, cache: LlmCache, monkeypatch) -> None:
    monkeypatch.setattr(rerank_mod, "_SECONDS_PER_TEXT", {})
    recording = RecordingScorer(scorer)
    result = rerank(QUERY, DISTINCT, recording, cache, unmovable={0})
    assert result.available
    assert recording.texts == [DISTINCT[1][1], DISTINCT[2][1], DISTINCT[0][1]]


def test_a_budget_too_short_for_two_passages_scores_none(cache: LlmCache, monkeypatch) -> None:
    # Measured earlier at 1 s a passage: a 1.5 s budget buys one score, which cannot reorder.
    monkeypatch.setattr(rerank_mod, "_SECONDS_PER_TEXT", {})
    now = rerank_mod.time.time()
    key = rerank_mod.cache_key("no-model")
    cache.put(rerank_mod.SPEED_KIND, key, {"seconds": 1.0, "at": now})
    counting = CountingScorer()  # no model: any call would fail
    result = rerank(QUERY, DISTINCT, counting, cache, budget=1.5, unmovable={0})
    assert counting.calls == 0 and result.scores == [("a", None), ("b", None), ("c", None)]
    assert [w.code for w in result.warnings] == [rerank_mod.RERANK_PARTIAL]
    assert "fewer than two passages" in result.warnings[0].message
    assert "--rerank-budget to 2 s or more" in result.warnings[0].message


def test_the_known_speed_says_before_any_passage_whether_the_budget_can_reorder(
    cache: LlmCache, monkeypatch
) -> None:
    monkeypatch.setattr(rerank_mod, "_SECONDS_PER_TEXT", {})
    assert rerank_mod.budget_too_short("m", 0.75, 40, cache, 1) is None  # not measured yet
    cache.put(
        rerank_mod.SPEED_KIND, rerank_mod.cache_key("m"), {"seconds": 0.5, "at": rerank_mod.time.time()}
    )
    assert rerank_mod.budget_too_short("m", 1.0, 40, cache, 1) is None  # two passages
    notice = rerank_mod.budget_too_short("m", 0.75, 40, cache, 1)
    assert notice is not None and notice.code == rerank_mod.RERANK_PARTIAL
    assert "0 of 40 candidates scored" in notice.message
    assert rerank_mod.budget_too_short("m", 0.75, 2, cache, 2) is None  # nothing could move anyway
    assert rerank_mod.budget_too_short("m", None, 40, cache, 1) is None  # no budget
    # A stale figure of this process gives way to the index's newer one (another process's).
    rerank_mod._SECONDS_PER_TEXT["m"] = (0.1, rerank_mod.time.time() - 2 * rerank_mod.SPEED_TRUSTED_FOR)
    assert rerank_mod.budget_too_short("m", 0.75, 40, cache, 1) is not None  # 0.5 s a passage


@requires_gemma
def test_a_speed_recorded_long_ago_is_measured_again(scorer: Any, cache: LlmCache, monkeypatch) -> None:
    monkeypatch.setattr(rerank_mod, "_SECONDS_PER_TEXT", {})
    long_ago = rerank_mod.time.time() - 2 * rerank_mod.SPEED_TRUSTED_FOR
    key = rerank_mod.cache_key(scorer.model_sha256)
    cache.put(rerank_mod.SPEED_KIND, key, {"seconds": 100.0, "at": long_ago})
    counting = CountingScorer(scorer)
    rerank(QUERY, DISTINCT, counting, cache, budget=30)
    assert counting.calls == 3
    stored = cache.get(rerank_mod.SPEED_KIND, key)
    assert 0 < stored["seconds"] < 100 and stored["at"] > long_ago
    assert rerank_mod._SECONDS_PER_TEXT[scorer.model_sha256][0] == stored["seconds"]


@pytest.mark.parametrize(
    ("rank", "score", "expected"),
    [
        (1, 0.5, 0.75 * 1 + 0.25 * 0.5),  # 0.875
        (3, 0.2, 0.25 + 0.05),  # 0.75/3 + 0.25*0.2
        (4, 1.0, 0.15 + 0.4),  # 0.60/4 + 0.40*1.0
        (10, 0.0, 0.06),  # 0.60/10
        (11, 0.5, 0.4 / 11 + 0.3),  # 0.40/11 + 0.60*0.5
        (40, 1.0, 0.01 + 0.6),  # 0.40/40 + 0.60*1.0
    ],
)
def test_blend_matches_hand_computed_values(rank: int, score: float, expected: float) -> None:
    assert blend(rank, score) == pytest.approx(expected)


def test_blend_rejects_zero_based_ranks() -> None:
    with pytest.raises(ValueError):
        blend(0, 0.5)


# -- the cache itself ----------------------------------------------------------------------


def test_cache_round_trips_json_and_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    conn = db.open_write(path)
    LlmCache(conn).put("expand", "k1", {"lex": ["ラーメン"], "n": 1.5})
    LlmCache(conn).put("expand", "k1", {"lex": ["replaced"]})
    conn.close()
    reader = db.open_read(path)
    cache = LlmCache(reader)
    assert cache.get("expand", "k1") == {"lex": ["replaced"]}
    assert cache.get("rerank", "k1") is None  # kinds are separate
    assert cache.get_many("expand", ["k1", "k2", "k1"]) == {"k1": {"lex": ["replaced"]}}
    # A read-only index cannot take new entries: that is skipped, not an error.
    cache.put("expand", "k2", 1)
    assert cache.write_failures == 1 and cache.get("expand", "k2") is None
    reader.close()


@requires_gemma
def test_real_expansion_is_grammar_shaped_and_stops_at_its_timeout(generator: Any) -> None:
    output = generator.generate(
        gen_mod.build_prompt(QUERY), max_tokens=48, grammar=gen_mod.EXPANSION_GRAMMAR, stop=("\n\n",)
    )
    assert output and not generator.timed_out
    lines = output.split("\n")
    # Every finished line is typed; only the last may be cut by max_tokens.
    assert all(line.split(": ", 1)[0] in ("lex", "vec", "hyde") for line in lines[:-1] if line)
    result = expand_query(QUERY, CountingGenerator(generator), None, timeout=0.0)
    assert result.warnings and result.warnings[0].code == "TIMEOUT"


def test_a_line_made_only_of_the_querys_own_words_is_dropped() -> None:
    # A base model often answers with a part of the query: it adds no word to find, and as its
    # own list it only reweighs the query's words (measured: it moved zh-docs ranks both ways).
    parsed = parse_expansion(
        "lex: 系统时间不一致\nlex: 系统 时间 日志\nvec: read file line by line\nvec: read a file in python\n",
        "系统时间和硬件时间不一致怎么办",
    )
    assert parsed["lex"] == ["系统 时间 日志"]
    english = parse_expansion("lex: read file line by line\nlex: read file lines python\n", QUERY_READ)
    assert english["lex"] == ["read file lines python"]


QUERY_READ = "how do I read a file line by line"


def _expand_with(model: Any, query: str) -> str:
    return str(
        model.generate(
            gen_mod.build_prompt(query),
            max_tokens=24,
            grammar=gen_mod.EXPANSION_GRAMMAR,
            stable_prefix=len(gen_mod._STABLE_PREFIX),
        )
    )


@requires_gemma
def test_a_stable_prefix_is_restored_and_gives_the_same_output(generator: Any) -> None:
    first = _expand_with(generator, "copy a folder recursively")
    generator.generate("Unrelated text, as a scorer sharing the context would leave", max_tokens=4)
    again = _expand_with(generator, "copy a folder recursively")
    assert generator.reused_prefix_tokens > 100  # the few-shot part was restored, not evaluated
    assert again == first
    other = _expand_with(generator, "rotate log files")
    assert generator.reused_prefix_tokens > 100
    from tansaku.models.llama_causal import LlamaGenerator

    with LlamaGenerator(gemma_gguf(), n_threads=THREADS) as fresh:
        assert _expand_with(fresh, "rotate log files") == other
        assert fresh.reused_prefix_tokens == 0


@requires_gemma
def test_a_stored_prefix_state_serves_a_new_process_with_the_same_output() -> None:
    from tansaku.models.llama_causal import LlamaGenerator

    with LlamaGenerator(gemma_gguf(), n_threads=THREADS) as first:
        made = _expand_with(first, "rotate log files")
        assert first.made_prefix_state
        state = first.prefix_state
    assert state is not None
    with LlamaGenerator(gemma_gguf(), n_threads=THREADS) as second:
        second.adopt_prefix_state(*state)
        assert _expand_with(second, "rotate log files") == made
        assert second.reused_prefix_tokens == len(state[0]) and not second.made_prefix_state
    # A state this build cannot take (cut short, zeroed) is evaluated afresh: same output.
    for broken in (state[1][: len(state[1]) // 2], bytes(len(state[1]))):
        with LlamaGenerator(gemma_gguf(), n_threads=THREADS) as third:
            third.adopt_prefix_state(state[0], broken)
            assert _expand_with(third, "rotate log files") == made
            assert third.reused_prefix_tokens == 0 and third.made_prefix_state


@requires_gemma
def test_expansion_stores_the_prefix_state_for_the_next_process(cache: LlmCache) -> None:
    from tansaku.models.llama_causal import LlamaGenerator

    with LlamaGenerator(gemma_gguf(), n_threads=THREADS) as first:
        gen_mod.expand_query("rotate log files", first, cache)
        key = gen_mod._state_key(first)
    assert key is not None and len(cache.get_many(gen_mod.STATE_KIND, [key])) == 1
    with LlamaGenerator(gemma_gguf(), n_threads=THREADS) as later:
        gen_mod.expand_query("merge two folders", later, cache)  # not cached: it generates
        assert later.reused_prefix_tokens > 100


def test_only_the_newest_prompt_states_are_kept(tmp_path: Path) -> None:
    from tansaku.store import db
    from tansaku.store.llm_cache import KEEP_NEWEST, open_cache

    index = tmp_path / "index.sqlite"
    db.open_write(index).close()
    cache = open_cache(index)
    assert cache is not None
    keep = KEEP_NEWEST["prefix-state"]
    for i in range(keep + 2):
        cache.put("prefix-state", f"model-{i}", {"blob": "x" * 10})
        cache.put("expand", f"query-{i}", ["lex: a"])
    kept = sorted(cache.get_many("prefix-state", [f"model-{i}" for i in range(keep + 2)]))
    # Written within one second, the states tie on created_at: the one just written always stays.
    assert len(kept) == keep and f"model-{keep + 1}" in kept
    assert len(cache.get_many("expand", [f"query-{i}" for i in range(keep + 2)])) == keep + 2
    cache.close()
