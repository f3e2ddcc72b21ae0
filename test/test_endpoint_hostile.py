"""A misbehaving embeddings endpoint (issue 36, items 3 to 5), against a real loopback server
(openai_server.ScriptedServer) that answers well first and then badly: NaN, infinite and all-zero
vectors, a body without end, vectors of too many or mixed dimensions, and answers slower than a
search may wait. Each bad answer is refused as ENDPOINT_BAD_RESPONSE before anything is stored or
scored; vectors an older index stored anyway are left out of search and reported by `doctor`; a
search's query vector waits seconds, then `query` answers by keywords with a warning."""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tansaku
from tansaku.errors import EndpointBadResponse, EndpointDimensions, EndpointError, EndpointTimeout
from tansaku.models.remote.client import Client
from tansaku.models.remote.embedder import RemoteEmbedder
from tansaku.models.remote.endpoint import parse_endpoint

from .conftest import index_sql
from .openai_server import Script, ScriptedServer

pytestmark = [pytest.mark.both_backends, pytest.mark.usefixtures("no_model_env")]

NAN, INF = float("nan"), float("inf")
# What each bad vector is called in the message that refuses it.
BAD_VECTORS = {
    "nan": ([0.5, NAN, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], "holds NaN at dimension 1"),
    "infinity": ([0.5, 0.5, INF, 0.5, 0.5, 0.5, 0.5, 0.5], "holds Infinity at dimension 2"),
    "minus-infinity": ([-INF, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], "holds -Infinity at dimension 0"),
    "zeros": ([0.0] * 8, "is a zero vector"),
}
BIG_BODY = 50 * 1024 * 1024
MAX_DIMS = 8192  # what sqlite-vec stores, and docs/models.md states
SRC = str(Path(tansaku.__file__).resolve().parents[1])  # the package under test, in a subprocess


def embedder(server: ScriptedServer, **client: object) -> RemoteEmbedder:
    options = {"timeout": 5.0, "retries": 0, **client}
    return RemoteEmbedder(Client(parse_endpoint(server.url()), None, **options), concurrency=1)  # type: ignore[arg-type]


def huge_vector_body() -> Iterator[bytes]:
    """~50 MB of one JSON vector (13 million values), made as it is sent: never held whole."""
    yield b'{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5'
    block = b",0.5" * 16384
    for _ in range(BIG_BODY // len(block)):
        yield block
    yield b"]}]}"


# --- the answer itself ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(BAD_VECTORS))
def test_nan_infinite_and_zero_vectors_are_refused_after_a_good_answer(server: ScriptedServer, kind: str):
    remote = embedder(server)
    assert remote.dims == 8  # a valid first answer
    vector, says = BAD_VECTORS[kind]
    server.otherwise = Script(vector=vector)
    with pytest.raises(EndpointBadResponse) as caught:
        remote.embed(["first text", "second text"])
    error = caught.value
    assert error.code == "ENDPOINT_BAD_RESPONSE" and error.exit_code == 3
    assert f"item 0 of 2 {says}" in error.message, error.message
    assert "nothing of that answer was used" in error.message


def test_a_body_without_end_is_cut_off_at_the_cap(server: ScriptedServer):
    remote = embedder(server)
    assert remote.dims == 8
    server.otherwise = Script(stream=huge_vector_body)
    started = time.monotonic()
    with pytest.raises(EndpointBadResponse) as caught:
        remote.embed(["a"])
    assert time.monotonic() - started < 5
    from tansaku.models.remote.embedder import answer_cap

    cap = answer_cap(1)
    assert f"answered a body over {cap:,} bytes" in caught.value.message
    # The client hung up after the cap: what the server wrote is the cap plus what the sockets'
    # buffers took, far from the 50 MB it meant to send.
    deadline = time.monotonic() + 10
    while not server.streamed and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.streamed and server.streamed[0] < 20 * 1024 * 1024, server.streamed


def test_an_announced_oversized_body_is_refused_unread(server: ScriptedServer):
    # The fixture sends a Content-Length: about 740 KB, twice the cap of one text's answer.
    vector = [0.25] * (MAX_DIMS // 2)
    server.then(Script(body={"data": [{"index": 0, "embedding": vector}] * 30}))
    with pytest.raises(EndpointBadResponse) as caught:
        embedder(server).embed(["a"])
    assert "it announced" in caught.value.message


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b'{"data": [{"index": 0, "embedding": [' + b"9" * 5000 + b"]}]}", "an integer of 5,000 digits"),
        (b'{"data": [{"index": 0, "embedding": ' + b"[" * 100_000, "arrays 100,000 deep"),
    ],
)
def test_json_python_cannot_read_is_a_bad_response(server: ScriptedServer, body: bytes, kind: str):
    server.then(Script(stream=lambda: iter([body])))
    with pytest.raises(EndpointBadResponse) as caught:
        embedder(server).embed(["a"])
    assert "answered something that is not JSON" in caught.value.message, kind


