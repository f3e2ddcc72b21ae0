"""The MCP server (the official SDK's low-level ``Server``): tools, document resources
(mcp_resources.py) and instructions (summary.py), over stdio or mounted at /mcp by http.py.

The low-level server rather than the decorator one: the tools' JSON schemas are written out here
for an agent to read, and ``structuredContent`` is exactly the CLI's ``--json`` data, described by
each tool's ``outputSchema`` (mcp_schemas.py), not a shape inferred from type hints. A tool error
is a result with ``isError`` and no ``structuredContent`` (which would have to match that
schema): its text says the code, message and hint, and a second text block holds the CLI's JSON
error object.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from .. import __version__
from ..errors import TansakuError
from ..fields.where import MAX_CONDITIONS, MAX_OPERAND_CHARS
from ..options import MAX_WHOLE_NUMBER
from . import advice, mcp_resources
from .mcp_schemas import LEVELS, OUTPUT_SCHEMAS
from .requests import MAX_CONTEXT_TURNS, MAX_RERANK_BUDGET_S, MAX_SEARCHES, SEARCH_KINDS, Answer, Service
from .summary import LiveInstructions

_QUERY = {"type": "string", "description": "what to look for"}
_COLLECTIONS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "search only these collections (default: every included collection)",
}
_LIMIT = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_WHOLE_NUMBER,
    "description": "how many results (default 20)",
}
_ALL = {"type": "boolean", "description": "every result instead of a limit"}
_FULL = {"type": "boolean", "description": "the whole document with each result instead of a snippet"}


_LINE_NUMBERS = {"type": "boolean", "description": "number the lines of the text content"}
_FULL_PATH = {"type": "boolean", "description": "show disk paths instead of tansaku:// paths in the text"}
# --where and --fields: front-matter fields of Markdown files.
_FIELD_FILTERS = {
    "where": {
        "type": "array",
        "maxItems": MAX_CONDITIONS,
        "items": {"type": "string", "maxLength": MAX_OPERAND_CHARS + 100},
        "description": "only documents whose front matter passes every condition: FIELD=VALUE (any"
        " element of a list field, any case), FIELD!=VALUE, FIELD>=DATE, FIELD<=DATE, FIELD>N, FIELD<N"
        " (dates as 2024-05-01); applied before the limit",
    },
    "fields": {"type": "boolean", "description": "each result carries its document's front-matter fields"},
    "all_copies": {
        "type": "boolean",
        "description": "list every path of a text found at several (copies, symlinks, overlapping"
        " collections) and every language of a translated page; by default each is one result, its"
        " other paths in also_at, its other languages in also_in",
    },
}
_TRANSCRIPTS = {
    "level": {
        "type": "string",
        "enum": list(LEVELS),
        "description": "transcript collections: one result per turn (default), run, session or project",
    },
    "roles": {
        "type": "array",
        "items": {"type": "string", "enum": ["user", "assistant", "tool"]},
        "description": "transcript collections: only turns by these roles",
    },
    "since": {"type": "string", "description": "only turns at or after: a date, an ISO time, or 7d, 12h"},
    "until": {"type": "string", "description": "only turns before: a date (includes that day), or 7d, 12h"},
    "project": {"type": "string", "description": "only sessions whose working directory contains this"},
}


def _whole(description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": MAX_WHOLE_NUMBER, "description": description}


def _score(default: float, what: str) -> dict[str, Any]:
    return {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "description": f"drop results whose {what} is below this (default {default:g})",
    }


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TOOLS: list[types.Tool] = [
    types.Tool(
        name="query",
        title="Hybrid search",
        description=(
            "Hybrid search, the best first choice: keyword (BM25) and vector results fused by"
            " reciprocal rank. Give `query` as words or a question, or `searches`: typed"
            f" sub-searches (at most {MAX_SEARCHES}), lex for exact words, names and options, vec"
            " for a question in plain words, hyde for a sentence a good answer would contain."
            " Expansion runs by default only where it pays (a model on an endpoint or a GPU):"
            " `expand` true or false decides; reranking runs by default with a model on an endpoint"
            " or a GPU, or with a rerank model on this machine: `rerank` true or false decides."
            " With `pack`, returns the best passages whole with citations instead of results."
        ),
        input_schema=_schema(
            {
                "query": _QUERY,
                "searches": {
                    "type": "array",
                    "maxItems": MAX_SEARCHES,
                    "items": {
                        "type": "object",
                        "properties": {
                            "type": {"type": "string", "enum": list(SEARCH_KINDS)},
                            "query": {"type": "string", "description": "one line"},
                        },
                        "required": ["type", "query"],
                    },
                    "description": "a query document instead of `query`: each line its own list",
                },
                "intent": {
                    "type": "string",
                    "description": "what the search is for (steers expansion and reranking; not searched)",
                },
                "collections": _COLLECTIONS,
                "limit": _LIMIT,
                "all": _ALL,
                "min_score": _score(0, "fused score"),
                "full": _FULL,
                "candidate_limit": _whole("documents each list contributes to the fusion (default 40)"),
                "expand": {
                    "type": "boolean",
                    "description": "expand the query with the generate model (default: only with a"
                    " model on an endpoint or a GPU; on a CPU it did not pay)",
                },
                "no_expand": {"type": "boolean", "description": "do not expand the query (as expand: false)"},
                "rerank": {
                    "type": "boolean",
                    "description": "rerank with the rerank model, warning when it cannot (default: with"
                    " a model on an endpoint or a GPU, or on a CPU when the model is here, quietly)",
                },
                "no_rerank": {"type": "boolean", "description": "do not rerank (as rerank: false)"},
                "rerank_budget": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": MAX_RERANK_BUDGET_S,
                    "description": "seconds the reranker may take",
                },
                "explain": {"type": "boolean", "description": "each result's ranks and fusion parts"},
                "pack": {"type": "boolean", "description": "return whole passages with citations"},
                "max_items": _whole("pack: at most this many (8)"),
                "max_bytes": _whole("pack: at most these bytes (10240)"),
                "line_numbers": _LINE_NUMBERS,
                "full_path": _FULL_PATH,
                **_TRANSCRIPTS,
                **_FIELD_FILTERS,
            },
            [],
        ),
    ),
    types.Tool(
        name="search",
        title="Keyword search",
        description=(
            'Keyword search (BM25), no model: words, "phrases", -word to exclude, prefix*, names'
            " such as os.path.join, options such as --user. One or two words must all appear;"
            " longer queries rank by the words they contain."
        ),
        input_schema=_schema(
            {
                "query": _QUERY,
                "collections": _COLLECTIONS,
                "limit": _LIMIT,
                "all": _ALL,
                "min_score": _score(0, "score"),
                "full": _FULL,
                "line_numbers": _LINE_NUMBERS,
                "full_path": _FULL_PATH,
                **_TRANSCRIPTS,
                **_FIELD_FILTERS,
            },
            ["query"],
        ),
    ),
    types.Tool(
        name="vsearch",
        title="Search by meaning",
        description=(
            "Search by meaning with the embedding model: the nearest chunks, best chunk per"
            " document. Searches the vectors there are: full ones, or quick ones (title, headings"
            " and the first words of each paragraph) until `tansaku embed` computes those, with a"
            " warning; fails with NO_VECTORS only when the collections searched have none."
        ),
        input_schema=_schema(
            {
                "query": _QUERY,
                "collections": _COLLECTIONS,
                "limit": _LIMIT,
                "all": _ALL,
                "min_score": _score(0.3, "cosine similarity"),
                "full": _FULL,
                "line_numbers": _LINE_NUMBERS,
                "full_path": _FULL_PATH,
                **_TRANSCRIPTS,
                **_FIELD_FILTERS,
            },
            ["query"],
        ),
    ),
    types.Tool(
        name="get",
        title="Read a document",
        description=(
            "Read a document, or a range of its lines, by tansaku:// path, collection/path or"
            " #docid (as given in results). A suffix :FROM:COUNT also selects lines."
            " Long documents are cut at a line and say so (default 262144 bytes)."
        ),
        input_schema=_schema(
            {
                "ref": {
                    "type": "string",
                    "description": "tansaku://COLLECTION/PATH, COLLECTION/PATH or #docid",
                },
                "from_line": _whole("first line (1-based)"),
                "max_lines": _whole("at most this many lines"),
                "max_bytes": _whole("at most this many bytes"),
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT_TURNS,
                    "description": "on a transcript turn (SESSION.jsonl:LINE): turns before and after it (3)",
                },
                "line_numbers": {
                    "type": "boolean",
                    "description": "number the lines of the text content (default true)",
                },
                "full_path": _FULL_PATH,
            },
            ["ref"],
        ),
    ),
    types.Tool(
        name="multi_get",
        title="Read several documents",
        description=(
            "Read several documents: a glob over tansaku:// paths ('notes/**/*.md'), a comma list,"
            " or docids. Documents whose text is over max_bytes (default 10240) are skipped and listed,"
            " never cut."
        ),
        input_schema=_schema(
            {
                "pattern": {"type": "string", "description": "glob, comma list or docids"},
                "max_lines": _whole("at most this many lines per file"),
                "max_bytes": _whole("skip documents whose text is larger than this (bytes)"),
                "line_numbers": {
                    "type": "boolean",
                    "description": "number the lines of the text content (default true)",
                },
                "full_path": _FULL_PATH,
            },
            ["pattern"],
        ),
    ),
    types.Tool(
        name="status",
        title="Index status",
        description="The index: collections and their counts, contexts, what is pending, the models.",
        input_schema=_schema({}, []),
    ),
]
for _tool in TOOLS:
    _tool.output_schema = OUTPUT_SCHEMAS[_tool.name]
    # Read-only, and closed-world: the tools read the user's index, nothing beyond it.
    _tool.annotations = types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )


def tool_result(answer: Answer, service: Service) -> types.CallToolResult:
    notes = advice.for_codes(advice.codes_of(answer.data), _pending(service, answer.data))
    # structuredContent must be an object on the older protocol versions; every result already is.
    return types.CallToolResult(
        content=[types.TextContent(text=answer.text + advice.text(notes))],
        structured_content=answer.data,
    )


def error_result(exc: TansakuError, service: Service) -> types.CallToolResult:
    data = service.error_data(exc)
    error = data["error"]
    lines = [f"error [{exc.code}]: {error['message']}"] + (
        [f"hint: {error['hint']}"] if error.get("hint") else []
    )
    notes = advice.for_codes(advice.codes_of(data), _pending(service, data))
    # No structured_content: it would have to match the tool's output schema (clients check it).
    return types.CallToolResult(
        content=[
            types.TextContent(text="\n".join(lines) + "\n" + advice.text(notes)),
            types.TextContent(text=json.dumps(data, ensure_ascii=False, default=str)),
        ],
        is_error=True,
    )


def _pending(service: Service, data: Any) -> advice.PendingEmbed | None:
    codes = {code for code, _ in advice.codes_of(data)}
    if not codes & {"NO_VECTORS", "VECTORS_UNAVAILABLE", "STALE_VECTORS"}:
        return None
    try:
        return advice.pending_embed(service.api.status())
    except TansakuError:
        return None


def build(service: Service) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            answer = await service.run(params.name, arguments)
        except TansakuError as exc:
            return error_result(exc, service)
        return tool_result(answer, service)

    async def list_resources(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await mcp_resources.list_resources(service, params.cursor if params is not None else None)

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[mcp_resources.TEMPLATE])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await mcp_resources.read_resource(service, str(params.uri), ctx.protocol_version)

    return _Server(
        LiveInstructions(service.api),
        "tansaku",
        version=__version__,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


class _Server(Server[Any]):
    """The low-level server, its instructions written when a client initializes: a session over
    HTTP may begin days after the server started, and an `embed` since may have added vectors."""

    def __init__(self, live: Callable[[], str], *args: Any, **kwargs: Any) -> None:
        self._live = live
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def instructions(self) -> str:
        return self._live()

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        pass  # Server.__init__ sets it; the live text wins


def run_stdio(index_name: str | None) -> None:
    """Serve one client over stdin and stdout until it closes stdin."""
    from mcp.server.stdio import stdio_server

    service = Service(index_name)
    server = build(service)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        service.api.close()
