"""Query expansion by a local generation model: typed ``lex:`` / ``vec:`` / ``hyde:`` lines.

``lex`` lines go to keyword search, ``vec`` and ``hyde`` lines to vector search. The original
query always comes first in ``lex`` and ``vec`` (callers weight it above the expansions), so a
missing or useless model degrades to plain hybrid search, with a warning, never to an error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..store.llm_cache import LlmCache, cache_key
from ..types import Notice

__all__ = [
    "EXPANSION_EMPTY",
    "EXPANSION_FAILED",
    "EXPANSION_UNAVAILABLE",
    "PROMPT_VERSION",
    "Expansion",
    "TextGenerator",
    "build_prompt",
    "expand_query",
    "parse_expansion",
]

EXPANSION_UNAVAILABLE = "EXPANSION_UNAVAILABLE"
EXPANSION_FAILED = "EXPANSION_FAILED"
EXPANSION_EMPTY = "EXPANSION_EMPTY"

# Bump when the prompt or the parsing changes: cached expansions of the old one then stop matching.
PROMPT_VERSION = "1"
CACHE_KIND = "expand"
MAX_PER_KIND = 3
MAX_TOKENS = 128
# A typed line longer than this is the model rambling, not a query.
_MAX_LINE_CHARS = 300

# Few-shot, not chat: it must work with base models, which only continue text. The language
# instruction and the non-English example keep expansions in the query's own language.
_PROMPT = """Expand a search query into lines for a search engine, in the language of the query.
lex: keywords for full-text search
vec: the question rephrased in natural language
hyde: a sentence that a matching document might contain

Query: sourdough starter feeding
lex: sourdough starter feeding schedule
lex: levain refresh flour water ratio
vec: how often should I feed a sourdough starter
hyde: Feed the starter equal weights of flour and water every 12 hours at room temperature.

Query: 東京 ラーメン 有名店
lex: 東京 ラーメン 人気店
vec: 東京で有名なラーメン屋はどこですか
hyde: 東京には行列のできるラーメンの名店が数多くあります。

Query: {query}
"""

# A base model goes on to invent the next example: stopping there saves most of the tokens.
_STOP = ("\n\n", "\nQuery:")

_TYPED_LINE = re.compile(r"^\s*(lex|vec|hyde)\s*:\s*(.*)$", re.IGNORECASE)
_NEXT_EXAMPLE = re.compile(r"^\s*query\s*:", re.IGNORECASE)


# A base model often copies the prompt's own lines (the examples above) instead of expanding:
# those are never expansions of the user's query.
_PROMPT_LINES = frozenset(
    " ".join(m.group(2).split()).casefold()
    for m in map(_TYPED_LINE.match, _PROMPT.splitlines())
    if m is not None
)


class TextGenerator(Protocol):
    """What expansion needs of a model: see ``tansaku.models.llama.LlamaGenerator``."""

    @property
    def model_sha256(self) -> str: ...

    def generate(
        self,
        prompt: str,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Sequence[str] = (),
    ) -> str: ...


@dataclass(frozen=True)
class Expansion:
    """Search strings per kind; ``lex[0]`` and ``vec[0]`` are the original query."""

    query: str
    lex: list[str]
    vec: list[str]
    hyde: list[str] = field(default_factory=list)
    fallback: bool = False
    cached: bool = False
    warnings: list[Notice] = field(default_factory=list)


def build_prompt(query: str) -> str:
    return _PROMPT.format(query=" ".join(query.split()))


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def parse_expansion(text: str, query: str) -> dict[str, list[str]]:
    """The typed lines of a model's output: stripped, deduplicated, at most 3 per kind.

    Anything else is ignored, as is everything from a ``Query:`` line on (a base model goes on
    to invent the next example). Lines equal to the query, or copied from the prompt's
    examples, add nothing and are dropped.
    """
    found: dict[str, list[str]] = {"lex": [], "vec": [], "hyde": []}
    seen = {_normal(query), *_PROMPT_LINES}
    for line in text.splitlines():
        if _NEXT_EXAMPLE.match(line):
            break
        match = _TYPED_LINE.match(line)
        if not match:
            continue
        kind, value = match.group(1).lower(), " ".join(match.group(2).split())
        key = _normal(value)
        if not value or len(value) > _MAX_LINE_CHARS or key in seen or len(found[kind]) >= MAX_PER_KIND:
            continue
        seen.add(key)
        found[kind].append(value)
    return found


def _fallback(query: str, code: str, message: str) -> Expansion:
    return Expansion(query=query, lex=[query], vec=[query], fallback=True, warnings=[Notice(code, message)])


def _from_parsed(query: str, parsed: dict[str, list[str]], *, cached: bool) -> Expansion:
    if not any(parsed.get(kind) for kind in ("lex", "vec", "hyde")):
        return _fallback(
            query, EXPANSION_EMPTY, "the expansion model gave no usable lines: searching the query as given"
        )
    return Expansion(
        query=query,
        lex=[query, *parsed.get("lex", [])],
        vec=[query, *parsed.get("vec", [])],
        hyde=list(parsed.get("hyde", [])),
        cached=cached,
    )


def expand_query(query: str, generator: TextGenerator | None, cache: LlmCache | None) -> Expansion:
    """Expand ``query`` with ``generator``, through ``cache``; never raises for a model problem.

    No generator gives EXPANSION_UNAVAILABLE, a generation error EXPANSION_FAILED, output without
    typed lines EXPANSION_EMPTY; each falls back to the query alone. Empty results are cached
    too (generation is deterministic, so retrying would give the same), errors are not.
    """
    if generator is None:
        return _fallback(
            query,
            EXPANSION_UNAVAILABLE,
            "no query expansion model is available: searching the query as given",
        )
    try:
        key = cache_key(generator.model_sha256, PROMPT_VERSION, query)
        if cache is not None:
            hit = cache.get(CACHE_KIND, key)
            if isinstance(hit, dict):
                return _from_parsed(query, hit, cached=True)
        output = generator.generate(
            build_prompt(query), max_tokens=MAX_TOKENS, temperature=0.0, seed=0, stop=_STOP
        )
    except Exception as exc:
        # Any model or file failure (a vanished file, a prompt over the window, a llama.cpp error)
        # must cost only the expansion, not the search.
        return _fallback(
            query, EXPANSION_FAILED, f"query expansion failed ({exc}): searching the query as given"
        )
    parsed = parse_expansion(output, query)
    if cache is not None:
        cache.put(CACHE_KIND, key, parsed)
    return _from_parsed(query, parsed, cached=False)
