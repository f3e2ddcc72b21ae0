"""Turn what a user typed into an FTS5 MATCH expression that cannot be a syntax error.

The user-facing syntax is deliberately small: plain words, ``"exact phrases"``, ``-negation`` (of a
word or a phrase) and ``prefix*``. Everything else is text. Every term reaches FTS5 as a quoted
string literal, so colons, parentheses, ``AND``/``OR``/``NOT``/``NEAR``, ``^`` and ``+`` typed by a
user are searched for (or dropped by the tokenizer), never interpreted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tansaku.text.cjk import has_cjk, segment_query_words

Kind = Literal["word", "phrase", "prefix"]
Mode = Literal["all", "any"]

# An optional leading "-", then a quoted phrase (an unbalanced quote runs to the end) or a word that
# stops at whitespace or at a quote.
_TOKEN = re.compile(r'(-?)(?:"([^"]*)(?:"|\Z)|([^\s"]+))')
# Letters and digits only: "_" is \w for Python but a separator for unicode61, and a term that
# tokenizes to nothing would make an AND query match nothing.
_WORD_CHAR = re.compile(r"[^\W_]")
# FTS5 reads NUL as the end of the expression ("unterminated string"), and lone surrogates (from
# undecodable command-line bytes) cannot be encoded for SQLite at all.
_UNSAFE = re.compile("[\x00\ud800-\udfff]")
# FTS5 nests every NOT one level deeper and refuses trees deeper than 256.
_MAX_CHAINED_NOTS = 64


@dataclass(frozen=True)
class Term:
    text: str  # lower-cased; a phrase's words are separated by single spaces
    kind: Kind
    negated: bool = False


@dataclass(frozen=True)
class ParsedQuery:
    terms: tuple[Term, ...]

    @property
    def positive(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if not term.negated)

    @property
    def negative(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if term.negated)

    @property
    def highlight_terms(self) -> tuple[str, ...]:
        """The positive terms as ``snippets.term_matcher`` expects them (prefixes end in ``*``)."""
        return tuple(term.text + "*" if term.kind == "prefix" else term.text for term in self.positive)


# English function words that carry little meaning on their own. In a query with other words they
# are optional: they add to the score when present but do not exclude a document ("how do I read a
# CSV file" must not require "how", "do" and "i"). Phrases keep every word. Chinese function words
# were tried too and lowered Hit@1 on evals/sets/zh-docs-v1 (the strict AND was more precise there),
# so Chinese terms all stay required.
_STOPWORD_TEXT = """
    a an the and or of to in on for with by from at as is are was were be been being it its this
    that these those how do does did i me my we our you your what which who whom when where why can
    could should would will shall may might must into about there their them they he she his her
    if then than so such any some all no not
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def required_terms(parsed: ParsedQuery) -> ParsedQuery:
    """The query without its optional stopwords, unless nothing else would be left."""
    kept = [t for t in parsed.terms if t.negated or t.kind != "word" or t.text not in STOPWORDS]
    if not any(not t.negated for t in kept):
        return parsed
    return ParsedQuery(tuple(kept))


def _has_word_char(text: str) -> bool:
    return _WORD_CHAR.search(text) is not None


def _word_terms(text: str, *, prefix: bool, negated: bool) -> list[Term]:
    if not has_cjk(text):
        return [Term(text, "prefix" if prefix else "word", negated)]
    words = [word for word in segment_query_words(text) if _has_word_char(word)]
    if not words:
        return []
    if negated and len(words) > 1:
        # Excluding each piece separately would drop every document that mentions any of them.
        return [Term(" ".join(words), "phrase", True)]
    terms = [Term(word, "word", negated) for word in words[:-1]]
    terms.append(Term(words[-1], "prefix" if prefix else "word", negated))
    return terms


def parse_query(q: str) -> ParsedQuery:
    """Split a user query into terms; unsearchable pieces (punctuation, emoji, lone ``*``) are dropped."""
    q = _UNSAFE.sub(" ", q)
    terms: list[Term] = []
    for match in _TOKEN.finditer(q):
        negated = bool(match.group(1))
        phrase, word = match.group(2), match.group(3)
        if phrase is not None:
            if _has_word_char(phrase):
                words = segment_query_words(phrase.lower())
                terms.append(Term(" ".join(words), "phrase", negated))
            continue
        prefix = False
        if word.endswith("*"):
            stem = word.rstrip("*")
            if _has_word_char(stem):
                word, prefix = stem, True
        if _has_word_char(word):
            terms.extend(_word_terms(word.lower(), prefix=prefix, negated=negated))
    # A repeated term adds nothing to the match but would inflate the matched/total term counts.
    return ParsedQuery(tuple(dict.fromkeys(terms)))


def _literal(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts_term(term: Term) -> str:
    """One term as an FTS5 expression (``negated`` is ignored): ``"word"``, ``"a b"`` or ``"ab" *``."""
    literal = _literal(term.text)
    return literal + " *" if term.kind == "prefix" else literal


def fts_expression(parsed: ParsedQuery, mode: Mode = "all") -> str | None:
    """The MATCH expression for ``parsed``, or None when it has no positive term to search for.

    ``mode="all"`` requires every positive term, ``mode="any"`` at least one; negated terms always
    exclude.
    """
    positive = [fts_term(term) for term in parsed.positive]
    if not positive:
        return None
    if mode == "all":
        expression = " AND ".join(positive)
    elif mode == "any":
        expression = "(" + " OR ".join(positive) + ")"
    else:
        raise ValueError(f"unknown match mode: {mode!r}")
    negative = [fts_term(term) for term in parsed.negative]
    if len(negative) <= _MAX_CHAINED_NOTS:
        expression += "".join(f" NOT {term}" for term in negative)
    else:
        expression += " NOT (" + " OR ".join(negative) + ")"
    return expression
