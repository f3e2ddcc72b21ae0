"""The requests a server answers, checked once and mapped onto ``Tansaku``: MCP tools and the JSON
endpoints both come through here, so the two transports cannot drift apart.

Field names are the CLI's option names (their argparse ``dest``: ``limit`` for ``-n``,
``collections`` for ``-c``, ``min_score`` for ``--min-score``...); the short spellings and the
hyphenated ones are accepted too. Defaults are the CLI's for ``--json``, taken from the CLI and
the API rather than restated, so a request and the same command give the same results.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..api import Tansaku
from ..errors import TansakuError, UsageError
from ..limits import WorkExpired, bounded
from ..options import MAX_WHOLE_NUMBER, check_pack_options, result_limit
from ..render import RenderOptions, render
from ..render.jsonfmt import render_pack, to_data
from .guard import check_ref, check_refs

# Spellings a caller may use for a field, mapped to the CLI's dest names.
_ALIASES = {
    "n": "limit",
    "c": "collections",
    "collection": "collections",
    "l": "max_lines",
    "from": "from_line",
    "C": "candidate_limit",
    "role": "roles",
}
SEARCH_KINDS = ("lex", "vec", "hyde")
# Turns of context a `get` on a turn may ask for: the CLI has no bound, a server's request does.
MAX_CONTEXT_TURNS = 1000
MAX_SEARCHES = 10  # the query document's own limit (hybrid/document.py) says why; checked there too
MAX_RERANK_BUDGET_S = 600.0  # a request's rerank budget; the request's own deadline bounds it anyway
# A request's work stops at this deadline (REQUEST_TIMEOUT): a cold `query` that loads three
# models takes a few seconds, so this only ever stops work nobody meant to ask for.
DEFAULT_DEADLINE_S = 30.0
_REPLY_GRACE_S = 2.0  # past the deadline, the answer waits this long for a worker inside a model call


@dataclass(frozen=True)
class Answer:
    """What a request returns: the CLI's JSON data, and the CLI's text for people and agents,
    rendered only when asked for (the JSON endpoints never are: rendering cost them more than the
    search itself)."""

    data: Any
    render_text: Callable[[], str]

    @property
    def text(self) -> str:
        return self.render_text()


def normalise(raw: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in raw.items():
        name = key if key == "C" else key.replace("-", "_")
        name = _ALIASES.get(name, name)
        if value is not None:
            fields[name] = value
    return fields


class Fields:
    """Typed reads of a request's fields; a wrong type or an unknown field is a usage error."""

    def __init__(self, raw: Mapping[str, Any], known: set[str]) -> None:
        self.values = normalise(raw)
        unknown = sorted(set(self.values) - known)
        if unknown:
            raise UsageError(
                f"unknown field(s): {', '.join(unknown)}", hint=f"known: {', '.join(sorted(known))}"
            )

    def text(self, name: str, *, required: bool = False) -> str | None:
        value = self.values.get(name)
        if value is None:
            if required:
                raise UsageError(f"missing field {name!r}")
            return None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = " ".join(value)  # query words, as the CLI joins them
        if not isinstance(value, str):
            raise UsageError(f"field {name!r} must be a string")
        return value

    def texts(self, name: str) -> list[str]:
        value = self.values.get(name, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"field {name!r} must be a string or a list of strings")
        return value

    def flag(self, name: str) -> bool:
        value = self.values.get(name, False)
        if isinstance(value, str) and value.lower() in ("true", "1", "false", "0", ""):
            return value.lower() in ("true", "1")  # query strings carry flags as text
        if not isinstance(value, bool):
            raise UsageError(f"field {name!r} must be true or false")
        return value

    def count(self, name: str) -> int | None:
        value = self.values.get(name)
        if value is None:
            return None
        if isinstance(value, str) and value.isdigit() and len(value) <= len(str(MAX_WHOLE_NUMBER)):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WHOLE_NUMBER:
            raise UsageError(f"field {name!r} must be a whole number from 1 to {MAX_WHOLE_NUMBER:,}")
        return value

    def amount(self, name: str, *, high: int) -> int | None:
        """A whole number from 0 (a count where none is meaningful: turns of context, run 0)."""
        value = self.values.get(name)
        if value is None:
            return None
        if isinstance(value, str) and value.isdigit() and len(value) <= len(str(high)):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
            raise UsageError(f"field {name!r} must be a whole number from 0 to {high:,}")
        return value

    def number(self, name: str, *, low: float, high: float) -> float | None:
        value = self.values.get(name)
        if value is None:
            return None
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise UsageError(f"field {name!r} must be a number") from None
        if isinstance(value, bool) or not math.isfinite(number) or not (number >= low and number <= high):
            raise UsageError(f"field {name!r} must be a number from {low:g} to {high:g}")
        return number


