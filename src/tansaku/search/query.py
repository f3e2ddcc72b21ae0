"""Turn what a user typed into an FTS5 MATCH expression that cannot be a syntax error.

The user-facing syntax is deliberately small: plain words, ``"exact phrases"``, ``-negation`` (of a
word or a phrase) and ``prefix*``. Everything else is text. A word with punctuation inside
(``os.path.join``, ``Py_INCREF``, ``a::b``, ``save-exact``) is an identifier: its parts are
required, not their adjacency. ``--flag`` and ``-x`` (one character) are option names, searched
for. Every term reaches FTS5 as a quoted string literal, so colons, parentheses,
``AND``/``OR``/``NOT``/``NEAR``, ``^`` and ``+`` typed by a user are searched for (or dropped by
the tokenizer), never interpreted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from tansaku.limits import MAX_MODEL_QUERY_CHARS, MAX_QUERY_TERMS
from tansaku.text.cjk import has_cjk, segment_query_words

Kind = Literal["word", "phrase", "prefix", "ident"]
# all: every term; clauses: any term, an identifier counting only with all its parts; any: any
# word or part at all (the last resort before "no results").
Mode = Literal["all", "clauses", "any"]

# An optional leading "-", then a quoted phrase (an unbalanced quote runs to the end) or a word that
# stops at whitespace or at a quote.
_TOKEN = re.compile(r'(-?)(?:"([^"]*)(?:"|\Z)|([^\s"]+))')
# Letters and digits only: "_" is \w for Python but a separator for unicode61, and a term that
# tokenizes to nothing would make an AND query match nothing.
_WORD_CHAR = re.compile(r"[^\W_]")
# What unicode61 keeps as one token: runs of letters and digits.
_PART = re.compile(r"[^\W_]+")
# English possessives and contractions (project's, don't) are words, not identifiers.
_CONTRACTION = re.compile(r"['’](?:s|t|re|ll|ve|d|m)$")
# What surrounds a name as people paste it (`os.environ`, os.path.join(), "ProgressBar",): not part
# of the name. Underscores are (``__slots__``).
_NAME_EDGES = re.compile(r"^[^\w]+|[^\w]+$")
# What may be an option name after one dash (``-mtime``, ``-sh``): ASCII letters and digits.
_OPTION_NAME = re.compile(r"[A-Za-z0-9]+")
# A one-letter option with its value attached, as people type them (``cut -d: -f1``,
# ``sort -k2,2n``, ``head -n5``, ``sed -i.bak``): the option is the letter, the value is not
# searched. Letters after the first (``-mtime``, ``-sh``) are left to resolve_options.
_OPTION_WITH_VALUE = re.compile(r"([A-Za-z])[^A-Za-z*\s]\S*")
_HYPHENATED = re.compile(r"[^\W_]+(?:-[^\W_]+)+")
# FTS5 reads NUL as the end of the expression ("unterminated string"), and lone surrogates (from
# undecodable command-line bytes) cannot be encoded for SQLite at all.
_UNSAFE = re.compile("[\x00\ud800-\udfff]")
# FTS5 nests every NOT one level deeper and refuses trees deeper than 256.
_MAX_CHAINED_NOTS = 64


@dataclass(frozen=True)
class Term:
    text: str  # lower-cased; a phrase's (or identifier's) words are separated by single spaces
    kind: Kind
    negated: bool = False
    parts: tuple[str, ...] = ()  # an identifier's parts, in order
    prefix: bool = False  # an identifier whose last part is a prefix (``os.pa*``)
    # Only hyphens inside (``command-line``, ``save-exact``): a name in a short query, prose in a
    # sentence.
    hyphenated: bool = False
    # Written as a command-line option: ``--user``, ``-x``; on a negated term, a ``-word`` that
    # is an option search if the index knows the option (see resolve_options).
    option: bool = False
    # An identifier as typed (lower-cased, without leading dashes): ``os.path.join``. Checked
    # against what a document defines, where ``os_environ`` must not pass for ``os.environ``.
    written: str = field(default="", compare=False)
    # A word, identifier or option as typed, case kept (``ProgressBar``, ``B`` for ``-B``): the
    # definitions signal tells ``-B`` from ``-b`` and the class ProgressBar from progressbar().
    cased: str = field(default="", compare=False)

    @property
    def atoms(self) -> tuple[Term, ...]:
        """What FTS5 matches one at a time: an identifier's parts, else the term itself."""
        if self.kind != "ident":
            return (self,)
        last = len(self.parts) - 1
        return tuple(
            Term(part, "prefix" if self.prefix and i == last else "word") for i, part in enumerate(self.parts)
        )


