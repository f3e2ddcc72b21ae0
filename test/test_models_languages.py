"""Which scripts a model reads: the languages its GGUF declares, copied from the model card."""

from __future__ import annotations

from pathlib import Path

import pytest

from tansaku.models.convert_card import card_languages
from tansaku.models.languages import reads_cjk, unreadable_share

from .models_fixture import minilm_gguf, requires_llama, requires_minilm

MIXED = "GBK 编码的文本文件怎么转成 UTF-8"


@pytest.mark.parametrize(
    ("card", "expected"),
    [
        ("---\nlanguage: en\nlicense: apache-2.0\n---\n# x\n", ("en",)),
        ("---\nlicense: mit\nlanguage:\n- en\n- zh\ntags:\n- a\n---\n", ("en", "zh")),
        ("---\nlanguage:\n  - 'de'\n  - \"fr\"\n---\n", ("de", "fr")),
        ("---\nlanguage: [en, ja]\n---\n", ("en", "ja")),
        ("---\nlicense: mit\n---\nlanguage: en\n", ()),  # after the front matter: prose
        ("# no front matter\nlanguage: en\n", ()),
        ("---\ntags:\n  language: en\n---\n", ()),  # nested, not the card's own key
    ],
)
def test_the_model_cards_languages_are_read(tmp_path: Path, card: str, expected: tuple[str, ...]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(card, encoding="utf-8")
    assert card_languages(readme) == expected


def test_a_folder_without_a_card_declares_nothing(tmp_path: Path) -> None:
    assert card_languages(tmp_path / "README.md") == ()


@pytest.mark.parametrize(
    ("languages", "reads"),
    [
        (["en"], False),
        (["en", "de"], False),
        (["en", "zh"], True),
        (["zh-CN"], True),
        (["ja_JP"], True),
        (["kor"], True),
        (["multilingual"], True),
        ([], True),  # nothing declared: nothing known
        (None, True),
        ("en", True),  # not a list: not a declaration tansaku can trust
    ],
)
def test_only_a_declaration_without_cjk_languages_rules_cjk_out(languages: object, reads: bool) -> None:
    assert reads_cjk(languages) is reads


def test_unreadable_tokens_are_unknown_ones_and_cjk_ones_the_languages_leave_out() -> None:
    pieces = {1: "gb", 2: "编", 3: "码", 4: "utf", 100: "[UNK]"}
    tokens = [1, 2, 3, 100, 4]
    assert unreadable_share(tokens, 100, None, pieces.__getitem__) == pytest.approx(1 / 5)
    assert unreadable_share(tokens, 100, ["en", "zh"], pieces.__getitem__) == pytest.approx(1 / 5)
    assert unreadable_share(tokens, 100, ["en"], pieces.__getitem__) == pytest.approx(3 / 5)
    assert unreadable_share(tokens, None, ["en"], pieces.__getitem__) == pytest.approx(2 / 5)
    assert unreadable_share([], 100, ["en"], pieces.__getitem__) == 0.0


@requires_llama
@requires_minilm
def test_the_converted_minilm_declares_english_and_cannot_read_chinese() -> None:
    from tansaku.models.cross_encoder import LlamaCrossEncoder
    from tansaku.models.gguf import cached_gguf_metadata
    from tansaku.models.llama import LlamaEmbedder

    from .models_fixture import cross_encoder_gguf

    assert cached_gguf_metadata(minilm_gguf())["general.languages"] == ["en"]
    with LlamaEmbedder(str(minilm_gguf())) as embedder:
        tokens = embedder.tokenize(MIXED)
        unknown = embedder._llm.metadata.get("tokenizer.ggml.unknown_token_id")
        by_vocabulary = unreadable_share(tokens, unknown, None, embedder._piece)
        # The vocabulary has most of these characters; only the declared languages rule them out.
        assert by_vocabulary < 0.5 <= embedder.unreadable_share(MIXED)
        assert embedder.unreadable_share("convert a GBK text file to UTF-8") == 0.0
    with LlamaCrossEncoder(str(cross_encoder_gguf())) as reranker:
        assert reranker.unreadable_share(MIXED) >= 0.5
        assert reranker.unreadable_share("convert a GBK text file to UTF-8") == 0.0