def _limit(f: Fields) -> int | None:
    # The CLI's own rule, with the format of a script (json): -n, else 20; --all is no limit.
    return result_limit(all=f.flag("all"), limit=f.count("limit"), scripted=True)


def _optional(**values: Any) -> dict[str, Any]:
    # Options the request leaves out keep the API's defaults (the CLI's), never a copy of them.
    return {key: value for key, value in values.items() if value is not None}


_RESULT_FIELDS = {"query", "limit", "all", "min_score", "full", "collections", "line_numbers", "full_path"}
_RESULT_FIELDS |= {"where", "fields"}  # front-matter fields (--where, --fields)
_RESULT_FIELDS |= {"all_copies"}  # --all-copies: every path of a text at several (search/copies.py)
_TRANSCRIPT_FIELDS = {"level", "roles", "since", "until", "project"}
# What the search page asks for beside a search's answer, over HTTP only (an MCP tool takes the
# CLI's fields, no more): see `shown`.
SHOWN_FIELDS = frozenset({"marks", "index_summary"})
SHOWN_OPERATIONS = frozenset({"search", "vsearch", "query"})


def _levels(f: Fields) -> dict[str, Any]:
    """The transcript level and filters, as `search`, `vsearch` and `query` take them."""
    return {
        "level": f.text("level"),
        "roles": tuple(f.texts("roles")),
        "since": f.text("since"),
        "until": f.text("until"),
        "project": f.text("project"),
    }


def _expand(f: Fields) -> bool | None:
    """``expand`` (true or false) or the older ``no_expand``; neither: the API's default (on
    where it pays, off on a CPU). Both, disagreeing, is refused."""
    return _on_or_off(f, "expand")


def _rerank(f: Fields) -> bool | None:
    """``rerank`` (true or false) or the older ``no_rerank``; neither: the API's default."""
    return _on_or_off(f, "rerank")


def _on_or_off(f: Fields, name: str) -> bool | None:
    asked = f.flag(name) if name in f.values else None
    refused = f.flag(f"no_{name}") if f"no_{name}" in f.values else None
    if asked is not None and refused is not None and asked == refused:
        raise UsageError(f"give `{name}` or `no_{name}`, not both with opposite meanings")
    if asked is not None:
        return asked
    return None if refused is None else not refused


def _search(api: Tansaku, f: Fields) -> Any:
    return api.search_levels(
        f.text("query", required=True) or "",
        collections=f.texts("collections"),
        **_levels(f),
        limit=_limit(f),
        **_optional(min_score=f.number("min_score", low=0, high=1)),
        full=f.flag("full"),
        where=f.texts("where"),
        fields=f.flag("fields"),
        all_copies=f.flag("all_copies"),
    )


def _vsearch(api: Tansaku, f: Fields) -> Any:
    return api.vsearch_levels(
        f.text("query", required=True) or "",
        collections=f.texts("collections"),
        **_levels(f),
        limit=_limit(f),
        **_optional(min_score=f.number("min_score", low=0, high=1)),
        full=f.flag("full"),
        where=f.texts("where"),
        fields=f.flag("fields"),
        all_copies=f.flag("all_copies"),
    )


