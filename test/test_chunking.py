"""Chunking: the API, small and empty documents, and the checks shared by test_chunking_*.py.

``check_invariants`` is what must hold for any input; ``fence_spans`` finds fenced code blocks with
markdown-it directly, independently of the chunker's own scanner.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

import tansaku.chunking.markdown as md_module
from tansaku.chunking import (
    CHUNKER_VERSION,
    Chunk,
    ChunkingResult,
    ChunkParams,
    EstimatedTokens,
    TokenCounter,
    available_grammars,
    chunk_text,
)
from tansaku.errors import UsageError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "chunking"
EST = EstimatedTokens()


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def check_invariants(
    text: str, result: ChunkingResult, params: ChunkParams, counter: TokenCounter = EST
) -> None:
    """What must hold for any input: coverage, order, sizes and consistent offsets."""
    chunks = result.chunks
    if not text.strip():
        assert chunks == ()
        return
    assert chunks, "non-blank text gives at least one chunk"
    assert chunks[0].start_char == 0
    assert chunks[-1].end_char == len(text)
    data = text.encode("utf-8", "surrogatepass")
    for i, chunk in enumerate(chunks):
        assert chunk.seq == i
        assert chunk.start_char < chunk.end_char
        assert text[chunk.start_char : chunk.end_char] == chunk.text
        assert chunk.start_byte == len(text[: chunk.start_char].encode("utf-8", "surrogatepass"))
        assert data[chunk.start_byte : chunk.end_byte] == chunk.text.encode("utf-8", "surrogatepass")
        assert chunk.start_line == text.count("\n", 0, chunk.start_char) + 1
        last_char = chunk.end_char - 1
        assert chunk.end_line == text.count("\n", 0, last_char) + 1
        assert chunk.tokens == counter.count(chunk.text)
        assert chunk.oversized or chunk.tokens <= params.max_tokens, (i, chunk.tokens)
        if i:
            prev = chunks[i - 1]
            assert prev.start_char < chunk.start_char <= prev.end_char < chunk.end_char


def line_starts(text: str) -> list[int]:
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return [min(s, len(text)) for s in starts]


def fence_spans(text: str) -> list[tuple[int, int]]:
    """Fenced code blocks as CommonMark sees them: (opening line start, end of closing line)."""
    src = text.replace("\r", " ")
    starts = line_starts(text)
    # Front matter is not CommonMark; blank it as the chunker does.
    fm = md_module.front_matter_end(text)
    if fm:
        src = "\n" * text.count("\n", 0, fm) + src[fm:]
    tokens = MarkdownIt("commonmark").parse(src)
    return [(starts[t.map[0]], starts[min(t.map[1], len(starts) - 1)]) for t in tokens if t.type == "fence"]


def boundaries_inside(chunks: tuple[Chunk, ...], spans: list[tuple[int, int]]) -> list[int]:
    cuts = {x for c in chunks for x in (c.start_char, c.end_char)}
    return sorted(x for x in cuts for a, b in spans if a < x < b)


def line_at(text: str, pos: int) -> str:
    end = text.find("\n", pos)
    return text[pos : len(text) if end < 0 else end]


SMALL = ChunkParams(max_tokens=120, overlap_tokens=18, window_tokens=40)


# -- the API -----------------------------------------------------------------------------------


def test_params_fingerprint_and_validation() -> None:
    assert ChunkParams().fingerprint() == f"v{CHUNKER_VERSION}:900:135:200:regex"
    assert ChunkParams(300, 45, 100, "auto").fingerprint() == f"v{CHUNKER_VERSION}:300:45:100:auto"
    for bad in (
        {"max_tokens": 0},
        {"overlap_tokens": 900},
        {"overlap_tokens": -1},
        {"window_tokens": 0},
        {"window_tokens": 901},
        {"strategy": "ast"},
    ):
        with pytest.raises(UsageError):
            ChunkParams(**bad)  # type: ignore[arg-type]


def test_dataclasses_are_frozen_and_shaped_as_documented() -> None:
    fields = [f.name for f in dataclasses.fields(Chunk)]
    assert fields == [
        "seq",
        "start_line",
        "end_line",
        "start_char",
        "end_char",
        "start_byte",
        "end_byte",
        "tokens",
        "heading_path",
        "text",
        "oversized",
    ]
    result = chunk_text("# Hi\n\ntext\n", "a.md")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.chunks[0].seq = 3  # type: ignore[misc]
    assert isinstance(EST, TokenCounter)


def test_importing_the_package_loads_no_parser() -> None:
    code = (
        "import sys, tansaku.chunking as c\n"
        "c.available_grammars()\n"
        "p = c.ChunkParams(max_tokens=50, overlap_tokens=5, window_tokens=10)\n"
        "c.chunk_text('# a\\n' * 2000, 'a.md', p)\n"
        "heavy = [m for m in sys.modules if m.startswith(('markdown_it', 'tree_sitter'))]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_estimated_tokens() -> None:
    assert EST.count("") == 0
    assert EST.count("abcd") == 1
    assert EST.count("abcde") == 2
    assert EST.count("中文") == 2
    assert EST.count("ab中文cd") == 1 + 2 + 1  # ceil per run
    assert EST.count("カナ한국어") == 5
    assert EST.count("é" * 8) == 2


def test_available_grammars_lists_every_language() -> None:
    grammars = available_grammars()
    languages = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "ruby"}
    assert set(grammars) == languages
    assert all(grammars.values())  # the test environment installs them all


# -- small and empty documents -----------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n", "\r\n"])
def test_empty_and_blank_text_give_no_chunks(text: str) -> None:
    result = chunk_text(text, "empty.md")
    assert result == ChunkingResult((), "regex", ())


def test_empty_fixture_file() -> None:
    assert chunk_text(read("empty.md"), "empty.md").chunks == ()


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("Title\n=====\n\nText.\n", ("Title",)),
        ("A two-line\ntitle\n---\n\nText.\n", ("A two-line title",)),
        ("---\ntitle: x\n---\n# Heading\n", ()),
        ("Text first.\n\n# Heading\n", ()),
        ("    # indented code\n", ()),
    ],
)
def test_heading_path_of_a_single_chunk(text: str, path: tuple[str, ...]) -> None:
    assert chunk_text(text, "a.md").chunks[0].heading_path == path


def test_a_document_that_fits_is_one_chunk() -> None:
    text = "# Title\n\nSome text.\n"
    (chunk,) = chunk_text(text, "a.md").chunks
    assert (chunk.start_line, chunk.end_line, chunk.tokens) == (1, 3, EST.count(text))
    assert chunk.heading_path == ("Title",)
    assert chunk.text == text
