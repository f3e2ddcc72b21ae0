"""Split documents into overlapping chunks of about ``max_tokens`` at the best break points.

Markdown (and any unknown file type) is cut preferably at headings, then fences, rules, blank
lines, list items and any line start; reStructuredText (``.rst``, ``.rst.txt``, and ``.txt`` files
that use reST markup) likewise at underlined titles, transitions and blank lines, keeping ``::``
literal blocks and ``code-block`` bodies whole; source code in a supported language, with
``strategy="auto"`` and its tree-sitter grammar installed, preferably at definitions. Importing
this package loads neither markdown-it nor tree-sitter: both are imported on first use.

Behaviour the callers can rely on:

- Empty or whitespace-only text gives no chunks. Otherwise the chunks cover the text in order,
  each starting at or before the previous end (the overlap) and ending after it.
- A cut is a line start: the chunk ends with the previous line's newline. "After a blank line"
  (score 20) means the start of the line that follows the blank line(s).
- Fenced code blocks, front matter and setext headings are never cut unless one alone exceeds
  ``max_tokens``; then it is cut at line starts and a warning names it.
- Only a line longer than ``max_tokens`` is cut inside: after its last whitespace (or CJK
  punctuation) before the limit, else at a character boundary that keeps combining marks, ZWJ
  sequences and surrogate pairs whole. Chunks holding a piece of such a line without whitespace
  are marked ``oversized``; they still respect ``max_tokens``.
- ``headings(text, path)`` lists the headings the heading paths are made of.
- ``heading_path`` is what is in force at the chunk's first character: a heading (or definition)
  starting on the chunk's first line counts; an overlap carries the previous section's path.
- With a custom ``counter`` the cuts are planned with the estimate scaled to the counter's total
  for the document and then checked with the counter: no chunk exceeds ``max_tokens`` by it.
"""

from __future__ import annotations

from bisect import bisect_right

from tansaku.chunking.cutter import Cutter, Span
from tansaku.chunking.languages import available_grammars, extension, is_code, language_for
from tansaku.chunking.model import CHUNKER_VERSION, Chunk, ChunkingResult, ChunkParams, Heading
from tansaku.chunking.plan import Plan, section_paths
from tansaku.chunking.tokens import EstimatedTokens, Ruler, TokenCounter

__all__ = [
    "CHUNKER_VERSION",
    "Chunk",
    "ChunkParams",
    "ChunkingResult",
    "EstimatedTokens",
    "Heading",
    "TokenCounter",
    "available_grammars",
    "chunk_text",
    "headings",
    "long_block_kind",
]

_DEFAULT_PARAMS = ChunkParams()


def chunk_text(
    text: str,
    path: str,
    params: ChunkParams = _DEFAULT_PARAMS,
    counter: TokenCounter | None = None,
) -> ChunkingResult:
    """Chunk ``text``; ``path`` only selects the file type (by extension)."""
    if not text.strip():
        return ChunkingResult((), "regex", ())
    if type(counter) is EstimatedTokens:
        counter = None  # the ruler counts exactly like it, without slicing
    ruler = Ruler(text)
    total = ruler.total if counter is None else counter.count(text)
    scale = 1.0 if counter is None or total == 0 or ruler.total == 0 else total / ruler.total
    warnings: list[str] = []
    code = is_code(path)
    rst = not code and _is_rst(text, path)
    plan: Plan | None = None
    if params.strategy == "auto" and code:
        # A fallback's note ends with "; used regex": the stores count fallbacks by it.
        language = language_for(path)
        if language is None:
            warnings.append(f"no tree-sitter grammar for {extension(path)}; used regex")
        else:
            from tansaku.chunking.code import code_plan

            plan, why = code_plan(text, language)
            if plan is None:
                warnings.append(f"{why}; used regex")
            else:
                warnings.extend(plan.warnings)
    strategy = plan.strategy if plan is not None else "regex"

    if total <= params.max_tokens:
        if plan is not None:
            heading = section_paths(plan.sections, [0])[0]
        elif code:
            heading = ()
        elif rst:
            from tansaku.chunking.rst import leading_heading as rst_leading_heading

            heading = rst_leading_heading(text)
        else:
            from tansaku.chunking.markdown import leading_heading

            heading = leading_heading(text)
        spans = [Span(0, len(text), total)]
        return ChunkingResult(_assemble(text, spans, [heading], []), strategy, tuple(warnings))

    cutter_budget = max(1, int(params.max_tokens / scale))
    if plan is None:
        if code:
            plan = Plan(markdown=False)
            plan.finish()
        elif rst:
            from tansaku.chunking.rst import rst_plan

            plan = rst_plan(text, ruler, cutter_budget)
        else:
            from tansaku.chunking.markdown import markdown_plan

            plan = markdown_plan(text, ruler, cutter_budget)
    cutter = Cutter(
        text, plan, ruler, params.max_tokens, params.overlap_tokens, params.window_tokens, counter, scale
    )
    spans = cutter.cut()
    bounds = sorted({x for sp in spans for x in (sp.start, sp.end)})
    for block in plan.loose:
        i = bisect_right(bounds, block.start)
        if i < len(bounds) and bounds[i] < block.end:
            warnings.append(
                f"{block.what}{_LONG_BLOCK} ({ruler.tokens(block.start, block.end)} "
                "estimated tokens); split at line boundaries"
            )
    headings = section_paths(plan.sections, [sp.start for sp in spans], plan.titler)
    chunks = _assemble(text, spans, headings, cutter.hard_lines)
    return ChunkingResult(chunks, strategy, tuple(warnings))