def query_text(f: Fields) -> str:
    """The query, or the query document made of the typed sub-searches (one line each)."""
    searches = f.values.get("searches")
    text = f.text("query")
    if searches is None:
        if text is None:
            raise UsageError("missing field 'query' (or 'searches')")
        return text
    if text is not None:
        raise UsageError("give either 'query' or 'searches', not both")
    if not isinstance(searches, list) or not searches:
        raise UsageError("field 'searches' must be a non-empty list of {type, query} objects")
    lines = []
    for item in searches:
        kind = item.get("type") if isinstance(item, dict) else None
        words = item.get("query") if isinstance(item, dict) else None
        if kind not in SEARCH_KINDS or not isinstance(words, str) or "\n" in words:
            raise UsageError(
                f"each search needs a type ({', '.join(SEARCH_KINDS)}) and a one-line query: {item!r}"
            )
        lines.append(f"{kind}: {words}")
    return "\n".join(lines)


def _query(api: Tansaku, f: Fields) -> Any:
    pack = f.flag("pack")
    max_items, max_bytes = f.count("max_items"), f.count("max_bytes")
    check_pack_options(
        pack=pack,
        limit=f.count("limit"),
        all=f.flag("all"),
        full=f.flag("full"),
        explain=f.flag("explain"),
        max_items=max_items,
        max_bytes=max_bytes,
    )
    levels = _levels(f)
    common = {
        "collections": f.texts("collections"),
        "levels": levels if any(levels.values()) else None,  # as the CLI passes them
        "intent": f.text("intent"),
        "expand": _expand(f),
        "rerank": _rerank(f),
        "rerank_budget": f.number("rerank_budget", low=0, high=MAX_RERANK_BUDGET_S),
        "where": f.texts("where"),
        "all_copies": f.flag("all_copies"),
        **_optional(
            min_score=f.number("min_score", low=0, high=1), candidate_limit=f.count("candidate_limit")
        ),
    }
    if pack:
        if f.flag("fields"):
            raise UsageError(
                "'pack' does not take 'fields'", hint="a pack cites passages; search with fields"
            )
        return api.pack(query_text(f), **_optional(max_items=max_items, max_bytes=max_bytes), **common)
    return api.query(
        query_text(f),
        limit=_limit(f),
        full=f.flag("full"),
        explain=f.flag("explain"),
        fields=f.flag("fields"),
        **common,
    )


def _get(api: Tansaku, f: Fields) -> Any:
    ref = check_ref(f.text("ref", required=True) or "")
    return api.get(
        ref,
        from_line=f.count("from_line"),
        max_lines=f.count("max_lines"),
        max_bytes=f.count("max_bytes"),
        context=f.amount("context", high=MAX_CONTEXT_TURNS),
    )


def _session(api: Tansaku, f: Fields) -> Any:
    # Never `raw`: a server shows what was indexed, with its secrets redacted.
    return api.read_session(
        f.text("session", required=True) or "",
        from_line=f.count("from_line") or 1,
        limit=f.count("limit"),
        run=f.amount("run", high=MAX_WHOLE_NUMBER),
        max_bytes=f.count("max_bytes"),
    )


def _model_files(api: Tansaku, f: Fields) -> Any:
    return api.model_files()


def _multi_get(api: Tansaku, f: Fields) -> Any:
    pattern = check_refs(f.text("pattern", required=True) or "")
    return api.multi_get(pattern, max_lines=f.count("max_lines"), max_bytes=f.count("max_bytes"))


def _status(api: Tansaku, f: Fields) -> Any:
    return api.status()


@dataclass(frozen=True)
class Operation:
    run: Callable[[Tansaku, Fields], Any]
    fields: frozenset[str]
    line_numbers: bool  # the CLI's default for this command's text (get and multi-get number lines)
    models: bool  # may load a model or the vector cache, which are not safe to share across threads
    runs_models: bool = False  # embeds or generates: served by workers of its own (Service.run)


