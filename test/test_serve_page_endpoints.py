"""The JSON endpoints the search page needs beyond search: transcript filters on every search
mode, a session read, `get` with turns of context, and which model files are present."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .serve_support import Server, http_server

pytestmark = pytest.mark.subprocess
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
MAIN_ID = "5b1f0c2e-7d4a-4c1b-9e3f-2a6d8c0b1e47"


@pytest.fixture
def agents(cli: Any, tmp_path: Path, sample: Path) -> Path:
    """The sample files and the Claude and Codex fixture transcripts, as three collections."""
    for kind in ("claude", "codex"):
        shutil.copytree(FIXTURES / kind, tmp_path / kind)
        assert cli("collection", "add", "--type", kind, tmp_path / kind).exit_code == 0
    assert cli("collection", "add", sample, "--name", "sample").exit_code == 0
    return tmp_path


@pytest.fixture
def server(agents: Path, tmp_path: Path) -> Iterator[Server]:
    with http_server(tmp_path) as running:
        yield running


def test_vsearch_and_query_take_the_transcript_filters_the_cli_has(server: Server):
    scope = {"collections": ["claude", "codex"]}
    for filters in ({"level": "session"}, {"roles": ["user"]}, {"since": "2025-12-01"}, {"project": "site"}):
        reply = server.post("/vsearch", {"query": "index", **scope, **filters})
        # Accepted (no USAGE for an unknown field); without vectors vsearch says what is missing.
        assert reply.json().get("error", {}).get("code") != "USAGE", (filters, reply.body)

    def query(**fields: Any) -> Any:
        return server.post(
            "/query", {"query": "index", "no_expand": True, "no_rerank": True, **scope, **fields}
        )

    users = query(roles=["user"])
    hits = users.json()["results"]
    assert users.status == 200 and hits and {h["transcript"]["role"] for h in hits} == {"user"}
    sessions = query(level="session").json()["results"]
    assert {h["transcript"]["level"] for h in sessions} == {"session"}
    late = query(since="2025-12-01").json()["results"]
    assert all(h["transcript"]["timestamp"] >= "2025-12" for h in late)
    bad = query(level="chapter")
    assert bad.status == 400


def test_session_reads_a_session_in_pages_never_raw(server: Server, cli: Any):
    first = server.get(f"/session?session={MAIN_ID}&limit=2")
    assert first.status == 200, first.body
    data = first.json()
    assert data == cli("session", "read", MAIN_ID, "--limit", "2", "--json").json()  # the CLI's answer
    assert data["session_id"] == MAIN_ID and data["messages"] and data["truncated"]
    assert data["raw"] is False
    following = server.get(f"/session?session={MAIN_ID}&limit=2&from_line={data['next_line']}").json()
    assert following["messages"][0]["line"] == data["next_line"]
    assert server.get(f"/session?session={MAIN_ID}&raw=true").status == 400  # not a field here
    missing = server.get("/session?session=nope")
    assert missing.status == 404 and missing.json()["error"]["code"] == "DOC_NOT_FOUND"


def test_get_on_a_turn_takes_turns_of_context(server: Server):
    ref = f"claude/-home-ann-proj/{MAIN_ID}.jsonl:5"
    narrow = server.get(f"/get?ref={ref}&context=0").json()
    wide = server.get(f"/get?ref={ref}&context=3").json()
    assert narrow["focus_line"] == 5 and [m["line"] for m in narrow["messages"]] == [5]
    assert len(wide["messages"]) > len(narrow["messages"])
    assert server.get(f"/get?ref={ref}&context=-1").status == 400
    assert server.get(f"/get?ref={ref}&context=1001").status == 400


def test_models_says_which_files_are_present_and_what_brings_the_rest(server: Server):
    reply = server.get("/models")
    assert reply.status == 200
    models = {m["role"]: m for m in reply.json()["models"]}
    assert set(models) == {"embed", "generate", "rerank"}
    for role, model in models.items():
        assert model["present"] is False and model["fix"] == f"tansaku models pull {role}"
        assert "/" not in model["file_name"]


def test_models_format(server: Server, snapshot: Any):
    assert server.get("/models").json() == snapshot


def test_models_with_a_local_file(agents: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    present = tmp_path / "embed.gguf"
    present.write_bytes(b"GGUF")
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", str(present))
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", str(tmp_path / "gone.gguf"))
    with http_server(tmp_path) as server:
        models = {m["role"]: m for m in server.get("/models").json()["models"]}
    assert models["embed"]["present"] is True and models["embed"]["fix"] is None
    assert models["embed"]["file_name"] == "embed.gguf" and models["embed"]["source"] == "env"
    assert models["rerank"]["fix"] == "tansaku models add rerank PATH.gguf"


def test_search_answers_carry_marks_and_the_index_summary_when_asked(server: Server, cli: Any):
    plain = server.post("/search", {"query": "rename folder", "n": 3}).json()
    assert not {"marked_terms", "index_summary"} & set(plain)  # the CLI's --json answer, unchanged
    assert all("marks" not in hit["snippet"] for hit in plain["results"])
    asked = server.post("/search", {"query": "rename folder", "n": 3, "marks": True, "index_summary": True})
    data = asked.json()
    assert asked.status == 200 and data["marked_terms"] == ["rename", "folder"]
    assert [hit["docid"] for hit in data["results"]] == [hit["docid"] for hit in plain["results"]]
    for hit in data["results"]:
        snippet = hit["snippet"]
        assert len(snippet["marks"]) == len(snippet["lines"])
        words = {
            line[a:b].lower()
            for line, spans in zip(snippet["lines"], snippet["marks"], strict=True)
            for a, b in spans
        }
        assert words and words <= {"rename", "renamed", "renaming", "renames", "folder", "folders"}, words
    status = cli("status", "--json").json()
    summary = data["index_summary"]
    by_name = {c["collection"]["name"]: c for c in status["collections"]}
    assert summary["documents"] == sum(c["documents"] for c in by_name.values())
    for c in summary["collections"]:
        counted = by_name[c["name"]]
        assert (c["documents"], c["chunks"], c["vectors"], c["vector_state"]) == (
            counted["documents"], counted["chunks"], counted["vectors"], counted["vector_state"]
        )  # fmt: skip


def test_query_and_vsearch_mark_the_query_s_own_words(server: Server):
    fields = {"query": "rename folder", "no_expand": True, "no_rerank": True, "marks": True}
    data = server.post("/query", fields).json()
    assert data["marked_terms"] == ["rename", "folder"] and data["results"][0]["snippet"]["marks"]
    # Without vectors vsearch fails as the CLI does; the fields themselves are accepted.
    reply = server.post("/vsearch", {"query": "rename folder", "marks": True, "index_summary": True})
    assert reply.json().get("error", {}).get("code") != "USAGE"
    assert server.get("/get?ref=sample/README.md&marks=true").status == 400  # only for searches


def test_marks_format(server: Server, snapshot: Any):
    data = server.post(
        "/search", {"query": "文件 权限", "collections": ["sample"], "marks": True, "index_summary": True}
    ).json()
    shown = [{"path": hit["virtual_path"], "snippet": hit["snippet"]} for hit in data["results"]]
    assert {
        "marked_terms": data["marked_terms"],
        "results": shown,
        "index_summary": data["index_summary"],
    } == snapshot
