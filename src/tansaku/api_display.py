"""The facade's methods for what a front end shows beside results: the query's words to mark in
snippets (the terms the snippets were chosen by, so the page marks what the CLI matched), and a
summary of the index cheap enough to ask for after every search. Mixed into api.Tansaku
(``self`` is an api_facade.Facade).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .api_facade import Facade
    from .inspect.summary import SummaryCache
    from .types import IndexSummary

# The search modes, by the command (and endpoint) that runs them.
MARK_MODES = ("search", "vsearch", "query")


class DisplayMethods:
    _summaries: SummaryCache | None = None

    def mark_terms(self: Facade, query: str, mode: str = "search") -> list[str]:
        """The terms a ``mode`` search of ``query`` chose its snippets by: the query's own words
        without the optional common ones, CJK text cut by the index's segmenter, an option with
        its dash (``-a``), a prefix with its ``*``. For ``query``, never the words of an
        expansion; for a query document, its ``lex:`` lines (else its other lines)."""
        from .search.query import parse_query, required_terms

        if mode not in MARK_MODES:
            raise ValueError(f"unknown search mode {mode!r}")
        if mode == "query":
            query = _typed_words(query)
        if mode == "vsearch":  # vsearch's snippets: the query as parsed, no index at hand
            return list(required_terms(parse_query(query)).highlight_terms)
        from .search.keyword import highlight_terms

        if not self.backend.exists():
            return list(required_terms(parse_query(query)).highlight_terms)
        with self._reader() as conn:
            return highlight_terms(conn, query)

    def mark_spans(
        self: Facade, snippets: Sequence[Sequence[str]], terms: Sequence[str]
    ) -> list[list[list[tuple[int, int]]]]:
        """For each snippet's lines, the [start, end) code-point offsets of the whole words that
        match ``terms`` (search/snippets.py's ``term_spans``)."""
        from .search.snippets import term_spans

        return term_spans(snippets, terms)

    def index_summary(self: Facade) -> IndexSummary:
        """Documents, chunks and vectors per collection and the vector state (none, quick, partial
        or full), as `status` counts them, without its walk of the folders; kept until the index
        or the config changes (inspect/summary.py)."""
        from .inspect.summary import SummaryCache

        with self._creating:
            if self._summaries is None:
                self._summaries = SummaryCache()
        return self._summaries.get(self.config(), self.config_path, self.backend)


def _typed_words(text: str) -> str:
    """A query document's keyword lines (else all its lines); an ordinary query as it is."""
    from .hybrid.document import parse_query_document

    document = parse_query_document(text)
    if document is None:
        return text
    lex = [body for kind, body in document.lines if kind == "lex"]
    return " ".join(lex or [body for _, body in document.lines])