@dataclass(frozen=True)
class ParsedQuery:
    terms: tuple[Term, ...]
    # Distinct terms past MAX_QUERY_TERMS, left out of ``terms`` (see parse_query).
    dropped: int = 0

    @property
    def positive(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if not term.negated)

    @property
    def negative(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if term.negated)

    @property
    def highlight_terms(self) -> tuple[str, ...]:
        """The positive terms as ``snippets.term_matcher`` expects them (prefixes end in ``*``).
        A hyphenated name is one term, a phrase of its parts (``ssh keygen``): as two it counted
        twice, and the line that names the command (its NAME line) outscored the entry of the
        option asked with it (``ssh-keygen -a``). An option keeps a dash (``-a``), so it is not the
        word "a" of every sentence. A dotted name gives its parts, so a line that holds only its
        last part (``environ`` for ``os.environ``) still shows."""
        terms: list[str] = []
        for term in self.positive:
            if term.option and term.kind == "word":
                terms.append("-" + (term.cased or term.text))  # matched with its dashes (snippets)
                continue
            if term.kind == "ident" and term.hyphenated and not term.prefix:
                terms.append(term.text)
                continue
            terms += [atom.text + "*" if atom.kind == "prefix" else atom.text for atom in term.atoms]
        return tuple(terms)


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
    # An option is never a stopword: `-a` in `ls -a`, `-i` in `grep -i`, `--all`.
    kept = [t for t in parsed.terms if t.negated or t.kind != "word" or t.option or t.text not in STOPWORDS]
    if not any(not t.negated for t in kept):
        return parsed
    return ParsedQuery(tuple(kept), parsed.dropped)


def _has_word_char(text: str) -> bool:
    return _WORD_CHAR.search(text) is not None


def _word_terms(text: str, *, prefix: bool, negated: bool) -> list[Term]:
    if not has_cjk(text):
        text = _CONTRACTION.sub("", text)
        parts = tuple(_PART.findall(text))
        if len(parts) > 1:
            # os.path.join, Py_INCREF, a::b, --omit=dev, save-exact: the parts are required, their
            # adjacency only scores (the page defining join() under "os.path" never writes the
            # dotted name).
            hyphenated = _HYPHENATED.fullmatch(text) is not None
            ident = Term(
                " ".join(parts),
                "ident",
                negated,
                parts,
                prefix,
                hyphenated=hyphenated,
                written=as_typed(text),
            )
            return [ident]
        return [Term(parts[0], "prefix" if prefix else "word", negated)] if parts else []
    words = [word for word in segment_query_words(text) if _has_word_char(word)]
    if not words:
        return []
    if negated and len(words) > 1:
        # Excluding each piece separately would drop every document that mentions any of them.
        return [Term(" ".join(words), "phrase", True)]
    terms = [Term(word, "word", negated) for word in words[:-1]]
    terms.append(Term(words[-1], "prefix" if prefix else "word", negated))
    return terms


def as_typed(word: str) -> str:
    """A name as the user means it: without the quotes, backticks, brackets or punctuation around
    it (``os.path.join()`` is ``os.path.join``), underscores kept (``__slots__``)."""
    return _NAME_EDGES.sub("", word)


