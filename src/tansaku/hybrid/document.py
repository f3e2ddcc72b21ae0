"""Query documents: a query given as typed lines, run as given (no expansion).

    lex: os.path.join
    vec: how do I build a file path from parts
    hyde: Use os.path.join(a, b) to join path segments.
    intent: writing portable scripts

``lex`` lines go to keyword search, ``vec`` and ``hyde`` lines to vector search; ``intent`` says
what the searcher is after and is never a search term (the rerank step, later, reads it). An
agent writes these (the MCP server's ``query`` tool takes at most MAX_LINES sub-searches).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UsageError

KINDS = ("lex", "vec", "hyde")
MAX_LINES = 10
_TYPED = re.compile(r"^\s*(lex|vec|hyde|intent)\s*:\s*(.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class QueryDocument:
    lines: tuple[tuple[str, str], ...]  # (kind, text) in the order given, intent excluded
    intent: str | None = None


def parse_query_document(text: str) -> QueryDocument | None:
    """The typed lines of ``text``, or None when it is an ordinary query (its first line is not
    typed). A document with an untyped or empty line, more than MAX_LINES sub-searches, two
    intents, or no sub-search at all is a UsageError naming the line."""
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not numbered or not _TYPED.match(numbered[0][1]):
        return None
    lines: list[tuple[str, str]] = []
    intent: str | None = None
    for number, line in numbered:
        match = _TYPED.match(line)
        if match is None:
            raise UsageError(
                f"query document line {number} has no type: {line.strip()!r}",
                hint="start every line with lex:, vec:, hyde: or intent:",
            )
        kind, body = match.group(1).lower(), match.group(2).strip()
        if not body:
            raise UsageError(f"query document line {number} ({kind}:) is empty")
        if kind == "intent":
            if intent is not None:
                raise UsageError(
                    f"query document line {number}: a second intent", hint="give one intent line"
                )
            intent = body
        else:
            lines.append((kind, body))
    if not lines:
        raise UsageError(
            "the query document has no lex:, vec: or hyde: line", hint="intent: alone searches nothing"
        )
    if len(lines) > MAX_LINES:
        raise UsageError(f"the query document has {len(lines)} sub-searches; at most {MAX_LINES}")
    return QueryDocument(tuple(lines), intent)
