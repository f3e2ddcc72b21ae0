"""Property-based fuzzing of every HTTP endpoint and MCP tool of a real server: whatever the
fields hold, the answer is 2xx or 4xx with a stable error code, never 500, and no body carries a
traceback, and no error names a path outside the collections."""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from .serve_support import Server, http_server, request, tool_error
from .test_serve_hardening import _initialize, _mcp

pytestmark = pytest.mark.subprocess

EXAMPLES = 100  # per endpoint and per tool; evals/bench_abuse.py reports the total
# Every code a request may be refused with, from the CLI's error objects and the server's guard.
KNOWN_CODES = {
    *("USAGE", "QUERY_EMPTY", "BAD_GLOB", "DOC_NOT_FOUND", "DOCID_AMBIGUOUS", "PATH_REFUSED"),
    *("COLLECTION_NOT_FOUND", "CONTEXT_NOT_FOUND", "MODEL_MISSING", "NO_VECTORS", "VECTORS_UNAVAILABLE"),
    *("BODY_TOO_LARGE", "REQUEST_TIMEOUT"),
}

FIELDS = {
    "search": [
        "query",
        "collections",
        "limit",
        "all",
        "min_score",
        "full",
        "level",
        "roles",
        "since",
        "until",
    ],
    "vsearch": ["query", "collections", "limit", "all", "min_score", "full"],
    "query": [
        *("query", "searches", "intent", "limit", "candidate_limit", "no_expand", "no_rerank"),
        *("rerank_budget", "explain", "pack", "max_items", "max_bytes", "min_score", "collections"),
    ],
    "multi_get": ["pattern", "max_lines", "max_bytes", "line_numbers", "full_path"],
    "get": ["ref", "from_line", "max_lines", "max_bytes", "line_numbers", "full_path"],
}

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(
        ["sample/guides/backups.md", "#28ae98", "../../etc/passwd", "*", "**", "~/x", "sample/**"]
    ),
)
values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


# The requests the hardening issue found answered with 500, always among the cases tried.
ISSUE_CASES: dict[str, dict[str, Any]] = {
    "search": {"query": "restore", "limit": 10**30},
    "query": {"query": "restore", "candidate_limit": 2**63, "no_rerank": True},
    "multi_get": {"pattern": "sample/**", "max_bytes": 10**25},
    "get": {"ref": "sample/guides/backups.md", "from_line": 10**30},
}
_TEXT_FIELDS = {"query", "intent", "level", "since", "until", "pattern", "ref"}
_FLAG_FIELDS = {"all", "full", "no_expand", "no_rerank", "explain", "pack", "line_numbers", "full_path"}


def _value_for(field: str) -> st.SearchStrategy[Any]:
    """Mostly values of the field's own type (at their edges), sometimes anything at all: a
    request whose every field is of the wrong type only ever reaches the first check."""
    if field in _TEXT_FIELDS:
        words = st.sampled_from(
            ["restore", "backup restore", '"nightly backup" -laptop', "snap*", "sample/**"]
        )
        typed = words | words | st.text(max_size=60) | st.lists(st.text(max_size=10), max_size=5)
    elif field in _FLAG_FIELDS:
        typed = st.booleans() | st.sampled_from(["true", "0", "yes"])
    elif field in {"collections", "roles"}:
        typed = st.lists(st.sampled_from(["sample", "missing", "", "a/b"]) | st.text(max_size=8), max_size=3)
    elif field == "searches":
        typed = st.lists(
            st.fixed_dictionaries({"type": st.sampled_from(["lex", "vec", "hyde", "x"]), "query": st.text()}),
            max_size=12,
        )
    else:  # counts and scores
        typed = (
            st.integers(min_value=-(10**30), max_value=10**30)
            | st.floats()
            | st.sampled_from([0, 1, 2**63, 2**64, 10**19, 1e308, 0.5])
        )
    return st.one_of(typed, typed, typed, values)