def _dash_meaning(word: str) -> tuple[str, bool, bool]:
    """(the word without its dashes, negated?, written as an option?) for a word.

    ``--flag`` and ``-x`` (one character: ``ls -l``, ``kill -9``) name command-line options and
    are searched for, as are a number (``head -20``) and a letter with its value attached
    (``-f1``, ``-d:``: the letter). ``-word`` excludes the word, unless the index knows it as an
    option name (``find -mtime``): :func:`resolve_options` decides that, with the index at hand.
    """
    if word.startswith("--"):
        return word.lstrip("-"), False, True
    if word.startswith("-"):
        rest = word[1:]
        if len(rest.rstrip("*")) == 1 or rest.isdigit():
            return rest, False, True
        valued = _OPTION_WITH_VALUE.fullmatch(rest)
        if valued is not None:
            return valued.group(1), False, True
        if rest.endswith(":"):
            # "-bash: ./deploy.sh: Permission denied": a login shell's name in its message.
            return rest, False, False
        return rest, True, _OPTION_NAME.fullmatch(rest) is not None
    return word, False, False


# Grouped short options (``tar -xzf``, ``du -sh``) are at most this long.
_MAX_OPTION_GROUP = 3


def resolve_options(parsed: ParsedQuery, is_option: Callable[[str], bool]) -> ParsedQuery:
    """Turn each ``-word`` that ``is_option`` knows from an exclusion into an option search:
    ``-mtime`` when ``mtime`` is an option, ``-sh`` when ``s`` and ``h`` both are."""
    if not any(t.negated and t.option for t in parsed.terms):
        return parsed
    terms: list[Term] = []
    for term in parsed.terms:
        if not (term.negated and term.option):
            terms.append(term)
        elif len(term.text) <= _MAX_OPTION_GROUP and all(is_option(letter) for letter in term.text):
            letters = term.cased if len(term.cased) == len(term.text) else term.text
            terms.extend(Term(letter.lower(), "word", option=True, cased=letter) for letter in letters)
        elif is_option(term.text):
            terms.append(replace(term, negated=False))
        else:
            terms.append(replace(term, option=False))
    return ParsedQuery(tuple(dict.fromkeys(terms)), parsed.dropped)


def parse_query(q: str) -> ParsedQuery:
    """Split a user query into terms; unsearchable pieces (punctuation, emoji, lone ``*``) are dropped."""
    q = _UNSAFE.sub(" ", q)
    terms: list[Term] = []
    for match in _TOKEN.finditer(q):
        phrase, word = match.group(2), match.group(3)
        if phrase is not None:
            negated = bool(match.group(1))
            if _has_word_char(phrase):
                words = segment_query_words(phrase.lower())
                terms.append(Term(" ".join(words), "phrase", negated))
            continue
        word, negated, option = _dash_meaning(match.group(1) + word)
        value_terms: list[Term] = []
        if option and "=" in word:
            # --exclude=node_modules: the option is --exclude; its value is a word of the query,
            # not a part of the option's name (tar(1) lists --exclude=PATTERN, not node_modules).
            word, value = word.split("=", 1)
            if _has_word_char(value):
                value_terms = _word_terms(value.lower(), prefix=False, negated=False)
        prefix = False
        if word.endswith("*"):
            stem = word.rstrip("*")
            if _has_word_char(stem):
                word, prefix = stem, True
        if _has_word_char(word):
            found = _word_terms(word.lower(), prefix=prefix, negated=negated)
            if len(found) == 1 and not has_cjk(word):
                found = [replace(found[0], cased=as_typed(_CONTRACTION.sub("", word)))]
            terms.extend(replace(term, option=True) for term in found) if option else terms.extend(found)
        terms.extend(value_terms)
    # A repeated term adds nothing to the match but would inflate the matched/total term counts.
    distinct = tuple(dict.fromkeys(terms))
    # Each term is an FTS5 clause, a frequency look-up and a pass of the ranking: 15,000 distinct
    # words took 9 s. The first ones are kept; the caller says how many were dropped.
    return ParsedQuery(distinct[:MAX_QUERY_TERMS], max(0, len(distinct) - MAX_QUERY_TERMS))


