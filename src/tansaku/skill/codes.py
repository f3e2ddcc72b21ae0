"""The exit, error and warning codes an agent must act on, with what it should do about each.

The codes and exit codes are read from the code itself (errors.EXIT_CODES, the error classes'
``code`` and ``exit_code``, the warning-code constants where a module has one), so the tables in
SKILL.md cannot drift from what tansaku does; only the advice is written here. test_skill checks
that every exit code has advice and that every warning code listed is one tansaku emits.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import errors

# What an agent does on each exit code of errors.EXIT_CODES (test_skill keeps the keys equal).
EXIT_ADVICE: dict[int, str] = {
    0: "use the output; an empty `results` list is a real miss only when `status` showed the"
    " collection indexed",
    1: "the thing named does not exist: read the error's `hint` (similar paths, known names) and"
    " try again with one of them; do not report it as absent content",
    2: "the command is wrong: fix it from the message (a command-line mistake is text on stderr,"
    " even with `--json`; other errors are the JSON object)",
    3: "tansaku cannot work right now: never report this as 'no results'; tell the user the error"
    " and the command in its `hint`",
    4: "part of the work failed: report which part, from the message",
    70: "a tansaku bug: tell the user the message; do not retry in a loop",
    130: "the run was interrupted: run it again only if the user asks",
}


@dataclass(frozen=True)
class CodeRow:
    code: str
    exit_code: int | None  # None for a warning: the command still exits 0
    advice: str


# Errors (a JSON object on stderr with --json: {"error": {"code", "message", "hint"}}).
_ERRORS: tuple[tuple[type[errors.TansakuError], str], ...] = (
    (
        errors.IndexMissing,
        "no index yet: stop; tell the user `tansaku collection add PATH` (it indexes that folder)",
    ),
    (
        errors.IndexLocked,
        "another tansaku process is writing: wait a minute and run the same command once more;"
        " then tell the user",
    ),
    (
        errors.IndexSchemaMismatch,
        "the index is from another tansaku version: tell the user `tansaku update`",
    ),
    (
        errors.IndexCorrupt,
        "the index is damaged: tell the user the message and its hint; do not delete anything",
    ),
    (errors.NoVectors, "no vectors yet: use `search` (or `query`); tell the user `tansaku embed`"),
    (
        errors.ModelMissing,
        "the model is not on this machine: use `search`; tell the user the command in the hint"
        " (`tansaku models pull embed`)",
    ),
    (errors.OfflineError, "a download needs the network: use `search`; tell the user"),
    (errors.CollectionNotFound, "no such collection: pick one from `tansaku status --json` (or drop `-c`)"),
    (
        errors.DocumentNotFound,
        "no such document: the hint and `details.similar` list close paths; use a docid from a result",
    ),
    (
        errors.LineOutOfRange,
        "past the last line: `details.total_lines` says how many there are; read a lower range",
    ),
    (
        errors.AmbiguousDocid,
        "the docid prefix matches several documents: use the full 6 characters from the result",
    ),
    (errors.EmptyQuery, "the query has no searchable words: rephrase it"),
    (errors.UsageError, "a bad option value: fix it from the message"),
)


def error_rows() -> list[CodeRow]:
    return [CodeRow(cls.code, cls.exit_code, advice) for cls, advice in _ERRORS]


def warning_rows() -> list[CodeRow]:
    """Warnings in a result's `warnings` list: the command exited 0, but the answer is partial."""
    # The modules that name their codes with a constant are imported for it; the others spell the
    # code where they raise it (test_skill checks each code below occurs in the package).
    from ..fields.lookup import WHERE_FILES_ONLY
    from ..index.fields import FRONT_MATTER_INVALID
    from ..models.rerank import RERANK_FAILED, RERANK_PARTIAL
    from ..search.vector_texts import QUERY_UNREADABLE

    rows = [
        (
            errors.IndexMissing.code,
            "`status` only (it exits 0): there is no index; do not search; tell the user `tansaku"
            " collection add PATH`",
        ),
        (
            errors.IndexSchemaMismatch.code,
            "`status` only: the index needs `tansaku update` (the user runs it) before searches work",
        ),
        ("NO_COLLECTIONS", "nothing is indexed: tell the user `tansaku collection add PATH`"),
        (
            "EXCLUDED_COLLECTIONS",
            "some collections were not searched (the message names them): add `-c NAME` if one"
            " may hold the answer",
        ),
        (
            "PARTIAL_MATCH",
            "no document has every term: the results have some of them (the message names terms"
            " found nowhere); say so, or search again with other words",
        ),
        ("QUERY_TRUNCATED", "only the start of a long query was searched: search with fewer words"),
        (
            errors.ModelMissing.code,
            "`query` answered from keywords only: fine to use; mention `tansaku models pull embed` once",
        ),
        (
            "VECTORS_UNAVAILABLE",
            "`query` answered from keywords only this time (vectors unavailable): use it",
        ),
        (
            "PENDING_VECTORS",
            "some chunks have no vector yet and only keyword search sees them: mention `tansaku embed`",
        ),
        (
            "QUICK_VECTORS",
            "some chunks are searched by a quick vector: results are usable; `tansaku embed` improves them",
        ),
        ("STALE_VECTORS", "vectors from another embedding model were skipped: mention `tansaku embed`"),
        (QUERY_UNREADABLE, "the embedding model cannot read this query (e.g. its language): use `search`"),
        (WHERE_FILES_ONLY, "`--where` searched file collections only; session collections were left out"),
        ("NO_MATCH", "a `multi-get` pattern matched no document: check it against the results' paths"),
        (
            "ALL_SKIPPED",
            "`multi-get` skipped every document as larger than `--max-bytes` (exit 1): read each"
            " with `get` and a line range",
        ),
        (RERANK_PARTIAL, "informational: reranking stopped at its time budget; no action"),
        (RERANK_FAILED, "informational: the reranker was not used for this query; no action"),
        (FRONT_MATTER_INVALID, "`update` only: a file's front matter was not read; no action for searching"),
    ]
    return [CodeRow(code, None, advice) for code, advice in rows]
