"""Keyword search: FTS5 + BM25 over the chosen collections, with an honest partial-match fallback."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import limits
from ..errors import EmptyQuery
from ..store.backend import documents as store
from ..store.documents import KeywordScope, StoredDocument
from ..store.fields import DocumentFilter
from ..text.cjk import has_cjk
from ..types import Collection, Hit, Notice, SearchResult, Snippet
from .copies import first_copies, with_languages, with_other_paths
from .hits import hit_page, make_hit
from .pages import page_starts
from .query import (
    ParsedQuery,
    Term,
    fts_adjacent,
    fts_expression,
    fts_term,
    parse_query,
    required_terms,
    resolve_options,
)
from .scoring import COMMON_MATCHES, NAME_WEIGHTS, PROSE_WEIGHTS, Scored, rescore
from .snippets import best_snippet, chunk_snippet

# FTS5 orders candidates; tansaku re-scores this many per collection (and per candidate query),
# so its own IDF and the identifier phrases can reorder them. FTS5 scores every match to order
# them anyway, so a larger pool costs little.
POOL = 200
# Queries of up to this many terms (stopwords aside) require all of them; longer ones rank
# documents by the terms they contain, never filter on them (pasted errors, questions).
STRICT_CLAUSES = 2
# The share of a long query's terms below which the best results get PARTIAL_MATCH.
MIN_SHOULD_MATCH = 0.5


@dataclass(frozen=True)
class SearchOptions:
    limit: int | None = 5  # None = all
    min_score: float = 0.0
    full: bool = False
    # False: hits carry no snippet (`query` fuses 40 candidates and shows a few: it asks
    # `add_snippets` for those; a snippet of a 180 KB page costs milliseconds).
    snippets: bool = True
    # --where: only the documents whose front-matter fields pass (store/fields.py), before the limit.
    where: DocumentFilter | None = None
    # False: each text once, its other paths in the hit's also_at (search/copies.py), before the
    # limit; True (--all-copies): every document, copies included.
    all_copies: bool = False


def excluded(conn: Any, query: str, found: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of these (collection, path) documents the query's exclusions rule out: results that
    came another way (vectors) must obey ``-word`` too."""
    parsed = resolve_options(parse_query(query), lambda name: store.option_defined(conn, name))
    if not parsed.negative or not found:
        return set()
    # The same expressions search's NOT clauses use (an excluded identifier excludes the name).
    expression = " OR ".join(fts_adjacent(t) if t.kind == "ident" else fts_term(t) for t in parsed.negative)
    docs = {(c, p): store.document_at(conn, c, p) for c, p in found}
    ids = {doc.id: key for key, doc in docs.items() if doc is not None}
    return {ids[i] for i in store.phrase_documents(conn, expression, list(ids))}


# A command with its options and an argument or two (``python -X importtime``, ``date -d
# yesterday``) is a name lookup up to this many terms.
MAX_COMMAND_TERMS = 4


def is_name_lookup(conn: Any, query: str) -> bool:
    """A short query that names something (os.path.join, --preserve-root, rsync), or a command
    with its options (``python -X importtime``): what keyword search with its definitions signal
    finds best, and an embedding of a bare name least."""
    parsed = resolve_options(parse_query(query), lambda name: store.option_defined(conn, name))
    clauses = required_terms(parsed)
    if command_word(clauses) is not None and len(clauses.positive) <= MAX_COMMAND_TERMS:
        return True
    return (
        bool(clauses.positive)
        and len(clauses.positive) <= STRICT_CLAUSES
        and bool(name_terms(parsed, clauses))
    )


