"""Bounds on the work one call may do, whatever the size of what it was given.

A byte cap alone does not bound the work: 600 bytes of ``**`` items or 100 KB of distinct words
once cost minutes of CPU. So the library caps the counts that drive its loops (refs per
``multi-get``, query terms, similar-path suggestions) and, inside :func:`bounded`, stops a call
that runs past its deadline or whose caller went away. Long loops call :func:`check`; outside any
``bounded`` block it does nothing, so the CLI and library users are unaffected unless they ask.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .errors import TansakuError

# Items in one multi-get pattern (comma items, docids, globs). An agent reading a handful of files
# names tens; past this, each miss and each glob is work the caller did not mean to ask for.
MAX_MULTI_GET_REFS = 100
# Misses in one multi-get that get "similar: ..." suggestions; the rest just say they missed.
MAX_SUGGESTED_MISSES = 5
# Distinct terms of one query. A pasted error message or a long question has tens; past this the
# extra words add almost nothing to the ranking but multiply its cost.
MAX_QUERY_TERMS = 64
# Characters of a query given to the embedder: its first MAX_QUERY_TERMS words fit, and the text
# stays inside a BERT-size model's window of 512 tokens unless it is mostly CJK.
MAX_MODEL_QUERY_CHARS = 1000


class WorkExpired(TansakuError):
    code = "REQUEST_TIMEOUT"
    exit_code = 4


class WorkCancelled(TansakuError):
    code = "REQUEST_CANCELLED"
    exit_code = 4


@dataclass(frozen=True)
class _Bound:
    seconds: float | None
    deadline: float | None  # time.monotonic() value
    cancelled: tuple[threading.Event, ...]


_current: ContextVar[_Bound | None] = ContextVar("tansaku_work_bound", default=None)


@contextmanager
def bounded(seconds: float | None, cancelled: threading.Event | None = None) -> Iterator[None]:
    """Run the block under a deadline of ``seconds`` (None: no deadline) and a cancel flag.

    Nested blocks keep the outer bounds too: the earlier deadline wins and either flag cancels.
    """
    outer = _current.get()
    deadline = None if seconds is None else time.monotonic() + seconds
    limit = seconds
    flags: tuple[threading.Event, ...] = () if cancelled is None else (cancelled,)
    if outer is not None:
        flags = outer.cancelled + flags
        if outer.deadline is not None and (deadline is None or outer.deadline < deadline):
            deadline, limit = outer.deadline, outer.seconds
    token = _current.set(_Bound(limit, deadline, flags))
    try:
        yield
    finally:
        _current.reset(token)


def check() -> None:
    """Raise if the current bound has run out or its caller went away; cheap enough for any loop."""
    bound = _current.get()
    if bound is None:
        return
    for flag in bound.cancelled:
        if flag.is_set():
            raise WorkCancelled("the request was cancelled: its client went away")
    if bound.deadline is not None and time.monotonic() > bound.deadline:
        raise WorkExpired(
            f"the request ran past its limit of {bound.seconds:g} s",
            hint="ask for less: fewer refs, a shorter query, a narrower glob",
            seconds=bound.seconds,
        )
