from __future__ import annotations

import os
import sys
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tansaku.text import cjk

pytestmark = [pytest.mark.cjk, pytest.mark.both_backends]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("压缩", True),
        ("ひらがな", True),
        ("カタカナ", True),
        ("한국어", True),
        ("\u3400", True),  # Extension A
        ("\uf900", True),  # compatibility ideograph
        ("plain english", False),
        ("café naïve résumé", False),
        ("emoji 🎉 and ÷", False),
        ("", False),
    ],
)
def test_has_cjk(text: str, expected: bool) -> None:
    assert cjk.has_cjk(text) is expected


@pytest.mark.parametrize("word", ["压缩", "权限"])
@pytest.mark.parametrize("sentence", ["文件压缩和权限管理", "如何设置文件权限以及压缩目录"])
def test_words_inside_sentences_become_tokens(word: str, sentence: str) -> None:
    assert word in cjk.segment(sentence).split()


def test_search_mode_yields_overlapping_words() -> None:
    tokens = cjk.segment("中华人民共和国").split()
    assert {"中华", "人民", "共和国", "中华人民共和国"} <= set(tokens)


def test_mixed_text_is_padded_only_where_needed() -> None:
    words = " ".join(cjk.segment_query_words("压缩文件"))
    assert words.startswith("压缩 文件")
    assert cjk.segment("abc压缩文件") == f"abc {words}"
    assert cjk.segment("see 压缩文件 here") == f"see {words} here"
    assert cjk.segment("压缩文件.zip") == f"{words} .zip"
    assert cjk.segment("abc压缩") == "abc 压缩"
    assert cjk.segment("line one\n压缩\nline three") == "line one\n压缩\nline three"


def test_japanese_kana_is_segmented() -> None:
    tokens = cjk.segment("これはテストです").split()
    assert len(tokens) > 1
    assert "".join(tokens) == "これはテストです"


@pytest.mark.parametrize("text", ["hello world", "café naïve", "tabs\tand\nnewlines  ", "", "🎉"])
def test_text_without_cjk_is_returned_unchanged(text: str) -> None:
    assert cjk.segment(text) is text


@given(st.text(alphabet=st.characters(max_codepoint=0x7F)))
def test_ascii_text_is_identical(text: str) -> None:
    assert cjk.segment(text) == text


def _without_cjk_and_space(text: str) -> str:
    return "".join(char for char in text if not char.isspace() and not cjk.has_cjk(char))


@given(st.text())
def test_segmenting_only_adds_spaces_around_cjk(text: str) -> None:
    segmented = cjk.segment(text)
    assert _without_cjk_and_space(segmented) == _without_cjk_and_space(text)
    if not cjk.has_cjk(text):
        assert segmented == text


def test_segment_query_words() -> None:
    assert cjk.segment_query_words("文件压缩") == ["文件", "压缩"]
    assert cjk.segment_query_words("abc压缩") == ["abc", "压缩"]
    assert cjk.segment_query_words("压缩.zip") == ["压缩", ".zip"]
    assert cjk.segment_query_words("plain") == ["plain"]
    assert cjk.segment_query_words("") == []


def test_query_words_line_up_with_indexed_tokens() -> None:
    indexed = cjk.segment("我们需要文件压缩和权限管理").split()
    for word in cjk.segment_query_words("压缩权限"):
        assert word in indexed


def test_falls_back_to_bigrams_without_any_segmenter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rjieba", None)
    monkeypatch.setitem(sys.modules, "jieba", None)
    monkeypatch.setattr(cjk, "_segmenter", None)
    assert cjk.segment("压缩文件") == "压 压缩 缩 缩文 文 文件 件"
    # A query cut the same way is a contiguous slice of the indexed tokens, so phrases still match.
    indexed = " ".join(cjk.segment("文件压缩和权限管理").split())
    assert " ".join(cjk.segment_query_words("压缩")) in indexed
    assert cjk.segment("English only") == "English only"


def test_falls_back_to_jieba(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    fake = types.SimpleNamespace(
        setLogLevel=calls.append,
        dt=types.SimpleNamespace(tmp_dir=None),
        cut_for_search=lambda text: iter([text[:2], text[2:]]),
    )
    monkeypatch.setitem(sys.modules, "rjieba", None)
    monkeypatch.setitem(sys.modules, "jieba", fake)
    cutter = cjk.load_segmenter()
    assert cutter("压缩文件") == ["压缩", "文件"]
    assert calls == [60]
    assert fake.dt.tmp_dir


def test_prefers_rjieba() -> None:
    pytest.importorskip("rjieba")
    import rjieba

    assert cjk.load_segmenter() == rjieba.cut_for_search


@pytest.mark.skipif(
    os.environ.get("TANSAKU_TEST_WITHOUT_RJIEBA") != "1", reason="only in the run with rjieba hidden"
)
def test_run_without_rjieba_really_uses_jieba() -> None:
    # Guards CI's second run: were jieba missing too, it would silently test character bigrams.
    cutter = cjk.load_segmenter()
    assert cutter is not cjk._bigram_cut
    assert "jieba" in sys.modules
    assert sys.modules["rjieba"] is None
    assert cjk.segment("数据库连接池") == "数据 据库 数据库 连接 连接池"