def name_terms(parsed: ParsedQuery, clauses: ParsedQuery, command: Term | None = None) -> set[Term]:
    """The terms that name something, for which headings and option lists are the best evidence:
    identifiers and options as written (os.path.join, --flag), a lone word (`rsync`), and the
    word beside an option in a short query (`find -mtime`). A
    hyphenated word is a name in a short query (save-exact), prose in a sentence (CPU-heavy)."""
    short = len(clauses.positive) <= STRICT_CLAUSES
    names = {t for t in parsed.positive if t.option or (t.kind == "ident" and (short or not t.hyphenated))}
    if len(clauses.positive) == 1 and not has_cjk(clauses.positive[0].text):
        names.add(clauses.positive[0])
    if short and any(t.option for t in clauses.positive):
        # "find -mtime", "ssh -L": the word beside an option names the command, whose page (its
        # NAME line) defines it; tar(1) lists --mtime too.
        names |= {t for t in clauses.positive if t.kind == "word" and not has_cjk(t.text)}
    command = command or command_word(clauses)
    if command is not None:
        names.add(command)
    return names


def command_word(clauses: ParsedQuery) -> Term | None:
    """The first word of a query whose next term is an option, however long the query: it names
    the command (``mount -o loop``, ``tar -czf backup.tar.gz dir``)."""
    positive = clauses.positive
    if len(positive) >= 2 and positive[0].kind == "word" and positive[1].option:
        return None if has_cjk(positive[0].text) else positive[0]
    return None


# A message as a program prints it: "mkdir: cannot create directory 'logs': No such file".
_PROGRAM_MESSAGE = re.compile(r"\s*([a-z][a-z0-9_-]*):\s")


def message_program(conn: Any, query: str, clauses: ParsedQuery) -> Term | None:
    """The program a pasted message starts with (``umount: /mnt/data: target is busy.``), when a
    document is titled by it: it names the command whose page explains the message, as
    ``command_word`` does. In a collection with no page for it (``tansaku: error: ...`` over
    tansaku's own code) the word is only a word.

    Only a lower-case word counts as a program: an exception's name before the colon
    (``OSError: [Errno 98] Address already in use``) is defined by the exceptions reference, and
    the cause is explained elsewhere (measured on the judged error queries: with exception names,
    RecursionError 3 -> 1 but ImportError, OSError and UnicodeDecodeError each a rank down)."""
    positive = clauses.positive
    program = _PROGRAM_MESSAGE.match(query)
    if len(positive) <= STRICT_CLAUSES or program is None or positive[0].kind != "word":
        return None
    if positive[0].cased != program.group(1) or not store.title_names(conn, positive[0].text):
        return None
    return positive[0]


def command_term(conn: Any, query: str, clauses: ParsedQuery) -> Term | None:
    """The word that names the command in any query: beside an option, or a message's program."""
    return command_word(clauses) or message_program(conn, query, clauses)