OPERATIONS: dict[str, Operation] = {
    "search": Operation(_search, frozenset(_RESULT_FIELDS | _TRANSCRIPT_FIELDS), False, False),
    # The embedder takes turns on its own (models/embedding.py); the vector cache has its lock.
    "vsearch": Operation(
        _vsearch, frozenset(_RESULT_FIELDS | _TRANSCRIPT_FIELDS), False, False, runs_models=True
    ),
    "query": Operation(
        _query,
        frozenset(
            _RESULT_FIELDS
            | _TRANSCRIPT_FIELDS
            | {"searches", "candidate_limit", "intent", "expand", "no_expand"}
            | {"rerank", "no_rerank", "rerank_budget"}
            | {"explain", "pack", "max_items", "max_bytes"}
        ),
        False,
        True,
        runs_models=True,
    ),
    "get": Operation(
        _get,
        frozenset({"ref", "from_line", "max_lines", "max_bytes", "context", "line_numbers", "full_path"}),
        True,
        False,
    ),
    "session": Operation(
        _session,
        frozenset({"session", "from_line", "limit", "run", "max_bytes", "full_path"}),
        False,
        False,
    ),
    "models": Operation(_model_files, frozenset(), False, False),
    "multi_get": Operation(
        _multi_get, frozenset({"pattern", "max_lines", "max_bytes", "line_numbers", "full_path"}), True, False
    ),
    "status": Operation(_status, frozenset(), False, False),
}