def without_exclusions(q: str, is_option: Callable[[str], bool]) -> str:
    """The query text without its exclusions (``-word``, ``-"a phrase"``), for a model that
    reads text: an embedder given "restore -laptop" would look for laptops."""
    kept = []
    for match in _TOKEN.finditer(_UNSAFE.sub(" ", q)):
        token = match.group(0)
        if match.group(2) is not None:
            if not match.group(1):
                kept.append(token)
            continue
        word, negated, option = _dash_meaning(token)
        if not negated or (option and _is_known_option(word, is_option)):
            kept.append(token)
    return " ".join(kept)


def model_text(q: str) -> str:
    """The query as a model reads it (the embedder's text): its first MAX_QUERY_TERMS words, at most
    MAX_MODEL_QUERY_CHARS characters. A 100 KB query is over any model's window, and the words
    past the cap are not searched for by keyword either."""
    words = q.split(maxsplit=MAX_QUERY_TERMS)
    if len(words) <= MAX_QUERY_TERMS and len(q) <= MAX_MODEL_QUERY_CHARS:
        return q
    return " ".join(words[:MAX_QUERY_TERMS])[:MAX_MODEL_QUERY_CHARS]


def _is_known_option(word: str, is_option: Callable[[str], bool]) -> bool:
    lowered = word.lower()
    if len(lowered) <= _MAX_OPTION_GROUP and all(is_option(letter) for letter in lowered):
        return True
    return is_option(lowered)


def _literal(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts_term(term: Term) -> str:
    """One term as an FTS5 expression (``negated`` is ignored): ``"word"``, ``"a b"``, ``"ab" *``,
    or for an identifier its parts, all required: ``("os" AND "path" AND "join")``."""
    if term.kind == "ident":
        return "(" + " AND ".join(fts_term(atom) for atom in term.atoms) + ")"
    literal = _literal(term.text)
    return literal + " *" if term.kind == "prefix" else literal


def fts_adjacent(term: Term) -> str:
    """An identifier's parts as one phrase (adjacent, in order): what scores the exact name."""
    literal = _literal(term.text)
    return literal + " *" if term.prefix else literal


def fts_expression(parsed: ParsedQuery, mode: Mode = "all") -> str | None:
    """The MATCH expression for ``parsed``, or None when it has no positive term to search for.

    ``mode="all"`` requires every positive term, ``"clauses"`` at least one (an identifier with
    all its parts), ``"any"`` at least one word or identifier part; negated terms always exclude.
    """
    if mode == "all":
        positive = [fts_term(term) for term in parsed.positive]
        joiner = " AND "
    elif mode == "clauses":
        positive = [fts_term(term) for term in parsed.positive]
        joiner = " OR "
    elif mode == "any":
        atoms = dict.fromkeys(atom for term in parsed.positive for atom in term.atoms)
        positive = [fts_term(atom) for atom in atoms]
        joiner = " OR "
    else:
        raise ValueError(f"unknown match mode: {mode!r}")
    if not positive:
        return None
    expression = joiner.join(positive)
    if joiner == " OR ":
        expression = "(" + expression + ")"
    # An excluded identifier excludes the name, not every document that uses its parts.
    negative = [fts_adjacent(t) if t.kind == "ident" else fts_term(t) for t in parsed.negative]
    if len(negative) <= _MAX_CHAINED_NOTS:
        expression += "".join(f" NOT {term}" for term in negative)
    else:
        expression += " NOT (" + " OR ".join(negative) + ")"
    return expression
