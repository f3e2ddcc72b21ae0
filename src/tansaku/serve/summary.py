"""The MCP server's instructions: what this index holds, so an agent knows what to ask for."""

from __future__ import annotations

from typing import Any

from ..errors import TansakuError
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
        lines.append("Collections (documents, chunks, chunks with vectors):")
        for info in status.collections:
            c = info.collection
            excluded = "" if c.include else " (excluded from searches unless named)"
            lines.append(
                f"- {c.name}: {info.documents} documents, {info.chunks} chunks,"
                f" {info.vectors} vectors{excluded}"
            )
    if status.contexts:
        lines.append("Contexts (what folders are about):")
        lines.extend(f"- {ctx.path}: {ctx.text}" for ctx in status.contexts)
    vectors = sum(info.vectors for info in status.collections)
    lines.append(
        "Vector search is available."
        if vectors
        else "No vectors yet: `vsearch` fails and `query` is keyword only."
    )
    lines.append("Models: " + "; ".join(_models(api)))
    todo = advice.for_codes(
        [(w.code, w.message) for w in status.warnings] + ([("NO_VECTORS", "")] if not vectors else []),
        advice.pending_embed(status),
    )
    if status.pending:
        lines.append("Pending: " + "; ".join(status.pending))
    if todo:
        lines.append(advice.text(todo).strip())
    return "\n".join(lines)


def _models(api: Any) -> list[str]:
    from ..models import registry

    try:
        refs = registry.resolve_all(api.config_path)
    except TansakuError as exc:
        return [f"unknown ({exc.message})"]
    return [_model_line(ref) for ref in refs]


def _model_line(ref: Any) -> str:
    if ref.endpoint is not None:
        return f"{ref.role} remote ({ref.endpoint.model} at {ref.endpoint.host})"
    return f"{ref.role} {'present' if ref.present else 'missing'} ({ref.local_path.name})"