def test_a_vector_of_too_many_dimensions_is_refused_even_first(server: ScriptedServer):
    # Small in bytes (zeros and a one), so only the dimension check can refuse it.
    values = [0] * 20_000
    values[0] = 1
    server.then(Script(body={"data": [{"index": 0, "embedding": values}]}))
    remote = embedder(server)
    with pytest.raises(EndpointBadResponse) as caught:
        remote.embed(["a"])
    assert f"its vector has 20,000 dimensions, more than the {MAX_DIMS:,}" in caught.value.message
    assert remote.dims == 8  # nothing was learned from it: the next answer sets the dimensions


def test_a_vector_of_the_wrong_dimension_in_an_answer_names_the_item(server: ScriptedServer):
    remote = embedder(server)
    assert remote.dims == 8
    good = {"index": 0, "embedding": [0.5] * 8}
    short = {"index": 1, "embedding": [0.5] * 7}
    server.then(Script(body={"data": [good, short]}))
    with pytest.raises(EndpointBadResponse) as caught:
        remote.embed(["a", "b"])
    assert "item 1 of 2 has 7 dimensions where 8 were expected" in caught.value.message
    # A whole answer at new dimensions is still the model changing under its name.
    server.then(Script(dims=12))
    with pytest.raises(EndpointDimensions):
        remote.embed(["a"])


def test_a_query_vector_waits_the_query_timeout_not_the_bulk_one(server: ScriptedServer, monkeypatch):
    monkeypatch.setenv("TANSAKU_REMOTE_QUERY_TIMEOUT", "0.5")
    remote = embedder(server, timeout=30.0, retries=3)
    server.then(Script(pause=3.0))
    started = time.monotonic()
    with pytest.raises(EndpointTimeout) as caught:
        remote.embed_queries(["a"])
    assert time.monotonic() - started < 1.5
    assert "within 0.5 s" in caught.value.message
    assert "TANSAKU_REMOTE_QUERY_TIMEOUT" in (caught.value.hint or "")
    # Retries count against the same few seconds: a failing server is not asked again past them.
    server.then(Script(status=503, body={"error": "busy"}, headers={"Retry-After": "2"}))
    started = time.monotonic()
    with pytest.raises(EndpointError) as failed:
        remote.embed_queries(["b"])
    assert time.monotonic() - started < 1.5
    assert "HTTP 503" in failed.value.message
    assert len(server.posts("/v1/embeddings")) == 2  # not asked again
    # Bulk embedding keeps the long timeout: the same slow answer is waited for.
    server.then(Script(pause=1.0))
    assert len(remote.embed(["c"])[0]) == 8


# --- embed ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["nan", "infinity", "zeros"])
def test_embed_stores_nothing_of_a_bad_batch_and_keeps_what_was_committed(
    cli: Callable, indexed: Path, remote_embed: str, server: ScriptedServer, monkeypatch, kind: str
):
    from tansaku.index import embed

    # Small batches, committed one at a time, so that some are stored before the bad answers.
    monkeypatch.setattr(embed, "BATCH_CHUNKS", 2)
    monkeypatch.setenv("TANSAKU_REMOTE_BATCH", "2")
    monkeypatch.setenv("TANSAKU_REMOTE_CONCURRENCY", "1")
    vector, says = BAD_VECTORS[kind]
    # The model check, the probe and two batches answer well; every later answer is bad.
    server.then(Script(), Script(), Script(), Script())
    server.otherwise = Script(vector=vector)
    result = cli("embed", "--json")
    assert result.exit_code == 3, (result.stdout, result.stderr)
    error = result.error()
    assert error["code"] == "ENDPOINT_BAD_RESPONSE"
    assert says in error["message"] and "bug" not in json.dumps(error)
    row = cli("status", "--json").json()["collections"][0]
    assert 0 < row["vectors"] < row["chunks"]  # the batches before it were committed
    server.otherwise = None
    doctor = {c["check"]: c for c in cli("doctor", "--json").json()}
    assert doctor["vectors.finite"]["status"] == "ok", doctor["vectors.finite"]
    assert cli("embed").exit_code == 0  # the rest, once the server answers well
    found = cli("vsearch", "restore a snapshot", "--json")
    assert found.exit_code == 0 and found.json()["results"]


