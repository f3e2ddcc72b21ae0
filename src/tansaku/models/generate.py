"""Query expansion by a local generation model: typed ``lex:`` / ``vec:`` / ``hyde:`` lines.

``lex`` lines go to keyword search, ``vec`` and ``hyde`` lines to vector search. The original
query always comes first in ``lex`` and ``vec`` (callers weight it above the expansions), so a
missing or useless model degrades to plain hybrid search, with a warning, never to an error.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..store.llm_cache import LlmCache, cache_key
from ..text.cjk import cjk_count
from ..text.terms import word_forms
from ..types import Notice

__all__ = [
    "EXPANSION_FAILED",
    "EXPANSION_GRAMMAR",
    "EXPANSION_UNAVAILABLE",
    "PROMPT_VERSION",
    "TIMEOUT",
    "Expansion",
    "TextGenerator",
    "build_prompt",
    "expand_query",
    "parse_expansion",
]

# The stable warning codes of issue 10: no model is MODEL_MISSING, a model that failed or gave
# nothing usable EXPANSION_FAILED, one that ran out of time TIMEOUT.
EXPANSION_UNAVAILABLE = "MODEL_MISSING"
EXPANSION_FAILED = "EXPANSION_FAILED"
TIMEOUT = "TIMEOUT"

# Bump when the prompt, the grammar or the parsing changes: cached expansions of the old one then
# stop matching.
# 4: the few-shot part and the query block are tokenized apart (see LlamaGenerator).
# 5: the grammar keeps one round of lines, in order (lex, vec, hyde).
PROMPT_VERSION = "5"
CACHE_KIND = "expand"
# What an expansion that ran out of time finished, kept briefly: a query is often repeated within
# minutes (a person refining it, an agent retrying, a page of results), and paying the whole time
# budget again then buys the same lines. Not for good: a quieter machine may finish the expansion.
PARTIAL_KIND = "expand-partial"
PARTIAL_TTL_S = 15 * 60
MAX_PER_KIND = 3
# Expansion is the slowest step a query pays before its results (a 270M model decodes ~65
# tokens/s on 2 cores): two lex, two vec and a hyde line of a dozen words fit in this.
MAX_TOKENS = 96
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

Query: 修改 文件 权限
lex: 文件 权限 修改 命令
vec: 怎样修改文件的读写权限
hyde: 使用 chmod 命令可以修改文件的权限。

Query: {query}
"""

# With an intent, the last block says what the query is for; the intent steers the lines but is
# never itself searched.
_INTENT_LINE = "Intent: {intent}\n"