def search(
    conn: Any,
    query: str,
    collections: Sequence[Collection],
    contexts: Mapping[str, str],
    options: SearchOptions,
    warnings: Sequence[Notice] = (),
) -> SearchResult:
    started = time.perf_counter()
    parsed = resolve_options(parse_query(query), lambda name: store.option_defined(conn, name))
    clauses = required_terms(parsed)
    if fts_expression(clauses, "all") is None:
        raise EmptyQuery(
            f"the query {query!r} has nothing to search for",
            hint="give at least one word that is not negated with '-'",
        )
    notices = list(warnings)
    if parsed.dropped:
        notices.append(truncation_notice(parsed))
    command = command_term(conn, query, clauses)
    names = name_terms(parsed, clauses, command)
    n_clauses = len(clauses.positive)
    strict = n_clauses <= STRICT_CLAUSES
    pool = None if options.limit is None else max(POOL, options.limit * 4)
    weights = NAME_WEIGHTS if names else PROSE_WEIGHTS
    candidates: dict[int, float] = {}
    where = options.where
    total = _candidates(
        conn, fts_expression(clauses, "all"), collections, pool, weights, candidates, where=where
    )
    complete = set(candidates)
    if not strict:
        # Long queries rank, they do not filter: documents with any term are candidates. The
        # documents with every term come first from their own query, so a flood of documents
        # with one frequent word cannot push them out of the pool.
        selective = _selective(conn, clauses)
        total = _candidates(
            conn,
            fts_expression(selective, "clauses"),
            collections,
            pool,
            weights,
            candidates,
            counted=fts_expression(clauses, "clauses"),
            where=where,
        )
    if not candidates:
        # Last resort: any word at all, identifier parts on their own included ("No results."
        # must mean that nothing matches).
        total = _candidates(
            conn, fts_expression(clauses, "any"), collections, pool, weights, candidates, where=where
        )
    if not candidates and len(parsed.positive) > len(clauses.positive):
        # ... and the optional stopwords too: "zebrafish the" is not "No results." if "the" exists.
        total = _candidates(
            conn, fts_expression(parsed, "any"), collections, pool, weights, candidates, where=where
        )
    scored, absent = rescore(
        conn, parsed, clauses, names, candidates, complete, short=strict, command=command
    )
    best = max((item.clauses for item in scored), default=0.0)
    needed = n_clauses if strict else math.ceil(n_clauses * MIN_SHOULD_MATCH)
    if scored and (best < needed or absent):
        found_nowhere = f" ({', '.join(absent)} found nowhere)" if absent else ""
        notices.append(
            Notice(
                "PARTIAL_MATCH",
                f"no document contains all {n_clauses} terms{found_nowhere}; showing documents "
                "that contain some of them",
            )
        )
    scored.sort(key=lambda item: (-item.score, item.doc_id))
    scored = [item for item in scored if item.score >= options.min_score]
    if not options.all_copies:
        # Every candidate's text (a read of at most the pools' ids), so the total counts texts.
        distinct = first_copies(conn, [item.doc_id for item in scored], None)
        total = max(len(distinct.kept), total - distinct.hidden)
        scored = [scored[i] for i in distinct.kept[: options.limit]]
    elif options.limit is not None:
        scored = scored[: options.limit]
    read = {} if options.all_copies else distinct.docs
    hits = _hits(conn, scored, clauses, n_clauses, contexts, options, {c.name: c for c in collections}, read)
    if not options.all_copies:
        hits = with_languages(hits, [item.doc_id for item in scored], distinct.languages)
    definers = tuple(hit.virtual_path for hit, item in zip(hits, scored, strict=True) if item.defines)
    return SearchResult(
        query=query,
        mode="search",
        hits=tuple(hits),
        total=total,
        limit=options.limit,
        warnings=tuple(notices),
        took_ms=(time.perf_counter() - started) * 1000,
        collections=tuple(c.name for c in collections),
        definers=definers,
    )


def truncation_notice(parsed: ParsedQuery) -> Notice:
    """QUERY_TRUNCATED: the query's terms past MAX_QUERY_TERMS were not searched for."""
    return Notice(
        "QUERY_TRUNCATED",
        f"the query has {len(parsed.terms) + parsed.dropped} distinct terms; searched for the first "
        f"{len(parsed.terms)} and dropped {parsed.dropped} (at most {limits.MAX_QUERY_TERMS} per query)",
    )


def _candidates(
    conn: Any,
    expression: str | None,
    collections: Sequence[Collection],
    pool: int | None,
    weights: Sequence[float],
    found: dict[int, float],
    counted: str | None = None,
    where: DocumentFilter | None = None,
) -> int:
    """Add best-first document ids per collection (each collection gets its own pool) to
    ``found``, with FTS5's raw bm25 for the expression; returns how many documents match
    ``counted`` (default: the expression)."""
    total = 0
    if expression is None:
        return total
    # Filtering by collection joins every match with its document row (30 ms for 35,000 matches):
    # needless when the one collection searched is the whole index.
    whole_index = len(collections) == 1 and store.sole_collection(conn) == collections[0].name
    for collection in collections:
        limits.check()
        scope = None if whole_index else collection.name
        rows = store.keyword_search(conn, expression, KeywordScope(scope, pool, where), weights)
        for doc_id, raw in rows:
            found.setdefault(doc_id, raw)
        full_pool = pool is not None and len(rows) == pool
        if (counted is not None and counted != expression) or full_pool:
            total += store.keyword_count(conn, counted or expression, scope, where)
        else:
            total += len(rows)
    return total