def test_a_bad_probe_stops_embed_before_anything_is_written(
    cli: Callable, indexed: Path, remote_embed: str, server: ScriptedServer
):
    server.then(Script(), Script(vector=[NAN] * 8))
    result = cli("embed", "--json")
    assert result.exit_code == 3 and result.error()["code"] == "ENDPOINT_BAD_RESPONSE"
    assert cli("status", "--json").json()["collections"][0]["vectors"] == 0


# --- vectors an index stored before the check -----------------------------------------------


def _spoil_vectors(index_path: Path, how: list[list[float]] | None) -> None:
    """Overwrite stored vectors behind tansaku's back, as an index made before answers were
    checked holds them: the first ones with the values in ``how``, or every one with zeros."""
    with index_sql(index_path) as conn:
        postgres = not hasattr(conn, "enable_load_extension")
        if not postgres:
            from tansaku.store.vectors import load_extension

            load_extension(conn)
        ids = [row[0] for row in conn.execute("SELECT id FROM embeddings ORDER BY id").fetchall()]
        values = how if how is not None else [[0.0] * 8] * len(ids)
        assert len(ids) >= len(values)
        for embedding_id, vector in zip(ids, values, strict=False):
            if postgres:
                conn.execute("UPDATE vectors_8 SET embedding = ? WHERE id = ?", (str(vector), embedding_id))
            else:
                blob = struct.pack(f"{len(vector)}f", *vector)
                conn.execute("UPDATE vec_f32_8 SET embedding = ? WHERE rowid = ?", (blob, embedding_id))


def test_vectors_stored_before_the_check_are_skipped_by_search_and_reported_by_doctor(
    cli: Callable, indexed: Path, remote_embed: str, index_path: Path, index_backend: str
):
    assert cli("embed").exit_code == 0
    # pgvector refuses NaN and infinite values outright: only zeros could reach a PostgreSQL index.
    kinds = ["zeros"] if index_backend == "postgresql" else ["nan", "infinity", "zeros"]
    _spoil_vectors(index_path, [BAD_VECTORS[k][0] for k in kinds])
    # The one-shot CLI searches with the index's KNN; --all scores every vector in memory.
    for args in (["vsearch", "snapshot"], ["vsearch", "snapshot", "--all"], ["query", "snapshot"]):
        result = cli(*args, "--json")
        assert result.exit_code == 0, (args, result.stderr)
        data = result.json()
        assert data["results"], args
        assert all(math.isfinite(r["score"]) for r in data["results"]), args
    doctor = {c["check"]: c for c in cli("doctor", "--json").json()}
    finite = doctor["vectors.finite"]
    assert finite["status"] == "warn", finite
    assert f"{len(kinds)} of {remote_embed}'s vectors are all zeros or hold NaN" in finite["detail"]
    assert finite["fix"] == "tansaku embed -f"
    assert cli("embed", "-f").exit_code == 0
    doctor = {c["check"]: c for c in cli("doctor", "--json").json()}
    assert doctor["vectors.finite"]["status"] == "ok", doctor["vectors.finite"]


def test_a_long_lived_process_skips_them_too(indexed: Path, remote_embed: str, cli: Callable, index_path):
    from tansaku.api import Tansaku

    assert cli("embed").exit_code == 0
    _spoil_vectors(index_path, None)  # every vector all zeros
    api = Tansaku(keep_vectors=True)  # every vector scored in memory, as a server does
    # Not a document scored 0 by a vector with no direction: no document at all.
    assert api.vsearch("snapshot", limit=None, min_score=0.0).hits == ()
    assert api.query("snapshot", expand=False, rerank=False).hits  # by keywords


# --- searching while the endpoint misbehaves ------------------------------------------------


