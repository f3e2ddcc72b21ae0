"""The MCP server's instructions: what this index holds and what each tool will do with it now,
so an agent knows what to ask for.

Written from the index's state when a client connects (``LiveInstructions``): which collections
have vectors, full or quick ones (index/vector_state.py, as `status` reports them), and which
models are here. `vsearch` searches whatever vectors there are, quick ones included, and fails
only when the collections it searches have none, or without the embedding model: the
instructions say which, never more.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ..errors import TansakuError
from ..index.vector_state import FULL, NONE, PARTIAL, QUICK
from . import advice

HOW_TO = (
    "Tools: `query` (best first choice: keyword and vector search fused; `searches` takes typed"
    " sub-searches: lex for exact words and names, vec for a question in plain words, hyde for a"
    " sentence a good answer would contain), `search` (keyword only, fast, no model), `vsearch`"
    " (by meaning), `get` (a document or a line range, by tansaku:// path or #docid from a result),"
    " `multi_get` (several documents by glob or comma list) and `status`. Results carry a docid,"
    " a tansaku:// path, line numbers and the contexts of their folder; cite them as PATH:LINE."
    " The search tools take `where` (FIELD=VALUE, FIELD>=2024-01-01: Markdown front-matter fields"
    " such as tags, status, date) and `fields` (show each result's)."
    " Documents are also resources at their tansaku:// path. This server is read-only: when a"
    " result says the index is stale or vectors or a model are missing, pass the given command to"
    " the user."
)
QUICK_WORDS = "title, headings and the first words of each paragraph: coarser than full vectors"


def instructions(api: Any) -> str:
    """A few lines about the index; what cannot be read (no index yet) is said, never raised."""
    lines = ["tansaku: local search over the user's own documents.", HOW_TO, ""]
    try:
        status = api.status()
    except TansakuError as exc:
        return "\n".join([*lines, f"The index cannot be read now: {exc.message}"])
    if not status.collections:
        lines.append("No collections yet: the user adds one with `tansaku collection add PATH`.")
    else:
        lines.append("Collections (documents, chunks; what vector search reads of each):")
        for info in status.collections:
            c = info.collection
            excluded = " (excluded from searches unless named)" if not c.include else ""
            lines.append(
                f"- {c.name}{excluded}: {info.documents} documents, {info.chunks} chunks;"
                f" vectors {info.vector_state_note or info.vector_state}"
            )
    if status.contexts:
        lines.append("Contexts (what folders are about):")
        lines.extend(f"- {ctx.path}: {ctx.text}" for ctx in status.contexts)
    refs, problem = _model_refs(api)
    lines.append("Models: " + ("; ".join(_model_line(ref) for ref in refs) if refs else problem))
    if status.collections:
        lines.append("What the tools do now:")
        lines.extend(
            f"- {line}" for line in tool_lines(status.collections, _embed(refs, problem), _query_models(api))
        )
    pending = advice.pending_embed(status)
    todo = advice.for_codes(
        [(w.code, w.message) for w in status.warnings] + ([("NO_VECTORS", "")] if pending.chunks else []),
        pending,
    )
    if status.pending:
        lines.append("Pending: " + "; ".join(status.pending))
    if todo:
        lines.append(advice.text(todo).strip())
    return "\n".join(lines)


def tool_lines(collections: Sequence[Any], embed: Any, query_models: str) -> list[str]:
    """What `search`, `vsearch`, `query` and the readers do with these collections (``status``'s
    CollectionInfo) and the embedding model (a ModelRef, or a sentence saying why it is not
    known), `query`'s model steps said in ``query_models``."""
    searched = [info for info in collections if info.collection.include]
    excluded = [info for info in collections if not info.collection.include]
    vsearch, vector_side = _vector_search(searched, excluded, embed)
    return [
        "`search`: keyword search (BM25), no model: always answers.",
        f"`vsearch`: {vsearch}",
        f"`query`: keyword search fused with {vector_side}; {query_models}.",
        "`get`, `multi_get` and `status` read the index, no model: always answer.",
    ]


