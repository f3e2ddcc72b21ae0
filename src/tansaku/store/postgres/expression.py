"""FTS5 MATCH expressions, parsed as FTS5 parses them, for the PostgreSQL backend to evaluate.

search/query.py writes FTS5 expressions (the SQLite index runs them as they are); the PostgreSQL
backend reads the same strings here so both backends answer the same expression. The grammar is
FTS5's, as far as tansaku writes it: quoted strings (``"a b"``, ``""`` for a quote), a ``*`` after
a string (the last token is a prefix), ``AND``, ``OR``, ``NOT``, implicit AND, parentheses, and
column filters (``title : ...``, ``{title headings} : ...``). Precedence as FTS5's grammar gives
it: juxtaposition, then NOT, then AND, then OR, all left-associative. NEAR and ``^`` are not
used by tansaku and are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .tokens import COLUMNS, text_tokens


class ExpressionError(ValueError):
    """An expression outside the grammar above (a bug in the caller, never user input)."""


@dataclass(eq=False)
class Phrase:
    tokens: tuple[str, ...]
    prefix: bool  # the last token matches any token it begins
    columns: frozenset[int] | None  # None: every column
    number: int = field(default=0)  # the phrase's place in the expression, left to right (FTS5's order)


@dataclass(eq=False)
class And:
    children: list[Node]


@dataclass(eq=False)
class Or:
    children: list[Node]


@dataclass(eq=False)
class Not:
    left: Node
    right: Node


Node = Phrase | And | Or | Not


@dataclass
class Expression:
    root: Node
    phrases: list[Phrase]  # in FTS5's phrase order: bm25 sums them in this order


_LEXEME = re.compile(r'\s*(?:(")|(\*)|(\()|(\))|(\{)|(\})|(:)|([^\s"*(){}:]+))')


_KINDS = {2: "STAR", 3: "LP", 4: "RP", 5: "LCP", 6: "RCP", 7: "COLON", 8: "WORD"}


def _lex(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        match = _LEXEME.match(text, i)
        if match is None:
            raise ExpressionError(f"cannot read {text[i:]!r}")
        if match.group(1):
            j = match.end()
            value = []
            while True:
                end = text.find('"', j)
                if end < 0:
                    raise ExpressionError("unterminated string")
                value.append(text[j:end])
                if text.startswith('""', end):
                    value.append('"')
                    j = end + 2
                    continue
                i = end + 1
                break
            out.append(("STRING", "".join(value)))
            continue
        kind = next(_KINDS[n] for n in _KINDS if match.group(n))
        word = match.group(8)
        if kind == "WORD" and word in ("AND", "OR", "NOT"):
            kind = word
        out.append((kind, word or ""))
        i = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.at = 0
        self.phrases: list[Phrase] = []

    def peek(self, offset: int = 0) -> str | None:
        n = self.at + offset
        return self.items[n][0] if n < len(self.items) else None

    def take(self, kind: str) -> str:
        if self.peek() != kind:
            raise ExpressionError(f"expected {kind}, found {self.peek()}")
        value = self.items[self.at][1]
        self.at += 1
        return value

    def expression(self) -> Node:
        node = self.conjunction()
        while self.peek() == "OR":
            self.take("OR")
            node = _joined(Or, node, self.conjunction())
        return node

    def conjunction(self) -> Node:
        node = self.negation()
        while self.peek() == "AND":
            self.take("AND")
            node = _joined(And, node, self.negation())
        return node

    def negation(self) -> Node:
        node = self.sequence()
        while self.peek() == "NOT":
            self.take("NOT")
            node = Not(node, self.sequence())
        return node

    def sequence(self) -> Node:
        node = self.primary()
        while self.peek() in ("STRING", "LP", "LCP") or (self.peek() == "WORD"):
            node = _joined(And, node, self.primary())
        return node

    def primary(self) -> Node:
        columns: frozenset[int] | None = None
        if self.peek() == "LCP" or (self.peek() == "WORD" and self.peek(1) == "COLON"):
            columns = self.column_filter()
        if self.peek() == "LP":
            self.take("LP")
            node = self.expression()
            self.take("RP")
        else:
            node = self.phrase()
        if columns is not None:
            _restrict(node, columns)
        return node

    def column_filter(self) -> frozenset[int]:
        names = []
        if self.peek() == "LCP":
            self.take("LCP")
            while self.peek() == "WORD":
                names.append(self.take("WORD"))
            self.take("RCP")
        else:
            names.append(self.take("WORD"))
        self.take("COLON")
        try:
            return frozenset(COLUMNS.index(name) for name in names)
        except ValueError:
            raise ExpressionError(f"no such column in {names}") from None

    def phrase(self) -> Phrase:
        text = self.take("STRING") if self.peek() == "STRING" else self.take("WORD")
        prefix = self.peek() == "STAR"
        if prefix:
            self.take("STAR")
        phrase = Phrase(tuple(text_tokens(text)), prefix, None, len(self.phrases))
        self.phrases.append(phrase)
        return phrase


def _joined(kind: type[And] | type[Or], left: Node, right: Node) -> Node:
    # FTS5 flattens a chain of one operator into one node; only the tree's meaning matters here.
    children = left.children if isinstance(left, kind) else [left]
    return kind([*children, right])


def _restrict(node: Node, columns: frozenset[int]) -> None:
    if isinstance(node, Phrase):
        node.columns = columns if node.columns is None else node.columns & columns
    elif isinstance(node, Not):
        _restrict(node.left, columns)
        _restrict(node.right, columns)
    else:
        for child in node.children:
            _restrict(child, columns)


def parse(text: str) -> Expression:
    parser = _Parser(text)
    root = parser.expression()
    if parser.peek() is not None:
        raise ExpressionError(f"unexpected {parser.peek()} in {text!r}")
    return Expression(root, parser.phrases)
