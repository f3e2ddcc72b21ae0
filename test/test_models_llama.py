"""LlamaEmbedder: vectors, batching, tokens, windows, errors and llama.cpp's logging."""

from __future__ import annotations

import hashlib
import math
import sys
from pathlib import Path

import pytest

from tansaku.models.gguf import read_gguf_metadata
from tansaku.models.llama import MISSING_EXTRA, LlamaEmbedder

from .models_fixture import minilm_gguf, requires_llama, requires_minilm

pytestmark = [requires_llama, requires_minilm]

TEXTS = [
    "The cat sits on the mat.",
    "",
    "Local-first search for your own documents: keyword (BM25), vectors and hybrid.",
    "def embed(texts): return [normalise(v) for v in vectors]  # " + "long line " * 60,
    "東京タワー and a short one",
]


@pytest.fixture(scope="module")
def embedder():
    with LlamaEmbedder(str(minilm_gguf())) as model:
        yield model


def text_of(embedder: LlamaEmbedder, n_tokens: int) -> str:
    """A text of exactly ``n_tokens`` tokens ("word" is a single token)."""
    text = " ".join(["word"] * n_tokens)
    assert embedder.count_tokens(text) == n_tokens
    return text


def test_same_text_gives_identical_vectors(embedder: LlamaEmbedder) -> None:
    first = embedder.embed([TEXTS[0]])[0]
    assert embedder.embed([TEXTS[0]])[0] == first
    # Alongside other texts it is still the same vector, bit for bit.
    assert embedder.embed([TEXTS[2], TEXTS[0], TEXTS[3]])[1] == first


def test_vectors_are_unit_length(embedder: LlamaEmbedder) -> None:
    vectors = embedder.embed(TEXTS)
    assert len(vectors) == len(TEXTS)
    for vector in vectors:
        assert len(vector) == embedder.dims == 384
        assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-6)


@pytest.fixture(scope="module")
def singles(embedder: LlamaEmbedder) -> dict[str, list[float]]:
    """Each test text embedded on its own."""
    texts = [*TEXTS, text_of(embedder, 300), text_of(embedder, 250)]
    return {text: embedder.embed([text])[0] for text in texts}


def test_batch_equals_one_by_one(embedder: LlamaEmbedder, singles: dict[str, list[float]]) -> None:
    texts = [*singles, *TEXTS]
    for text, vector in zip(texts, embedder.embed(texts), strict=True):
        assert vector == pytest.approx(singles[text], abs=1e-5)


def test_packed_batches_stay_within_rounding_of_one_by_one(
    embedder: LlamaEmbedder, singles: dict[str, list[float]]
) -> None:
    # Enough texts of mixed length that several decodes each pack several sequences.
    texts = [*TEXTS * 6, *singles]
    for text, vector in zip(texts, embedder.embed(texts, pack=True), strict=True):
        assert vector == pytest.approx(singles[text], abs=1e-3)
        assert sum(a * b for a, b in zip(singles[text], vector, strict=True)) > 0.99999


def test_empty_input_gives_no_vectors(embedder: LlamaEmbedder) -> None:
    assert embedder.embed([]) == []


def test_a_single_string_is_refused(embedder: LlamaEmbedder) -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        embedder.embed("one text")  # type: ignore[arg-type]


def test_token_counting_excludes_special_tokens(embedder: LlamaEmbedder) -> None:
    assert embedder.tokenize("The cat sits on the mat.") == [1996, 4937, 7719, 2006, 1996, 13523, 1012]
    assert embedder.count_tokens("The cat sits on the mat.") == 7
    assert embedder.count_tokens("") == 0
    # Special-token text in the input is plain text, not a control token.
    assert 102 not in embedder.tokenize("before [SEP] after")


def test_the_whole_window_embeds_and_one_token_more_raises(embedder: LlamaEmbedder) -> None:
    assert embedder.context_tokens == 510
    assert len(embedder.embed([text_of(embedder, 510)])[0]) == 384
    too_long = text_of(embedder, 511)
    with pytest.raises(ValueError, match=r"text 1 has 511 tokens.*window of 510"):
        embedder.embed(["short", too_long])
    with pytest.raises(ValueError, match="window"):
        embedder.raw_throughput([too_long])


