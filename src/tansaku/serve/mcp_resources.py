"""The MCP server's resources: every indexed document at its tansaku:// URI, listed in pages,
and the template that names any of them.

A resource's text is what `get` returns (at most 256 KiB, cut at a line): a Markdown file as
written, the text extracted from a PDF, HTML, Word or EPUB file as Markdown (headings as ``#``
lines), anything else as plain text. URIs are RFC 3986: the path is percent-encoded where it
needs to be (a space, a non-ASCII name), and a read takes either that form or the virtual path
as results show it.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from ..errors import TansakuError
from ..fields.frontmatter import SUFFIXES as MARKDOWN_SUFFIXES
from ..paths import VIRTUAL_PREFIX
from ..sources.formats import SUFFIXES as EXTRACTED_SUFFIXES
from .requests import Service

PAGE = 200  # documents per resources/list page
MARKDOWN, PLAIN = "text/markdown", "text/plain"
# "Resource not found": -32002 up to protocol 2025-11-25, -32602 (invalid params) from 2026-07-28.
LEGACY_NOT_FOUND = -32002
NOT_FOUND_CODES = ("DOC_NOT_FOUND", "COLLECTION_NOT_FOUND")
REFUSED_CODES = ("PATH_REFUSED", "USAGE", "BAD_GLOB", "INVALID_NAME")

TEMPLATE = types.ResourceTemplate(
    uri_template=VIRTUAL_PREFIX + "{collection}/{+path}",  # + : the path keeps its slashes
    name="document",
    title="Indexed document",
    description="an indexed document's text by its virtual path (as in search results): Markdown"
    " for Markdown, PDF, HTML, Word and EPUB files (their extracted text), plain text otherwise;"
    " at most 256 KiB, as `get`",
)


def uri_of(virtual_path: str) -> str:
    """The RFC 3986 form of a virtual path: each path segment percent-encoded where needed."""
    rest = virtual_path.removeprefix(VIRTUAL_PREFIX)
    return VIRTUAL_PREFIX + quote(rest, safe="/:@!$&'()*+,;=")


def mime_type(path: str, kind: str) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    markdown = suffix in MARKDOWN_SUFFIXES or suffix in EXTRACTED_SUFFIXES
    return MARKDOWN if kind == "files" and markdown else PLAIN


def as_read(path: str, kind: str) -> bool:
    """Whether the text is the file's own bytes (so its size on disk is the resource's size):
    not for extracted formats and transcripts."""
    return kind == "files" and PurePosixPath(path).suffix.lower() not in EXTRACTED_SUFFIXES


async def list_resources(service: Service, cursor: str | None) -> types.ListResourcesResult:
    if cursor is not None and not cursor.isdigit():
        raise MCPError(INVALID_PARAMS, f"invalid cursor {cursor!r}: give the nextCursor of the last page")
    start = int(cursor or 0)
    try:
        entries = await anyio.to_thread.run_sync(_documents, service)
    except TansakuError as exc:
        raise _failure(service, exc, None, "") from exc
    page = entries[start : start + PAGE]
    resources = [
        types.Resource(
            uri=uri_of(entry.virtual_path),
            name=entry.virtual_path.removeprefix(VIRTUAL_PREFIX),
            title=entry.title or None,
            mime_type=mime_type(entry.virtual_path, kind),
            size=entry.size if as_read(entry.virtual_path, kind) else None,
            annotations=types.Annotations(last_modified=entry.modified) if entry.modified else None,
        )
        for entry, kind in page
    ]
    more = start + PAGE < len(entries)
    return types.ListResourcesResult(resources=resources, next_cursor=str(start + PAGE) if more else None)


def _documents(service: Service) -> list[tuple[Any, str]]:
    entries: list[tuple[Any, str]] = []
    for info in service.api.collections():
        kind = info.collection.type
        entries.extend((entry, kind) for entry in service.api.ls(info.collection.name))
    return entries


async def read_resource(service: Service, uri: str, protocol_version: str) -> types.ReadResourceResult:
    if not uri.startswith(VIRTUAL_PREFIX):
        raise MCPError(INVALID_PARAMS, f"not a tansaku resource: {uri}", {"uri": uri})
    # The encoded form first (what resources/list gives); the virtual path as results show it.
    tries = [unquote(uri), uri] if "%" in uri else [uri]
    for n, ref in enumerate(tries, 1):
        try:
            answer = await service.run("get", {"ref": ref, "line_numbers": False})
            break
        except TansakuError as exc:
            if n < len(tries) and exc.code in NOT_FOUND_CODES:
                continue
            raise _failure(service, exc, uri, protocol_version) from exc
    data = answer.data
    if "lines" not in data:  # a transcript turn (SESSION.jsonl:LINE): turns, not a document's text
        raise MCPError(
            INVALID_PARAMS,
            "a resource is a whole document: read a transcript turn with the `get` tool",
            {"uri": uri},
        )
    text = "\n".join(data["lines"]) + ("\n" if data["lines"] else "")
    kind = _kind(service, data["collection"])
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime_type(data["path"], kind))]
    )


def _kind(service: Service, collection: str) -> str:
    try:
        return service.api.config().collections[collection].type
    except (TansakuError, KeyError):
        return "files"


def _failure(service: Service, exc: TansakuError, uri: str | None, protocol_version: str) -> MCPError:
    """A JSON-RPC error for a failed resource request, with tansaku's error object as its data."""
    error = json.loads(json.dumps(service.error_data(exc)["error"], default=str))
    data = {"error": error} if uri is None else {"uri": uri, "error": error}
    if exc.code in NOT_FOUND_CODES:
        code = LEGACY_NOT_FOUND if protocol_version in HANDSHAKE_PROTOCOL_VERSIONS else INVALID_PARAMS
        return MCPError(code, f"resource not found: {error['message']}", data)
    code = INVALID_PARAMS if exc.code in REFUSED_CODES else INTERNAL_ERROR
    return MCPError(code, f"{exc.code}: {error['message']}", data)