# llama.cpp grammar (GBNF) for the output: typed lines only, so whatever a model says, it parses.
# One or two lex lines, then one or two vec lines, then at most one hyde line, in the examples'
# order; text has no line breaks. Generation ends with the hyde line: left to go on, a 270M model
# starts the lines over, repeating itself (the filters dropped nearly all of the second round),
# and that round was a third of the step's time.
EXPANSION_GRAMMAR = r"""
root ::= lex lex? vec vec? hyde?
lex ::= "lex: " text "\n"
vec ::= "vec: " text "\n"
hyde ::= "hyde: " text "\n"
text ::= [^\n:] [^\n]{0,160}
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
        grammar: str | None = None,
        timeout: float | None = None,
        stable_prefix: int = 0,
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


# Everything before the query's own block is the same for every query: the generator keeps its
# state instead of evaluating ~130 tokens again per query.
_STABLE_PREFIX = _PROMPT[: _PROMPT.rindex("Query: {query}")]


def build_prompt(query: str, intent: str | None = None) -> str:
    prompt = _PROMPT.format(query=" ".join(query.split()))
    if intent and intent.strip():
        prompt += _INTENT_LINE.format(intent=" ".join(intent.split()))
    return prompt


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _is_cjk(text: str) -> bool:
    """Mostly Chinese, Japanese or Korean: at least as many CJK characters as other letters."""
    cjk = cjk_count(text)
    return cjk > 0 and cjk >= sum(ch.isalpha() for ch in text) - cjk


def parse_expansion(text: str, query: str) -> dict[str, list[str]]:
    """The typed lines of a model's output: stripped, deduplicated, at most 3 per kind.

    Anything else is ignored, as is everything from a ``Query:`` line on (a base model goes on
    to invent the next example). Dropped too, as adding nothing or leading away: lines equal to
    the query or copied from the prompt's examples, lines that share no word with the query, and
    lines in another script than the query's (a Chinese query gets Chinese lines; a model that
    answers in English would send the search off in a language the documents may not use),
    and lines whose every word is the query's (a part of the query again adds no word to find).
    """
    found: dict[str, list[str]] = {"lex": [], "vec": [], "hyde": []}
    seen = {_normal(query), *_PROMPT_LINES}
    query_terms, query_cjk = word_forms(query), _is_cjk(query)
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
        line_terms = word_forms(value)
        # Another script, nothing in common with the query (drift), or nothing the query lacks
        # (a part of it again: it only reweighs the query's own words).
        if _is_cjk(value) != query_cjk or not (line_terms & query_terms) or line_terms <= query_terms:
            continue
        seen.add(key)
        found[kind].append(value)
    return found


def _fallback(query: str, code: str, message: str) -> Expansion:
    return Expansion(query=query, lex=[query], vec=[query], fallback=True, warnings=[Notice(code, message)])


def _from_parsed(query: str, parsed: dict[str, list[str]], *, cached: bool) -> Expansion:
    if not any(parsed.get(kind) for kind in ("lex", "vec", "hyde")):
        return _fallback(
            query,
            EXPANSION_FAILED,
            "the expansion model gave no usable lines: searching the query as given",
        )
    return Expansion(
        query=query,
        lex=[query, *parsed.get("lex", [])],
        vec=[query, *parsed.get("vec", [])],
        hyde=list(parsed.get("hyde", [])),
        cached=cached,
    )


# The few-shot prefix's KV state, kept across processes: a one-shot `query` would otherwise
# evaluate its ~130 tokens again every time (0.3 s of a 270M model on 2 cores).
STATE_KIND = "prefix-state"


def _state_key(generator: Any) -> str | None:
    state_format = getattr(generator, "state_format", None)
    if not isinstance(state_format, str):
        return None
    return cache_key(generator.model_sha256, PROMPT_VERSION, state_format)


def _adopt_stored_state(generator: Any, cache: LlmCache | None) -> str | None:
    """Give the generator the stored prefix state, if it keeps one and has none yet; the cache key."""
    if cache is None or not callable(getattr(generator, "adopt_prefix_state", None)):
        return None
    key = _state_key(generator)
    if key is None or generator.prefix_state is not None:
        return key
    stored = cache.get(STATE_KIND, key)
    if isinstance(stored, dict) and isinstance(stored.get("tokens"), list):
        try:
            data = base64.b64decode(str(stored.get("state", "")), validate=True)
        except ValueError:
            data = b""
        if data:
            generator.adopt_prefix_state([int(t) for t in stored["tokens"]], data)
    return key


def _store_new_state(generator: Any, cache: LlmCache | None, key: str | None) -> None:
    if key is None or cache is None or not getattr(generator, "made_prefix_state", False):
        return
    state = generator.prefix_state
    if state is not None:
        encoded = base64.b64encode(state[1]).decode("ascii")
        cache.put(STATE_KIND, key, {"tokens": state[0], "state": encoded})


def expand_query(
    query: str,
    generator: TextGenerator | None,
    cache: LlmCache | None,
    *,
    intent: str | None = None,
    timeout: float | None = None,
) -> Expansion:
    """Expand ``query`` with ``generator``, through ``cache``; never raises for a model problem.

    No generator gives MODEL_MISSING, a generation error or output without usable lines
    EXPANSION_FAILED; each falls back to the query alone. Generation that runs past ``timeout``
    seconds stops, keeps the lines it finished and warns TIMEOUT; those lines are cached for
    PARTIAL_TTL_S only (a quieter machine may finish), and only for budgets no longer than theirs.
    Empty results are cached (generation is deterministic, so retrying would give the same),
    errors are not. ``intent`` steers the lines and is part of the cache key.
    """
    if generator is None:
        return _fallback(
            query,
            EXPANSION_UNAVAILABLE,
            "no query expansion model is available: searching the query as given",
        )
    steer = " ".join((intent or "").split())
    try:
        key = cache_key(generator.model_sha256, PROMPT_VERSION, query, steer)
        if cache is not None:
            hit = cache.get(CACHE_KIND, key)
            if isinstance(hit, dict):
                return _from_parsed(query, hit, cached=True)
            partial = _recent_partial(cache, key, query, timeout)
            if partial is not None:
                return partial
        state_key = _adopt_stored_state(generator, cache)
        output = generator.generate(
            build_prompt(query, steer),
            max_tokens=MAX_TOKENS,
            temperature=0.0,
            seed=0,
            stop=_STOP,
            grammar=EXPANSION_GRAMMAR,
            timeout=timeout,
            stable_prefix=len(_STABLE_PREFIX),
        )
        _store_new_state(generator, cache, state_key)
    except Exception as exc:
        # Any model or file failure (a vanished file, a prompt over the window, a llama.cpp error)
        # must cost only the expansion, not the search.
        return _fallback(
            query, EXPANSION_FAILED, f"query expansion failed ({exc}): searching the query as given"
        )
    timed_out = bool(getattr(generator, "timed_out", False))
    parsed = parse_expansion(output, query)
    if cache is not None and not timed_out:
        cache.put(CACHE_KIND, key, parsed)
    elif cache is not None:
        cache.forget_older(PARTIAL_KIND, PARTIAL_TTL_S)
        cache.put(PARTIAL_KIND, key, {"parsed": parsed, "timeout": timeout})
    expansion = _from_parsed(query, parsed, cached=False)
    if timed_out:
        notice = Notice(TIMEOUT, f"query expansion stopped after {timeout:g} s; using the lines it finished")
        expansion = _with_notice(expansion, notice, cached=False)
    return expansion


def _with_notice(expansion: Expansion, notice: Notice, *, cached: bool) -> Expansion:
    return replace(expansion, cached=cached, warnings=[notice, *expansion.warnings])


def _recent_partial(cache: LlmCache, key: str, query: str, timeout: float | None) -> Expansion | None:
    """The lines an expansion of the last PARTIAL_TTL_S seconds finished before running out of a
    time budget at least as long as this one (a longer budget may finish more: it tries again)."""
    stored = cache.get_recent(PARTIAL_KIND, key, PARTIAL_TTL_S)
    if not isinstance(stored, dict) or not isinstance(stored.get("parsed"), dict):
        return None
    budget = stored.get("timeout")
    if not isinstance(budget, int | float) or (timeout is not None and budget < timeout):
        return None
    notice = Notice(
        TIMEOUT,
        f"query expansion ran out of time ({budget:g} s) on a recent run; using the lines it finished"
        f" (kept {PARTIAL_TTL_S // 60} minutes)",
    )
    return _with_notice(_from_parsed(query, stored["parsed"], cached=True), notice, cached=True)
