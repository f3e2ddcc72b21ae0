"""Property-based tests of the chunker on generated Markdown-ish text, with small parameters."""

from __future__ import annotations

import itertools
import os

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import tansaku.chunking.markdown as md_module
from tansaku.chunking import ChunkParams, EstimatedTokens, chunk_text
from tansaku.chunking.tokens import Ruler
from test.test_chunking import boundaries_inside, check_invariants, fence_spans

EST = EstimatedTokens()
WORDS = ["alpha", "beta", "gamma", "delta", "search", "index", "chunk", "token", "x", "a", "naïve", "ß"]
CJK = "検索文書分割中文汉字한국어テスト。、，！？"
SETTINGS = settings(
    # Raise for a longer hunt: TANSAKU_CHUNKING_EXAMPLES=20000 pytest test/test_chunking_props.py
    max_examples=int(os.environ.get("TANSAKU_CHUNKING_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
cjk_run = st.text(alphabet=CJK, min_size=1, max_size=60)
plain_line = st.one_of(words, cjk_run, st.builds(lambda a, b: a + " " + b, words, cjk_run))
paragraph = st.lists(plain_line, min_size=1, max_size=4).map("\n".join)
atx = st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 6), words)
setext = st.builds(lambda t, c, n: t + "\n" + c * n, words, st.sampled_from("=-"), st.integers(1, 6))
rule = st.sampled_from(["---", "***", "* * *", "___", "- - -"])
unambiguous_rule = st.sampled_from(["***", "* * *", "___", "- - -"])  # never a setext underline
fence_line = st.one_of(plain_line, st.just(""), st.just("# not a heading"), st.just("---"))
fence_body = st.lists(fence_line, max_size=6)


@st.composite
def fence(draw: st.DrawFn, indent: str = "") -> str:
    marker = draw(st.sampled_from(["```", "~~~", "````", "~~~~"]))
    info = draw(st.sampled_from(["", "python", "sh"]))
    body = [indent + line if line else "" for line in draw(fence_body)]
    return "\n".join([indent + marker + info, *body, indent + marker])


@st.composite
def list_block(draw: st.DrawFn) -> str:
    items = []
    for i in range(draw(st.integers(1, 4))):
        marker = draw(st.sampled_from(["-", "*", "+", f"{i + 1}."]))
        item = f"{marker} {draw(words)}"
        if draw(st.booleans()):
            pad = " " * (len(marker) + 1 + draw(st.integers(0, 4)))
            item += "\n\n" + draw(fence(indent=pad))
        items.append(item)
    return "\n".join(items)


long_line = st.one_of(
    st.lists(st.sampled_from(WORDS), min_size=20, max_size=120).map(" ".join),
    st.text(alphabet="abcdefXYZ0123456789+/", min_size=40, max_size=400),
    st.text(alphabet=CJK, min_size=40, max_size=300),
    st.text(alphabet="e\u0301a\u0308o\U0001f600\u200d\U0001f3fb", min_size=20, max_size=200),
)
quote = st.builds(lambda t: "> " + t, words)
quoted_fence = st.builds(lambda t: f"> ```\n> # {t}\n>\n> {t}\n> ```", words)
html_block = st.sampled_from(
    ["<!--\n# hidden\n\n-->", "<div>\n# inside\n</div>", "<pre>\n# pre\n\nx\n</pre>"]
)
# No setext headings, fences or front matter: nothing that is guarded against cuts.
simple_block = st.one_of(paragraph, atx, unambiguous_rule, long_line, quote, st.just(""))
any_block = st.one_of(simple_block, rule, setext, fence(), list_block(), quoted_fence, html_block)
front_matter = st.sampled_from(["", "---\ntitle: x\n# comment\n---\n", "---\na: 1\n...\n"])


def _document(blocks: list[str], sep: str, front: str) -> str:
    return front + sep.join(blocks)


separators = st.sampled_from(["\n", "\n\n", "\r\n\r\n"])
documents = st.builds(_document, st.lists(any_block, min_size=1, max_size=25), separators, front_matter)
simple_documents = st.builds(
    _document, st.lists(simple_block, min_size=1, max_size=25), st.sampled_from(["\n", "\n\n"]), st.just("")
)


@st.composite
def params(draw: st.DrawFn) -> ChunkParams:
    max_tokens = draw(st.integers(4, 150))
    return ChunkParams(
        max_tokens=max_tokens,
        overlap_tokens=draw(st.integers(0, max_tokens - 1)),
        window_tokens=draw(st.integers(1, max_tokens)),
    )


@SETTINGS
@given(documents, params(), st.sampled_from(["doc.md", "notes.txt", "script.sh"]))
def test_invariants_hold_on_generated_markdown(text: str, p: ChunkParams, path: str) -> None:
    check_invariants(text, chunk_text(text, path, p), p)


@SETTINGS
@given(documents, params())
# Found by hypothesis: "</pre>" after a paragraph looked like an HTML block to the line scanner,
# which then missed the fence below it and took its "# line" for a heading.
@example(
    "alpha alpha alpha alpha alpha alpha alpha alpha\n<div>\n# inside\n</div>\n<pre>\n# pre\n\nx\n</pre>\n"
    "alpha\n```\nalpha alpha alpha alpha alpha alpha\n\nalpha alpha alpha alpha alpha alpha\n"
    "# not a heading\n```",
    ChunkParams(max_tokens=24, overlap_tokens=0, window_tokens=1, strategy="regex"),
)
def test_fences_that_fit_are_never_cut(text: str, p: ChunkParams) -> None:
    result = chunk_text(text, "doc.md", p)
    fitting = [(a, b) for a, b in fence_spans(text) if EST.count(text[a:b]) <= p.max_tokens]
    assert boundaries_inside(result.chunks, fitting) == []


@SETTINGS
@given(documents, params())
def test_line_scanner_alone_keeps_the_invariants(text: str, p: ChunkParams) -> None:
    saved = md_module._MD
    md_module._MD = False  # as if markdown-it were not installed
    try:
        check_invariants(text, chunk_text(text, "doc.md", p), p)
    finally:
        md_module._MD = saved


@SETTINGS
@given(simple_documents, params())
def test_consecutive_chunks_overlap_when_nothing_is_guarded(text: str, p: ChunkParams) -> None:
    assume(p.overlap_tokens > 0 and "\u0301" not in text and "\u0308" not in text and "\u200d" not in text)
    chunks = chunk_text(text, "doc.md", p).chunks
    for prev, nxt in itertools.pairwise(chunks):
        if prev.end_char - prev.start_char >= 2:
            assert nxt.start_char < prev.end_char, (prev, nxt)


@SETTINGS
@given(documents, params())
def test_a_word_counter_is_respected(text: str, p: ChunkParams) -> None:
    class Words:
        def count(self, text: str) -> int:
            return len(text.split()) + text.count("\n")

    result = chunk_text(text, "doc.md", p, Words())
    check_invariants(text, result, p, Words())


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab \n中文。한カ", max_size=60), st.data())
def test_ruler_matches_the_estimate(text: str, data: st.DataObject) -> None:
    ruler = Ruler(text)
    assert ruler.total == EST.count(text)
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    budget = data.draw(st.integers(0, 20))
    assert ruler.tokens(a, b) == EST.count(text[a:b])
    end = ruler.advance(a, budget)
    assert EST.count(text[a:end]) <= budget and (end == len(text) or EST.count(text[a : end + 1]) > budget)
    start = ruler.back(b, budget)
    assert EST.count(text[start:b]) <= budget and (start == 0 or EST.count(text[start - 1 : b]) > budget)