def test_a_bad_query_vector_is_an_error_for_vsearch_and_a_warning_for_query(
    cli: Callable, indexed: Path, remote_embed: str, server: ScriptedServer
):
    assert cli("embed").exit_code == 0
    server.otherwise = Script(vector=BAD_VECTORS["nan"][0])
    vsearch = cli("vsearch", "snapshot", "--json")
    assert vsearch.exit_code == 3 and vsearch.error()["code"] == "ENDPOINT_BAD_RESPONSE"
    assert "its vector holds NaN" in vsearch.error()["message"]
    query = cli("query", "snapshot", "--json")
    assert query.exit_code == 0, query.stderr
    data = query.json()
    assert data["results"]  # by keywords
    warned = {w["code"]: w["message"] for w in data["warnings"]}
    assert "[ENDPOINT_BAD_RESPONSE]" in warned["VECTORS_UNAVAILABLE"]
    assert "keyword results only" in warned["VECTORS_UNAVAILABLE"]
    doctor = {c["check"]: c for c in cli("doctor", "--json").json()}
    assert doctor["model.embed"]["status"] == "fail", doctor["model.embed"]
    assert "[ENDPOINT_BAD_RESPONSE]" in doctor["model.embed"]["detail"]


def _tansaku(*args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tansaku", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    return done, time.monotonic() - started


@pytest.mark.sqlite_only
def test_a_slow_endpoint_costs_a_search_seconds_not_a_minute(
    cli: Callable, indexed: Path, remote_embed: str, server: ScriptedServer
):
    assert cli("embed").exit_code == 0
    server.otherwise = Script(pause=20.0)  # well under the 60 s bulk timeout
    env = {"PYTHONPATH": SRC}
    # The default query timeout (5 s), in a real process for the exit code.
    vsearch, seconds = _tansaku("vsearch", "snapshot", "--json", env=env)
    assert seconds < 12, seconds
    assert vsearch.returncode == 3, vsearch.stderr
    error = json.loads(vsearch.stderr)["error"]
    assert error["code"] == "ENDPOINT_TIMEOUT" and "within 5 s" in error["message"]
    assert "TANSAKU_REMOTE_QUERY_TIMEOUT" in error["hint"]
    query, seconds = _tansaku("query", "snapshot", "--json", env={**env, "TANSAKU_REMOTE_QUERY_TIMEOUT": "1"})
    assert seconds < 8, seconds
    assert query.returncode == 0, query.stderr
    data = json.loads(query.stdout)
    assert data["results"]
    warned = {w["code"]: w["message"] for w in data["warnings"]}
    assert "[ENDPOINT_TIMEOUT]" in warned["VECTORS_UNAVAILABLE"]


@pytest.mark.sqlite_only
def test_http_vsearch_and_query_report_a_misbehaving_endpoint(
    cli: Callable, indexed: Path, remote_embed: str, server: ScriptedServer, tmp_path: Path
):
    pytest.importorskip("mcp", reason="the serve extra is not installed")
    from .serve_support import http_server

    assert cli("embed").exit_code == 0
    env = {"PYTHONPATH": SRC, "TANSAKU_REMOTE_QUERY_TIMEOUT": "1"}
    with http_server(tmp_path, env=env) as http:
        assert http.post("/vsearch", {"query": "snapshot"}).json()["results"]
        server.otherwise = Script(vector=[0.0] * 8)
        refused = http.post("/vsearch", {"query": "snapshot"})
        assert refused.status == 503, refused.body  # exit 3, as over the CLI
        assert refused.json()["error"]["code"] == "ENDPOINT_BAD_RESPONSE"
        answered = http.post("/query", {"query": "snapshot"})
        assert answered.status == 200
        data = answered.json()
        assert data["results"]
        warned = {w["code"]: w["message"] for w in data["warnings"]}
        assert "[ENDPOINT_BAD_RESPONSE]" in warned["VECTORS_UNAVAILABLE"]
        server.otherwise = Script(pause=5.0)
        slow = http.post("/query", {"query": "snapshot"}, timeout=30)
        assert slow.status == 200
        warned = {w["code"]: w["message"] for w in slow.json()["warnings"]}
        assert "[ENDPOINT_TIMEOUT]" in warned["VECTORS_UNAVAILABLE"]
