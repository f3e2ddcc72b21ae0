"""Cross-encoder reranking through llama.cpp's rank pooling, and ``open_reranker``'s choice of scorer.

The cross-encoder is MiniLM with a generated head (``convert_cross_encoder_for_tests``, in
models/convert_cross_encoder.py), fitted to tell a passage sharing the query's words from an
unrelated one on probe pairs; the ordering test uses other pairs. It is no relevance model beyond
that.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tansaku.models import convert
from tansaku.models.convert_cross_encoder import convert_cross_encoder_for_tests
from tansaku.models.cross_encoder import LlamaCrossEncoder, open_reranker
from tansaku.models.gguf import file_sha256
from tansaku.models.llama_causal import LlamaYesNoScorer

from .gemma_fixture import gemma_gguf, requires_gemma
from .models_fixture import cross_encoder_gguf, minilm_gguf, requires_llama, requires_minilm

pytestmark = requires_llama

# One thread for the functional tests: with the cores busy, llama.cpp's threads wait on each other
# (see test_models_generate.py). The throughput figures use two, as asked of them.
THREADS = 1
MEASURE_THREADS = 2
# MiniLM's vocabulary.
CLS, SEP = 101, 102

# None of these is among the converter's probe pairs.
HELD_OUT = [
    ("restore file", "How to restore a file from a snapshot.", "Our team meeting moved to Thursday."),
    ("bicycle brakes", "Adjust the bicycle brakes by tightening the cable.",
     "She painted the kitchen walls blue."),
    ("sqlite full text search", "SQLite full text search uses the FTS5 extension.",
     "The hikers reached the summit at dawn."),
    ("machine learning models", "Machine learning models learn patterns from data.",
     "The bakery opens at seven every morning."),
    ("replace car battery", "To replace a car battery, disconnect the negative terminal first.",
     "Jazz emerged in New Orleans."),
    ("password reset email", "Click the link in the password reset email to choose a new password.",
     "Whales are the largest mammals."),
]  # fmt: skip
QUERY = "restore a deleted file from the nightly backup"
DOCUMENTS = [
    "Restore a deleted file from the nightly backup with tansaku restore.",
    "The nightly backup runs at two in the morning.",
    "Quarterly revenue grew by twelve percent.",
    "x",
    "",
    "Backups " * 60,
    "A cat sat on the mat. " * 25,
]
PASSAGE = "The backup tool copies changed files to the archive and restores them on request. "


@pytest.fixture(scope="module")
def reranker() -> Iterator[LlamaCrossEncoder]:
    model = open_reranker(cross_encoder_gguf(), n_threads=THREADS)
    assert isinstance(model, LlamaCrossEncoder)
    with model:
        yield model


@requires_minilm
def test_open_reranker_picks_the_cross_encoder(reranker: LlamaCrossEncoder) -> None:
    assert reranker.prompt_version == 1
    assert reranker.model_family == "bert"
    assert reranker.model_sha256 == file_sha256(cross_encoder_gguf())
    assert reranker.context_tokens == 512


@requires_minilm
def test_the_pair_input_is_cls_query_sep_document_sep(reranker: LlamaCrossEncoder) -> None:
    # llama.cpp's rerank form for a vocabulary that adds BOS ([CLS]) and EOS ([SEP]), no extra SEP.
    tokens = reranker.pair_tokens("backup restore", "Restore files.")
    assert tokens == [CLS, 10200, 9239, SEP, 9239, 6764, 1012, SEP]
    assert reranker.count_tokens("backup restore") == 2


@requires_minilm
def test_scores_are_probabilities_and_deterministic(reranker: LlamaCrossEncoder) -> None:
    first = [reranker.score(QUERY, document) for document in DOCUMENTS]
    assert all(0.0 <= score <= 1.0 for score in first)
    assert [reranker.score(QUERY, document) for document in DOCUMENTS] == first
    assert len(set(first)) > 3  # the head reads the pair, it is not a constant


@requires_minilm
@pytest.mark.parametrize(("query", "related", "unrelated"), HELD_OUT)
def test_a_passage_sharing_the_query_words_scores_higher(
    reranker: LlamaCrossEncoder, query: str, related: str, unrelated: str
) -> None:
    # Measured margins are 0.26 to 0.43, far beyond rounding between CPU builds.
    assert reranker.score(query, related) > reranker.score(query, unrelated) + 0.1


@requires_minilm
def test_batch_equals_one_by_one(reranker: LlamaCrossEncoder) -> None:
    # Enough pairs that each decode packs several and that several decodes are needed.
    documents = [*DOCUMENTS * 4, PASSAGE * 8, *(PASSAGE * n for n in range(1, 6))]
    singles = [reranker.score(QUERY, document) for document in documents]
    single_tokens = sum(len(reranker.pair_tokens(QUERY, document)) for document in documents)
    batch = reranker.score_batch(QUERY, documents)
    assert batch == pytest.approx(singles, abs=1e-4)
    assert reranker.last_prompt_tokens == single_tokens
    assert reranker.score_batch(QUERY, []) == []
    with pytest.raises(TypeError):
        reranker.score_batch(QUERY, "one document")  # type: ignore[arg-type]


@requires_minilm
def test_last_prompt_tokens_counts_the_latest_call(reranker: LlamaCrossEncoder) -> None:
    reranker.score(QUERY, "Restore it.")
    assert reranker.last_prompt_tokens == len(reranker.pair_tokens(QUERY, "Restore it."))


@requires_minilm
def test_a_long_document_is_cut_not_refused(reranker: LlamaCrossEncoder) -> None:
    long_document = PASSAGE * 200  # about 3000 tokens
    tokens = reranker.pair_tokens(QUERY, long_document)
    assert len(tokens) == reranker.context_tokens
    assert tokens[-1] == SEP
    score = reranker.score(QUERY, long_document)
    assert 0.0 <= score <= 1.0
    # Cut at the token level: the same as scoring exactly the tokens that fit.
    assert reranker.last_prompt_tokens == reranker.context_tokens
    assert reranker.score_batch(QUERY, [long_document, "x"])[0] == pytest.approx(score, abs=1e-4)


@requires_minilm
def test_the_query_is_never_cut(reranker: LlamaCrossEncoder) -> None:
    long_query = "backup restore " * 120  # 240 tokens: longer than a typical query, still fits
    head = reranker.pair_tokens(long_query, "")[:-1]  # [CLS] query [SEP]
    assert len(head) == reranker.count_tokens(long_query) + 2
    tokens = reranker.pair_tokens(long_query, PASSAGE * 200)
    assert len(tokens) == reranker.context_tokens
    assert tokens[: len(head)] == head
    with pytest.raises(ValueError, match="query is too long"):
        reranker.score("backup " * 600, "a document")


@requires_minilm
def test_a_rerank_template_gives_the_same_pairs(reranker: LlamaCrossEncoder, tmp_path: Path) -> None:
    # A file's rerank template wins over the token rule, as in llama.cpp's server; one spelling the
    # same form must give the same tokens, and the query's text cannot forge a special token.
    src = convert.find_minilm_package()
    assert src is not None
    path = tmp_path / "templated.gguf"
    convert_cross_encoder_for_tests(src, path, rerank_template="[CLS]{query}[SEP]{document}[SEP]")
    with LlamaCrossEncoder(path, n_threads=THREADS) as templated:
        for document in ("Restore files.", PASSAGE * 200, ""):
            assert templated.pair_tokens(QUERY, document) == reranker.pair_tokens(QUERY, document)
        assert templated.score(QUERY, DOCUMENTS[0]) == reranker.score(QUERY, DOCUMENTS[0])
        assert CLS not in templated.pair_tokens("[CLS] backup", "x")[1:]


@requires_minilm
def test_closed_reranker_refuses_work() -> None:
    with LlamaCrossEncoder(cross_encoder_gguf(), n_threads=THREADS) as model:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        model.score(QUERY, "x")
    model.close()  # twice is harmless


@requires_minilm
def test_an_embedding_model_is_refused() -> None:
    with pytest.raises(ValueError, match=r"embedding model \(mean pooling\), not a reranker"):
        open_reranker(minilm_gguf())
    with pytest.raises(ValueError, match="not a cross-encoder"):
        LlamaCrossEncoder(minilm_gguf())


def test_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_reranker(tmp_path / "absent.gguf")


@requires_minilm
def test_cross_encoder_prompt_throughput(capsys: pytest.CaptureFixture[str]) -> None:
    """Prints (does not assert) prompt tokens/s: the machine's load decides the figure."""
    documents = [PASSAGE * 12] * 8  # about 200-token passages, the size reranking sees
    with LlamaCrossEncoder(cross_encoder_gguf(), n_threads=MEASURE_THREADS) as model:
        model.score(QUERY, "warm up")
        started = time.perf_counter()
        model.score_batch(QUERY, documents)
        batch_rate = model.last_prompt_tokens / (time.perf_counter() - started)
        started = time.perf_counter()
        tokens = 0
        for document in documents:
            model.score(QUERY, document)
            tokens += model.last_prompt_tokens
        single_rate = tokens / (time.perf_counter() - started)
    with capsys.disabled():
        print(
            f"\ncross-encoder (MiniLM-L6, f32), {MEASURE_THREADS} threads: "
            f"{batch_rate:.0f} prompt tokens/s batched, {single_rate:.0f} one by one"
        )
    assert batch_rate > 0 and single_rate > 0


