"""The output schemas of the MCP tools: the JSON Schema of each tool's ``structuredContent``,
which is the CLI's ``--json`` data (docs/formats.md).

One definition per shape (a hit, a warning, a document slice...), composed into one schema per
tool, so `search`, `vsearch` and `query` cannot describe a hit two ways. The schemas are written
out whole (no ``$ref``): a client validating with a plain JSON Schema library, or showing the
schema to a model, needs nothing else. They use only keywords that JSON Schema 2020-12 (the MCP
default) and draft-07 read alike, and every object lists its keys: required are the keys always
present, the others appear only when set (``body`` with ``full``, ``also_at`` for a text at several
paths...), and no other key may appear. The value sets come from where the code defines them.

A tool error (``isError``) carries no ``structuredContent`` (serve/mcp.py), so nothing here
describes errors.
"""

from __future__ import annotations

import re
from typing import Any, get_args

from ..config.settings import CHUNK_STRATEGIES, COLLECTION_TYPES
from ..index.vector_state import FULL, NONE, PARTIAL, QUICK
from ..paths import VIRTUAL_PREFIX
from ..precedence import SOURCES
from ..sources.transcripts.model import Kind, Role, SourceFormat

LEVELS = ("turn", "run", "session", "project")  # search/transcripts.py LEVELS (a test checks)
# `query`'s retrievals that counted (hybrid/pipeline.py, hybrid/run.py).
USED = ("keyword", "vector", "keyword+vector", "hybrid")
STAGES = ("probe", "expansion", "embedding", "retrieval", "fusion", "rerank")
VECTOR_STATES = (NONE, QUICK, PARTIAL, FULL)