def fields_for(operation: str) -> st.SearchStrategy[dict[str, Any]]:
    known = st.fixed_dictionaries({}, optional={f: _value_for(f) for f in FIELDS[operation]})
    stray = st.one_of(*[st.just({})] * 9, st.dictionaries(st.text(max_size=8), values, max_size=1))
    return st.tuples(known, stray).map(lambda pair: {**pair[1], **pair[0]})


_ABSOLUTE = re.compile(r"(?<![\w:/])/(?:tmp|home|root|usr|work|etc|var|proc)/[^\s\"']*")


def check_body(status: int, body: bytes, collection_root: Path) -> None:
    text = body.decode("utf-8", errors="replace")
    assert status < 500, (status, text[:500])
    assert "Traceback" not in text and 'File "' not in text, text[:500]
    if status >= 400:
        data = json.loads(text)
        assert data["error"]["code"] in KNOWN_CODES, data
        leaked = [p for p in _ABSOLUTE.findall(text) if not p.startswith(str(collection_root))]
        assert not leaked, (leaked, text[:500])


def _tool_result(server: Server, session: str, name: str, arguments: Any) -> tuple[int, dict]:
    status, _, body = _mcp(
        server,
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}},
        session,
    )
    return status, body


@pytest.fixture
def server(indexed: Path, tmp_path: Path):
    with http_server(tmp_path) as running:
        yield running


_settings = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize(
    ("operation", "path"),
    [("search", "/search"), ("vsearch", "/vsearch"), ("query", "/query"), ("multi_get", "/multi-get")],
)
def test_json_endpoints_never_fail_with_500(server: Server, indexed: Path, operation: str, path: str):
    @_settings
    @given(fields=fields_for(operation))
    @example(fields=ISSUE_CASES.get(operation, {}))
    def post(fields: dict[str, Any]) -> None:
        raw = json.dumps(fields, allow_nan=True).encode()
        reply = request(server.url + path, method="POST", raw=raw)
        check_body(reply.status, reply.body, indexed)

    post()


def test_get_never_fails_with_500(server: Server, indexed: Path):
    @_settings
    @given(
        fields=st.dictionaries(st.sampled_from(["ref", "from", "l", "max_bytes", "x"]), st.text(), max_size=4)
    )
    def get(fields: dict[str, str]) -> None:
        query = urllib.parse.urlencode({k: v.replace("\x00", "") for k, v in fields.items()})
        reply = request(server.url + "/get?" + query)
        check_body(reply.status, reply.body, indexed)

    get()


@pytest.mark.parametrize("name", ["search", "vsearch", "query", "get", "multi_get", "status"])
def test_mcp_tools_never_fail(server: Server, indexed: Path, name: str):
    session = _initialize(server)
    arguments = fields_for(name) if name in FIELDS else st.dictionaries(st.text(max_size=4), values)

    @_settings
    @given(arguments=arguments)
    @example(arguments=ISSUE_CASES.get(name, {}))
    def call(arguments: dict[str, Any]) -> None:
        status, body = _tool_result(server, session, name, arguments)
        assert status == 200, body
        text = json.dumps(body)
        assert "Traceback" not in text
        result = body.get("result")
        if result is None:  # a JSON-RPC error: the SDK refused the arguments' shape
            assert body["error"]["code"] < 0, body
            return
        if result.get("isError"):
            error = tool_error(result)
            assert error["code"] in KNOWN_CODES, error
            leaked = [p for p in _ABSOLUTE.findall(text) if not p.startswith(str(indexed))]
            assert not leaked, leaked

    call()


def test_mcp_resource_reads_never_fail(server: Server, indexed: Path):
    session = _initialize(server)

    @_settings
    @given(uri=st.one_of(st.text(max_size=40), st.text(max_size=40).map(lambda t: "tansaku://" + t)))
    def read(uri: str) -> None:
        status, _, body = _mcp(
            server,
            {"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": uri}},
            session,
        )
        assert status == 200, body
        text = json.dumps(body)
        assert "Traceback" not in text
        leaked = [p for p in _ABSOLUTE.findall(text) if not p.startswith(str(indexed))]
        assert not leaked, leaked

    read()