def test_model_facts(embedder: LlamaEmbedder) -> None:
    path = minilm_gguf()
    assert embedder.path == str(path)
    assert embedder.model_family == "bert"
    assert embedder.pooling == "mean"
    assert embedder.file_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert embedder.load_seconds > 0


def test_raw_throughput_is_a_rate(embedder: LlamaEmbedder) -> None:
    assert embedder.raw_throughput(TEXTS) > 0


def test_loading_and_embedding_print_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    with LlamaEmbedder(str(minilm_gguf())) as model:
        model.embed(TEXTS)
    captured = capfd.readouterr()
    assert captured.err == ""
    assert captured.out == ""


def test_verbose_lets_llama_cpp_speak(capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    with LlamaEmbedder(str(minilm_gguf()), verbose=True) as model:
        model.embed(["hello"])
    assert "llama" in capfd.readouterr().err
    # The next quiet embedder silences llama.cpp again.
    with LlamaEmbedder(str(minilm_gguf())) as model:
        model.embed(["hello"])
    assert capfd.readouterr().err == ""


def test_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        LlamaEmbedder(str(tmp_path / "absent.gguf"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a GGUF model file"),
        (b"this is not a model at all" * 10, "not a GGUF model file"),
        (b"GGUF\x03\x00\x00\x00", "truncated"),
        (b"GGUF\x63\x00\x00\x00" + b"\x00" * 16, "unsupported GGUF version"),
    ],
)
def test_garbage_files_raise_value_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        LlamaEmbedder(str(path))


def test_a_cut_off_model_names_llama_cpp_reason(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # The header is intact, so only llama.cpp notices that the weights are missing.
    path = tmp_path / "cut.gguf"
    path.write_bytes(minilm_gguf().read_bytes()[:2_000_000])
    capfd.readouterr()
    with pytest.raises(ValueError, match=r"could not be loaded by llama.cpp: .*(corrupted|bounds)"):
        LlamaEmbedder(str(path))
    assert capfd.readouterr().err == ""


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is a directory"):
        LlamaEmbedder(str(tmp_path))


def test_closed_embedder_refuses_work() -> None:
    model = LlamaEmbedder(str(minilm_gguf()))
    model.close()
    model.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        model.embed(["x"])


def test_header_metadata() -> None:
    meta = read_gguf_metadata(minilm_gguf())
    assert meta["bert.context_length"] == 512
    assert meta["bert.embedding_length"] == 384
    assert meta["sentence_transformers.max_seq_length"] == 256


def test_missing_llama_cpp_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(ImportError) as info:
        LlamaEmbedder("/any/model.gguf")
    assert str(info.value) == MISSING_EXTRA
    assert MISSING_EXTRA == "the models extra is not installed: pip install 'tansaku[models]'"


LANE_TEXTS = [
    f"note {n}: the harbour crane lifts containers onto the night train " * (n % 3 + 1) for n in range(9)
]


def test_texts_embedded_side_by_side_get_the_vectors_they_get_one_after_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = str(minilm_gguf())
    alone = LlamaEmbedder(path, n_threads=1)
    both = LlamaEmbedder(path, n_threads=2)
    try:
        expected = alone.embed(LANE_TEXTS)
        assert alone.side_by_side == 1
        # Two threads: two contexts of one thread each, nine texts shared between them.
        assert both.embed(LANE_TEXTS) == expected  # bit for bit: each decode starts empty
        assert (both.side_by_side, both.threads) == (2, 2)
        # One text: one context with both threads.
        single = both.embed(LANE_TEXTS[:1])
        assert both.side_by_side == 1 and both.threads == 2
        assert single[0] == pytest.approx(expected[0], abs=1e-6)
        monkeypatch.setenv("TANSAKU_EMBED_LANES", "1")  # one context, both threads on each text
        together = both.embed(LANE_TEXTS)
        assert both.side_by_side == 1
        assert all(v == pytest.approx(e, abs=1e-6) for v, e in zip(together, expected, strict=True))
        monkeypatch.delenv("TANSAKU_EMBED_LANES")
        # Short of memory for a second context: one text after another, the same vectors.
        monkeypatch.setattr("tansaku.models.llama.available_memory", lambda: 0)
        fresh = LlamaEmbedder(path, n_threads=2)
        try:
            assert fresh.embed(LANE_TEXTS) == expected and fresh.side_by_side == 1
        finally:
            fresh.close()
    finally:
        alone.close()
        both.close()