def _vector_search(searched: list[Any], excluded: list[Any], embed: Any) -> tuple[str, str]:
    """(what `vsearch` does, what `query`'s vector side is) for the collections searched by
    default; ``excluded`` are searched only when named."""
    if isinstance(embed, str):
        return f"cannot tell: {embed}.", "vector search when it can"
    if embed.endpoint is None and not embed.present:
        return (
            f"fails with MODEL_MISSING: the embedding model ({embed.local_path.name}) is not on this"
            " machine, whatever vectors the index holds.",
            "nothing else: keyword only, without the embedding model",
        )
    parts = _read_parts(searched)
    if not parts["read"]:
        stale = sum(info.stale_vectors for info in searched)
        why = (
            f" (the {stale} vectors there are from another embedding model: `tansaku embed` redoes them)"
            if stale
            else " until `tansaku embed` computes them"
        )
        named = [i.collection.name for i in excluded if i.vector_state != NONE]
        unless = f"; naming {', '.join(named)} in `collections` searches its vectors" if named else ""
        return (
            f"fails with NO_VECTORS: the collections it searches have no vectors{why}{unless}.",
            "nothing else: keyword only, no vectors yet",
        )
    said = "answers from " + "; ".join(parts["read"])
    if parts["skipped"]:
        said += f"; skips {', '.join(parts['skipped'])} (no vectors yet: a PENDING_VECTORS warning)"
    return said + ".", "the same vector search"


def _read_parts(searched: list[Any]) -> dict[str, list[str]]:
    read: list[str] = []
    full = [i.collection.name for i in searched if i.vector_state == FULL]
    quick = [i.collection.name for i in searched if i.vector_state == QUICK]
    if full:
        read.append(f"full vectors in {', '.join(full)}")
    if quick:
        read.append(f"quick vectors in {', '.join(quick)} ({QUICK_WORDS}; a QUICK_VECTORS warning says so)")
    for info in searched:
        if info.vector_state == PARTIAL:
            shares = [f"{info.vectors} of {info.chunks} chunks with full vectors"]
            if info.quick_vectors:
                shares.append(f"{info.quick_vectors} with quick ones")
            read.append(f"part of {info.collection.name} ({', '.join(shares)}; the rest is not searched)")
    skipped = [i.collection.name for i in searched if i.vector_state == NONE and i.chunks]
    return {"read": read, "skipped": skipped}


def _model_refs(api: Any) -> tuple[list[Any], str]:
    from ..models import registry

    try:
        return registry.resolve_all(api.config_path), ""
    except TansakuError as exc:
        return [], f"unknown ({exc.message})"


def _embed(refs: list[Any], problem: str) -> Any:
    found = [ref for ref in refs if ref.role == "embed"]
    return found[0] if found else f"the embedding model is unknown ({problem or 'not configured'})"


def _model_line(ref: Any) -> str:
    if ref.endpoint is not None:
        return f"{ref.role} remote ({ref.endpoint.model} at {ref.endpoint.host})"
    return f"{ref.role} {'present' if ref.present else 'missing'} ({ref.local_path.name})"


def _query_models(api: Any) -> str:
    """Whether `query` expands and reranks when the caller does not say (hybrid/model_defaults.py)."""
    from ..hybrid.model_defaults import choose_expansion, choose_rerank

    try:
        settings = api.config().other.get("query")
        expand = choose_expansion(None, api.config_path, settings).expand
        rerank = choose_rerank(None, api.config_path, settings).rerank
    except TansakuError as exc:
        return f"its model steps cannot be told ({exc.message})"
    said = ["expands the query by default" if expand else "no expansion unless `expand` is true"]
    said.append("reranks by default" if rerank else "no reranking unless `rerank` is true")
    return ", ".join(said)


class LiveInstructions:
    """The instructions as of now: written again when the index, the config or the model files
    changed since they were last written (an `embed` run by the user, a model pulled), else the
    same text. A server over HTTP lives for days; each client that connects gets these."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self._lock = threading.Lock()
        self._watch: Any = None
        self._seen: Any = None
        self._text = ""

    def __call__(self) -> str:
        with self._lock:
            seen = self._state()
            if seen is None or seen != self._seen or not self._text:
                self._text = instructions(self.api)
                self._seen = seen
            return self._text

    def _state(self) -> Any:
        """What the text depends on, cheaply: the index's change token, the config file's time,
        the models' presence. None when it cannot be told (then the text is written again)."""
        from ..models import registry

        try:
            if self._watch is None:
                self._watch = self.api.backend.change_watch()
            config = self.api.config_path
            stamp = config.stat().st_mtime_ns if config.exists() else None
            models = tuple((r.reference, r.present) for r in registry.resolve_all(config))
            return (self._watch.token(), stamp, models)
        except (TansakuError, OSError):
            return None