_LONG_BLOCK = " is longer than max_tokens"


def long_block_kind(warning: str) -> str | None:
    """``"fenced code block"`` for the note of a block too long to keep whole (split at line
    boundaries), None for any other note (a fallback to regex, syntax errors)."""
    if _LONG_BLOCK not in warning:
        return None
    what = warning.split(_LONG_BLOCK, 1)[0]
    return what.split(" (lines", 1)[0]


def headings(text: str, path: str) -> list[Heading]:
    """The headings of ``text`` in document order, as chunking sees them (its heading paths are
    made of these): Markdown headings, or reST titles in reST files.

    ``path`` selects the rules like ``chunk_text``'s: a file path or just its suffix (``".md"``,
    ``".rst.txt"``). Source code has no headings here: its definitions are found only by the
    ``auto`` strategy's parser.
    """
    probe = "x" + path if path.startswith(".") and "/" not in path else path  # ".md" alone
    if not text.strip() or is_code(probe):
        return []
    if _is_rst(text, probe):
        from tansaku.chunking.rst import rst_headings

        found = rst_headings(text)
    else:
        from tansaku.chunking.markdown import markdown_headings

        found = markdown_headings(text)
    out: list[Heading] = []
    line, line_pos = 1, 0
    for pos, level, title in found:  # in ascending order: count newlines once
        line += text.count("\n", line_pos, pos)
        line_pos = pos
        out.append(Heading(line, level, title))
    return out


def _is_rst(text: str, path: str) -> bool:
    from tansaku.chunking.rst import is_rst

    return is_rst(text, path)


def _assemble(
    text: str, spans: list[Span], headings: list[tuple[str, ...]], hard_lines: list[tuple[int, int]]
) -> tuple[Chunk, ...]:
    ascii_only = text.isascii()
    hard_lines = sorted(set(hard_lines))  # whole lines, hence disjoint once sorted
    hard_ends = [le for _, le in hard_lines]
    out = []
    line, line_pos = 1, 0
    byte, byte_pos = 0, 0
    for seq, (span, heading) in enumerate(zip(spans, headings, strict=True)):
        start, end = span.start, span.end
        line += text.count("\n", line_pos, start)
        line_pos = start
        body = text[start:end]
        end_line = line + body.count("\n") - (1 if body.endswith("\n") else 0)
        if ascii_only:
            start_byte, end_byte = start, end
        else:
            byte += len(text[byte_pos:start].encode("utf-8", "surrogatepass"))
            byte_pos = start
            start_byte, end_byte = byte, byte + len(body.encode("utf-8", "surrogatepass"))
        # hard_lines is sorted and disjoint: only the first line ending after ``start`` can overlap.
        i = bisect_right(hard_ends, start)
        oversized = i < len(hard_lines) and hard_lines[i][0] < end
        out.append(
            Chunk(
                seq, line, end_line, start, end, start_byte, end_byte, span.tokens, heading, body, oversized
            )
        )
    return tuple(out)
