"""Redaction of every text a parsed transcript carries, whatever field holds it.

The indexer passes each adapter's report through :func:`redact_report` before anything is
stored, so titles, projects, prompts, tool names and the parser state kept for append mode are
redacted like turn texts, and a field added to the model later is redacted unless it is named
in ``KEPT_FIELDS``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, TypeVar

from .model import ParseReport
from .redact import redact

# The fields of the parsed units (model.py) that are keys, not text: ids and paths the index
# matches records and files on, closed vocabularies, and timestamps the builder has already
# validated as ISO 8601. Every other string is redacted, so a field a builder adds to the model
# is redacted unless it is named here.
KEPT_FIELDS = frozenset(
    {
        "id",
        "session_id",
        "parent_session_id",
        "source_path",
        "source_format",
        "pending_prompt_source",
        "role",
        "kind",
        "timestamp",
        "first_timestamp",
        "last_timestamp",
    }
)
# A turn's copy of its run's prompt: counted in the turn that holds the prompt itself.
_COPIES = frozenset({"run_prompt"})
# What a report carries that is not indexed: the adapter's diagnostics, shown as warnings.
_NOT_INDEXED = frozenset({"skipped_types", "bad_records"})

Tally = Counter[str] | None
Unit = TypeVar("Unit")


def _redacted(value: Any, tally: Tally) -> Any:
    if isinstance(value, str):
        result = redact(value)
        if tally is not None:
            tally.update(result.counts)
        return result.text
    if is_dataclass(value) and not isinstance(value, type):
        return _redact_fields(value, lambda name: None if name in _COPIES else tally)
    if isinstance(value, tuple | list):
        return type(value)(_redacted(item, tally) for item in value)
    return value


def _redact_fields(unit: Unit, tally_for: Callable[[str], Tally]) -> Unit:
    changes: dict[str, Any] = {}
    for spec in fields(unit):  # type: ignore[arg-type]
        if spec.name in KEPT_FIELDS or spec.name in _NOT_INDEXED:
            continue
        value = getattr(unit, spec.name)
        clean = _redacted(value, tally_for(spec.name))
        if clean != value:
            changes[spec.name] = clean
    return replace(unit, **changes) if changes else unit  # type: ignore[type-var]


@dataclass(frozen=True)
class RedactedReport:
    report: ParseReport
    turn_counts: dict[str, int]  # secrets in the turns this piece of the file added
    session_counts: dict[str, int]  # secrets in the session's facts (title, project)


def redact_report(report: ParseReport) -> RedactedReport:
    """Every text of a parsed piece of a transcript redacted, whatever field holds it: session
    title and project, runs' prompts, turns' texts and tool names, the parser state kept for
    append mode. The indexer passes every adapter's output through here before storing it.

    Runs and the state hold copies of what turns and the session hold: their secrets are not
    counted again."""
    turns: Counter[str] = Counter()
    session: Counter[str] = Counter()
    tallies = {"turns": turns, "session": session}
    clean = _redact_fields(report, tallies.get)
    return RedactedReport(clean, dict(turns), dict(session))