STRING: dict[str, Any] = {"type": "string"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
NUMBER: dict[str, Any] = {"type": "number"}
COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
LINE: dict[str, Any] = {"type": "integer", "minimum": 1}  # 1-based
SCORE: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
STRINGS: dict[str, Any] = {"type": "array", "items": STRING}
TIME = {"type": "string", "description": "ISO 8601"}
DOCID = {"type": "string", "pattern": "^#[0-9a-f]{6}$", "description": "# + short content id"}
VIRTUAL_PATH = {"type": "string", "pattern": "^" + re.escape(VIRTUAL_PREFIX)}


def obj(properties: dict[str, Any], optional: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """An object with exactly these keys: all required but the ``optional`` ones."""
    unknown = set(optional) - set(properties)
    assert not unknown, unknown
    return {
        "type": "object",
        "properties": properties,
        "required": [key for key in properties if key not in optional],
        "additionalProperties": False,
        **extra,
    }


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "enum" in schema:
        return {**schema, "type": [schema["type"], "null"], "enum": [*schema["enum"], None]}
    return {**schema, "type": [schema["type"], "null"]}


def array(items: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **extra}


def enum(values: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def pair(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    # prefixItems is 2020-12; a draft-07 reader still checks the length.
    return {"type": "array", "prefixItems": [first, second], "minItems": 2, "maxItems": 2}


NOTICE = obj(
    {
        "code": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$", "description": "stable code"},
        "message": STRING,
    }
)
WARNINGS = array(NOTICE, description="what the reader must know: missing or quick vectors, a stale index...")
SCALAR = {"type": ["string", "number", "boolean"]}
FIELDS = {
    "type": "object",
    "additionalProperties": {"anyOf": [SCALAR, array(SCALAR, minItems=1)]},
    "description": "front-matter fields as written: a list field as a list (with `fields`)",
}
SNIPPET = obj({"start_line": LINE, "lines": STRINGS})
TRANSCRIPT_HIT = obj(
    {
        "level": enum(LEVELS),
        "project": nullable(STRING),
        "session_id": nullable(STRING),
        "session_title": nullable(STRING),
        "run_index": nullable(COUNT),
        "run_prompt": nullable(STRING),
        "role": nullable(enum(get_args(Role))),
        "kind": nullable(enum(get_args(Kind))),
        "turn_id": nullable(STRING),
        "timestamp": nullable(TIME),
        "line": nullable(LINE),
        "matches": COUNT,
        "first_timestamp": nullable(TIME),
        "last_timestamp": nullable(TIME),
        "sessions": COUNT,
    }
)
# The keys every result that names a document has.
_DOCUMENT = {
    "docid": DOCID,
    "collection": STRING,
    "path": {"type": "string", "description": "relative to the collection root, /-separated"},
    "virtual_path": VIRTUAL_PATH,
    "disk_path": STRING,
    "title": STRING,
    "contexts": array(STRING, description="the contexts that apply, most general first"),
}
HIT = obj(
    {
        **_DOCUMENT,
        "score": {**SCORE, "description": "0..1, higher is better"},
        "snippet": SNIPPET,
        "stale": {**BOOLEAN, "description": "the file changed on disk since it was indexed"},
        "matched_terms": COUNT,
        "total_terms": COUNT,
        "body": {**STRING, "description": "the whole document (with `full`)"},
        "chunk_lines": {
            **pair(LINE, LINE),
            "description": "vector hits: the best chunk's first and last line",
        },
        "transcript": TRANSCRIPT_HIT,
        "fields": FIELDS,
        "page": {**LINE, "description": "PDF: the page where the snippet starts"},
        "also_at": array(
            VIRTUAL_PATH, minItems=1, description="the other paths of the same text (exact copies)"
        ),
        "also_in": array(
            STRING, minItems=1, description="the other languages of the same page (fr, pt-br...)"
        ),
    },
    optional=("body", "chunk_lines", "transcript", "fields", "page", "also_at", "also_in"),
)
EXPLAIN = obj(
    {
        "lists": array(obj({"name": STRING, "weight": NUMBER, "reason": STRING, "count": COUNT})),
        "hits": array(
            obj(
                {
                    "path": VIRTUAL_PATH,
                    "ranks": array(obj({"name": STRING, "rank": LINE, "score": NUMBER, "rrf": NUMBER})),
                    "bonus": NUMBER,
                    "fused": NUMBER,
                    "rrf_rank": COUNT,
                    "rerank": nullable(NUMBER),
                    "blended": nullable(NUMBER),
                }
            ),
            description="in the order of results",
        ),
        "notes": STRINGS,
        "stages": array(
            obj({"stage": enum(STAGES), "seconds": NUMBER, "tokens": COUNT, "model_seconds": NUMBER})
        ),
    }
)


def search_result(mode: str) -> dict[str, Any]:
    """What `search`, `vsearch` and `query` return (`query` adds ``used`` and ``explain``)."""
    fused = mode == "query"
    return obj(
        {
            "query": STRING,
            "mode": {"type": "string", "const": mode},
            "results": array(HIT),
            "total": {**COUNT, "description": "matching documents before the limit"},
            "total_exact": {**BOOLEAN, "description": "false when total is only a lower bound"},
            "limit": {**nullable(LINE), "description": "null with `all`"},
            "warnings": WARNINGS,
            "took_ms": {**NUMBER, "minimum": 0},
            "collections": array(STRING, description="the collections searched"),
            **({"used": enum(USED), "explain": EXPLAIN} if fused else {}),
        },
        optional=("used", "explain") if fused else (),
    )


PACK = obj(
    {
        "query": STRING,
        "items": array(
            obj(
                {
                    **_DOCUMENT,
                    "score": SCORE,
                    "start_line": LINE,
                    "end_line": LINE,
                    "heading_path": array(STRING, description="the headings above, outermost first"),
                    "text": STRING,
                    "stale": BOOLEAN,
                }
            )
        ),
        "bytes_used": COUNT,
        "max_bytes": LINE,
        "max_items": LINE,
        "omitted": {**COUNT, "description": "passages left out whole because they did not fit"},
        "warnings": WARNINGS,
        "used": nullable(enum(USED)),
    },
    description="`query` with `pack`: the best passages whole, with citations",
)
DOCUMENT = obj(
    {
        **_DOCUMENT,
        "size": {**COUNT, "description": "bytes"},
        "total_lines": COUNT,
        "from_line": LINE,
        "lines": array(STRING, description="lines from_line, from_line + 1, ..."),
        "truncated": {**BOOLEAN, "description": "lines after these exist and were not returned"},
        "stale": BOOLEAN,
        "missing": {**BOOLEAN, "description": "the file is gone from disk: the indexed text"},
        "also_at": array(
            VIRTUAL_PATH, minItems=1, description="`get #docid` of a text at several paths: the others"
        ),
    },
    optional=("also_at",),
)
SESSION = obj(
    {
        "collection": STRING,
        "session_id": STRING,
        "path": STRING,
        "virtual_path": VIRTUAL_PATH,
        "disk_path": STRING,
        "project": nullable(STRING),
        "title": nullable(STRING),
        "parent_session_id": nullable(STRING),
        "source_format": enum(get_args(SourceFormat)),
        "first_timestamp": nullable(TIME),
        "last_timestamp": nullable(TIME),
        "total_turns": COUNT,
        "messages": array(
            obj(
                {
                    "turn_id": STRING,
                    "line": LINE,
                    "role": enum(get_args(Role)),
                    "kind": enum(get_args(Kind)),
                    "timestamp": nullable(TIME),
                    "run_index": COUNT,
                    "tool_name": nullable(STRING),
                    "text": STRING,
                }
            )
        ),
        "runs": array(obj({"index": COUNT, "prompt": STRING})),
        "truncated": BOOLEAN,
        "next_line": nullable(LINE),
        "max_bytes": LINE,
        "raw": BOOLEAN,
        "warnings": WARNINGS,
        "focus_line": nullable(LINE),
    },
    description="`get` of a transcript turn (SESSION.jsonl:LINE): the turns around it",
)
SKIPPED = obj(
    {
        "virtual_path": VIRTUAL_PATH,
        "size": {**COUNT, "description": "the file's bytes on disk"},
        "reason": STRING,
        "text_bytes": {**COUNT, "description": "the bytes of its text, compared with max_bytes"},
    }
)
MULTI_GET = obj(
    {
        "pattern": STRING,
        "documents": array(DOCUMENT),
        "skipped": array(SKIPPED, description="documents over max_bytes, listed instead of cut"),
        "max_bytes": LINE,
        "max_lines": nullable(LINE),
        "warnings": WARNINGS,
    }
)
COLLECTION = obj(
    {
        "name": STRING,
        "path": STRING,
        "masks": STRINGS,
        "ignore": STRINGS,
        "update": nullable(STRING),
        "include": {**BOOLEAN, "description": "false: searched only when named"},
        "chunk_strategy": enum(CHUNK_STRATEGIES),
        "type": enum(COLLECTION_TYPES),
        "redact": BOOLEAN,
    }
)
COLLECTION_INFO = obj(
    {
        "collection": COLLECTION,
        "documents": COUNT,
        "last_update": nullable(TIME),
        "bytes": COUNT,
        "chunked": COUNT,
        "chunks": COUNT,
        "chunk_fallbacks": COUNT,
        "vectors": {**COUNT, "description": "chunks with a full vector from the configured model"},
        "stale_vectors": COUNT,
        "unembedded": COUNT,
        "quick_vectors": {**COUNT, "description": "chunks searched by a quick vector until their full one"},
        "vector_state": {
            **enum(VECTOR_STATES),
            "description": "what vector search reads of this collection: nothing, quick vectors only,"
            " part of it, all of it",
        },
        "vector_state_note": STRING,
        "skipped": COUNT,
        "skipped_reasons": {"type": "object", "additionalProperties": COUNT},
    }
)
SETTING = obj(
    {
        "name": STRING,
        "value": STRING,
        "source": enum(SOURCES),
        "env": nullable(STRING),
        "config_key": nullable(STRING),
        "flag": nullable(STRING),
        "problem": nullable(STRING),
    }
)
SERVER = obj(
    {
        "product": STRING,
        "pgvector": nullable(STRING),
        "pgvector_available": nullable(STRING),
        "round_trip_ms": NUMBER,
    }
)
EMBED_SPEED = obj(
    {
        "chunks_per_second": NUMBER,
        "vectors_per_second": NUMBER,
        "chunks": COUNT,
        "seconds": NUMBER,
        "measured_at": TIME,
    }
)
STATUS = obj(
    {
        "index_path": STRING,
        "index_exists": BOOLEAN,
        "index_bytes": COUNT,
        "schema_version": nullable(COUNT),
        "code_schema_version": COUNT,
        "config_path": STRING,
        "collections": array(COLLECTION_INFO),
        "contexts": array(obj({"path": STRING, "text": STRING})),
        "pending": array(STRING, description="what `tansaku update` would have to do"),
        "warnings": WARNINGS,
        "grammars": array(pair(STRING, BOOLEAN), description="[language, installed]"),
        "embed_model": nullable(STRING),
        "embed_window": nullable(LINE),
        "embed_budget": nullable(LINE),
        "model_threads": nullable(STRING),
        "settings": array(SETTING),
        "server": SERVER,
        "embed_speed": nullable(EMBED_SPEED),
        "embed_pending_seconds": nullable(NUMBER),
        "embed_remote": BOOLEAN,
    },
    optional=("server", "embed_remote"),
)


def one_of(description: str, *shapes: dict[str, Any]) -> dict[str, Any]:
    # The root of an output schema is an object (required by protocol versions up to 2025-11-25).
    return {"type": "object", "description": description, "oneOf": list(shapes)}


OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "query": one_of(
        "`tansaku query --json`, or with `pack` `query --pack --json`", search_result("query"), PACK
    ),
    "search": {**search_result("search"), "description": "`tansaku search --json`"},
    "vsearch": {**search_result("vsearch"), "description": "`tansaku vsearch --json`"},
    "get": one_of(
        "`tansaku get --json`: a document's lines, or a transcript turn's turns", DOCUMENT, SESSION
    ),
    "multi_get": {**MULTI_GET, "description": "`tansaku multi-get --json`"},
    "status": {**STATUS, "description": "`tansaku status --json`"},
}