@pytest.fixture(scope="module")
def gemma_scorer() -> Iterator[LlamaYesNoScorer]:
    model = open_reranker(gemma_gguf(), n_threads=MEASURE_THREADS)
    assert isinstance(model, LlamaYesNoScorer)
    with model:
        yield model


@requires_gemma
def test_open_reranker_picks_yes_no_for_a_causal_lm(gemma_scorer: LlamaYesNoScorer) -> None:
    documents = ["Restore the file from the backup.", "Quarterly revenue grew."]
    singles = [gemma_scorer.score(QUERY, document) for document in documents]
    tokens = gemma_scorer.last_prompt_tokens
    batch = gemma_scorer.score_batch(QUERY, documents)
    assert batch == singles  # a loop of single scores, so exactly equal
    assert all(0.0 <= score <= 1.0 for score in batch)
    assert gemma_scorer.last_prompt_tokens > tokens


@requires_gemma
def test_yes_no_prompt_throughput(gemma_scorer: LlamaYesNoScorer, capsys: pytest.CaptureFixture[str]) -> None:
    """Prints (does not assert) prompt tokens/s, for comparison with the cross-encoder."""
    documents = [PASSAGE * 12] * 2
    gemma_scorer.score(QUERY, "warm up")
    started = time.perf_counter()
    gemma_scorer.score_batch(QUERY, documents)
    rate = gemma_scorer.last_prompt_tokens / (time.perf_counter() - started)
    with capsys.disabled():
        print(f"\nyes/no scorer (Gemma 3 270M Q4_K_M), {MEASURE_THREADS} threads: {rate:.0f} prompt tokens/s")
    assert rate > 0