def split_shown(name: str, raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A request's own fields, and those of SHOWN_FIELDS (for a search; none for the rest)."""
    fields, shown_fields = dict(raw), {}
    if name in SHOWN_OPERATIONS:
        for key in [k for k in fields if k.replace("-", "_") in SHOWN_FIELDS]:
            shown_fields[key] = fields.pop(key)
    return fields, shown_fields


def shown(api: Tansaku, name: str, f: Fields, asked: Fields, data: Any) -> Any:
    """A search answer with what the search page shows beside it, as ``asked``:
    ``marks``: ``marked_terms``, the query's terms its snippets were chosen by, and in each
    snippet ``marks``, for each line the [start, end) code-point offsets of the whole words that
    match them (what the page highlights, so it marks what the CLI matched); ``index_summary``:
    the index's counts and vector state (``IndexSummary``), for a status line that follows it."""
    if not isinstance(data, dict) or "results" not in data:
        return data  # a pack: passages, not snippets
    if asked.flag("marks"):
        terms = api.mark_terms(query_text(f) if name == "query" else f.text("query") or "", name)
        data["marked_terms"] = terms
        snippets = [hit["snippet"] for hit in data["results"] if (hit.get("snippet") or {}).get("lines")]
        for snippet, marks in zip(
            snippets, api.mark_spans([s["lines"] for s in snippets], terms), strict=True
        ):
            snippet["marks"] = [[list(span) for span in line] for line in marks]
    if asked.flag("index_summary"):
        data["index_summary"] = to_data(api.index_summary())
    return data


def json_data(result: Any) -> Any:
    """The CLI's ``--json`` output as data (a pack keeps its documented key order; a session's
    runs are objects, as `session read --json` and `get --json` on a turn print them)."""
    from ..types import ContextPack, SessionRead

    if isinstance(result, ContextPack):
        return json.loads(render_pack(result, RenderOptions()))
    if isinstance(result, SessionRead):
        return json.loads(render(result, "json", RenderOptions()))
    return to_data(result)


class Service:
    """One long-lived ``Tansaku`` shared by every request of a server process.

    Keyword searches, vector searches and reads run side by side (each thread keeps its own read
    connection; the embedder serialises its own calls); a ``query`` takes turns with other
    queries, because its generator and reranker contexts are not safe to share between threads.
    """

    def __init__(self, index_name: str | None = None, *, deadline_s: float = DEFAULT_DEADLINE_S) -> None:
        # A caller names documents by collection path, virtual path or docid: never by a path
        # under the folder the server happens to run in.
        self.api = Tansaku(index_name, keep_vectors=True, keep_connections=True, disk_paths=False)
        self.deadline_s = deadline_s
        self._models = threading.Lock()
        self._limiters: dict[bool, Any] = {}

    async def run(
        self, name: str, raw: Mapping[str, Any], shown_fields: Mapping[str, Any] | None = None
    ) -> Answer:
        """``call`` in a worker thread, off the event loop, one worker per core. Searches are CPU
        work: with twice as many workers as cores, 8 clients of keyword search cost 14.3 ms of
        CPU per request instead of 11.8 (threads fight over the GIL) and p50 rose from 62 to 72 ms
        (evals/bench_serve.py). Requests that load models (vsearch, query) have workers of their
        own, so keyword searches never wait behind a slow query. Each worker keeps a read
        connection with its own page cache: the count bounds the server's memory too.

        A request is answered within its deadline (``REQUEST_TIMEOUT``) even when its worker is
        inside a long model call; a request whose caller goes away (its task is cancelled) stops
        at the worker's next check instead of running on."""
        import anyio

        operation = OPERATIONS.get(name)
        slow = operation is not None and operation.runs_models
        limiter = self._limiters.get(slow)
        if limiter is None:
            from ..models.threads import usable_cpus

            limiter = self._limiters[slow] = anyio.CapacityLimiter(max(2, usable_cpus()))
        cancelled = threading.Event()
        try:
            with anyio.fail_after(self.deadline_s + _REPLY_GRACE_S):
                return await anyio.to_thread.run_sync(
                    self.call, name, raw, cancelled, shown_fields, limiter=limiter, abandon_on_cancel=True
                )
        except TimeoutError:
            cancelled.set()
            raise WorkExpired(
                f"the request ran past its limit of {self.deadline_s:g} s", seconds=self.deadline_s
            ) from None
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise

    def call(
        self,
        name: str,
        raw: Mapping[str, Any],
        cancelled: threading.Event | None = None,
        shown_fields: Mapping[str, Any] | None = None,
    ) -> Answer:
        """``shown_fields``: what the search page asks for beside a search's answer (``shown``)."""
        operation = OPERATIONS.get(name)
        if operation is None:
            raise UsageError(f"unknown operation {name!r}", hint=f"one of: {', '.join(OPERATIONS)}")
        fields = Fields(raw, set(operation.fields))
        asked = Fields(shown_fields or {}, set(SHOWN_FIELDS) if name in SHOWN_OPERATIONS else set())
        try:
            with bounded(self.deadline_s, cancelled):
                if operation.models:
                    with self._models:
                        result = operation.run(self.api, fields)
                else:
                    result = operation.run(self.api, fields)
                data = shown(self.api, name, fields, asked, json_data(result))
        except TansakuError:
            raise
        except Exception as exc:
            # A request must never see a traceback or a disk path; the server's log keeps both.
            sys.stderr.write(f"tansaku: internal error in {name}:\n{traceback.format_exc()}")
            raise InternalError(
                f"the server failed on this {name} request ({type(exc).__name__}); its log has the details"
            ) from None
        line_numbers = fields.values.get("line_numbers", operation.line_numbers)
        options = RenderOptions(line_numbers=bool(line_numbers), full_path=fields.flag("full_path"))
        return Answer(data, lambda: render(result, "cli", options))

    def error_data(self, exc: TansakuError) -> dict[str, Any]:
        """The error object a client gets: the CLI's, with no path outside the collections."""
        from .shown_paths import hide_paths

        try:
            roots = [c.path for c in self.api.config().collections.values()]
        except TansakuError:  # a config that cannot be read shows no collection's paths
            roots = []
        return {"error": hide_paths(exc.to_dict(), roots)}


class InternalError(TansakuError):
    code = "INTERNAL"
    exit_code = 4