def _selective(conn: Any, clauses: ParsedQuery) -> ParsedQuery:
    """The terms that choose a long query's candidates: not those in more than COMMON_MATCHES
    documents, unless every term is (FTS5 scores every document an OR matches to order them, and a
    document with nothing but a frequent word of the question is a poor candidate anyway)."""
    kept = []
    for term in clauses.positive:
        limits.check()
        if store.phrase_frequency(conn, fts_term(term)) <= COMMON_MATCHES:
            kept.append(term)
    if not kept:
        return clauses
    return ParsedQuery((*kept, *clauses.negative))


_NO_SNIPPET = Snippet(1, ())


def highlight_terms(conn: Any, query: str) -> list[str]:
    """The terms a snippet (or a rerank passage) looks for in ``query``'s results."""
    parsed = resolve_options(parse_query(query), lambda name: store.option_defined(conn, name))
    return list(required_terms(parsed).highlight_terms)


def add_snippets(conn: Any, query: str, hits: Sequence[Hit]) -> list[Hit]:
    """The hits with the snippet keyword search would give them, where they have none."""
    from dataclasses import replace

    missing = [hit for hit in hits if not hit.snippet.lines]
    if not missing:
        return list(hits)
    terms = highlight_terms(conn, query)
    docs = {(h.collection, h.path): store.document_at(conn, h.collection, h.path) for h in missing}
    texts = store.bodies(conn, [doc.hash for doc in docs.values() if doc is not None])
    pages = page_starts(conn, [doc for doc in docs.values() if doc is not None])
    out = []
    for hit in hits:
        doc = docs.get((hit.collection, hit.path)) if not hit.snippet.lines else None
        if doc is not None:
            body = texts.get(doc.hash, "")
            if hit.chunk_lines is not None:  # found by vectors: the best lines of its chunk
                snippet = chunk_snippet(body, hit.chunk_lines[0], hit.chunk_lines[1], terms)
            else:
                snippet = best_snippet(body, terms)
            starts = pages.get(doc.hash, ())
            hit = replace(hit, snippet=snippet, page=hit_page(starts, snippet, hit.chunk_lines))
        out.append(hit)
    return out


def _hits(
    conn: Any,
    scored: list[Scored],
    parsed: ParsedQuery,
    n_required: int,
    contexts: Mapping[str, str],
    options: SearchOptions,
    collections: Mapping[str, Collection],
    read: Mapping[int, StoredDocument] | None = None,
) -> list[Hit]:
    """``read``: documents read already (first_copies'), not asked for again (a round trip on
    PostgreSQL)."""
    known = read or {}
    missing = [item.doc_id for item in scored if item.doc_id not in known]
    found = store.documents_by_ids(conn, missing) if missing else {}
    docs = {item.doc_id: known.get(item.doc_id) or found[item.doc_id] for item in scored}
    wanted = options.snippets or options.full
    texts = store.bodies(conn, [doc.hash for doc in docs.values()]) if wanted else {}
    pages = page_starts(conn, docs.values())
    terms = parsed.highlight_terms  # the required terms: a stopword line is no better snippet
    hits: list[Hit] = []
    for item in scored:
        limits.check()
        doc = docs[item.doc_id]
        body = texts.get(doc.hash, "")
        snippet = best_snippet(body, terms) if options.snippets else _NO_SNIPPET
        full = body if options.full else None
        hits.append(
            make_hit(
                doc,
                item.score,
                snippet,
                full,
                collections,
                contexts,
                pages,
                matched_terms=math.floor(item.clauses),
                total_terms=n_required,
            )
        )
    if options.all_copies:
        return hits
    return with_other_paths(conn, hits, [docs[item.doc_id] for item in scored], collections)
