"""Endpoint references and the HTTP client against a real loopback server (stdlib, scripted):
retries on 429/5xx honouring Retry-After, timeouts, refused connections, missing models, wrong
dimensions and keys, each with its own error, none hanging."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tansaku.errors import (
    EndpointAuth,
    EndpointDimensions,
    EndpointError,
    EndpointModelMissing,
    EndpointRateLimited,
    EndpointTimeout,
    EndpointUnreachable,
    UsageError,
)
from tansaku.models.remote.client import Client
from tansaku.models.remote.embedder import RemoteEmbedder
from tansaku.models.remote.endpoint import Endpoint, parse_endpoint

from .openai_server import Script, ScriptedServer, fake_vector, free_port


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    running = ScriptedServer()
    yield running
    running.close()


def embedder(server: ScriptedServer, **client: object) -> RemoteEmbedder:
    options = {"timeout": 2.0, "retries": 2, **client}
    return RemoteEmbedder(Client(parse_endpoint(server.url()), None, **options), concurrency=1)  # type: ignore[arg-type]


def test_a_reference_is_a_base_url_and_the_model_after_the_hash():
    endpoint = parse_endpoint(" http://127.0.0.1:8080/v1/#all-minilm ")
    assert endpoint == Endpoint("http://127.0.0.1:8080/v1", "all-minilm")
    assert endpoint.reference == "http://127.0.0.1:8080/v1#all-minilm"
    assert endpoint.loopback and endpoint.origin == "http://127.0.0.1:8080"
    remote = parse_endpoint("https://gpu.example.org/v1#bge-m3")
    assert not remote.loopback and remote.origin == "https://gpu.example.org:443"
    assert parse_endpoint("http://localhost:11434/v1#nomic-embed-text").loopback
    assert parse_endpoint("http://[::1]:8080/v1#m").loopback


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        ("http://127.0.0.1:8080/v1", "names no model"),
        ("http://127.0.0.1:8080/v1#", "names no model"),
        ("https://user:sk-secret@api.example.org/v1#m", "credentials"),
        ("https://api.example.org/v1?key=sk-secret#m", "credentials"),
        ("http://127.0.0.1:99999/v1#m", "bad endpoint URL"),
        ("http:///v1#m", "no host"),
    ],
)
def test_a_bad_reference_is_a_usage_error_that_never_echoes_a_key(reference: str, says: str):
    with pytest.raises(UsageError) as caught:
        parse_endpoint(reference)
    assert says in caught.value.message
    assert "sk-secret" not in caught.value.message


def test_the_identity_is_the_model_and_its_dimensions_not_the_host():
    here = parse_endpoint("http://127.0.0.1:8080/v1#m")
    there = parse_endpoint("https://gpu.example.org/v1#m")
    assert here.identity(384) == there.identity(384)
    assert here.identity(384) != here.identity(768)
    assert here.identity(384) != parse_endpoint("http://127.0.0.1:8080/v1#other").identity(384)


def test_vectors_come_back_in_order_unit_length_and_batched(server: ScriptedServer):
    texts = [f"text number {i}" for i in range(7)]
    remote = RemoteEmbedder(Client(parse_endpoint(server.url()), None, timeout=2), batch=3, concurrency=2)
    vectors = remote.embed(texts)
    assert [round(sum(v * v for v in vector), 6) for vector in vectors] == [1.0] * 7
    for text, vector in zip(texts, vectors, strict=True):
        assert vector == pytest.approx(fake_vector(text, 8))
    # Two requests go at once, so the server may log the last batch before the second.
    assert sorted(len(r.body["input"]) for r in server.posts("/v1/embeddings")) == [1, 3, 3]
    tally = remote.client.tally
    assert (tally.requests, tally.texts, tally.retries) == (3, 7, 0)
    assert tally.prompt_tokens == sum(len(t.split()) for t in texts)
    assert remote.dims == 8  # known from the answers: no extra request
    assert len(server.log) == 3


def test_the_key_is_sent_as_a_bearer_token(server: ScriptedServer):
    RemoteEmbedder(Client(parse_endpoint(server.url()), "sk-test", timeout=2)).embed(["a"])
    assert server.log[0].headers["Authorization"] == "Bearer sk-test"
    RemoteEmbedder(Client(parse_endpoint(server.url()), None, timeout=2)).embed(["a"])
    assert "Authorization" not in server.log[1].headers


def test_a_500_is_retried_and_then_succeeds(server: ScriptedServer):
    server.then(Script(status=500, body={"error": "busy"}))
    remote = embedder(server)
    assert remote.embed(["a"]) == [pytest.approx(fake_vector("a", 8))]
    assert remote.client.tally.retries == 1
    assert len(server.posts("/v1/embeddings")) == 2


def test_a_500_that_persists_is_endpoint_error_after_the_retries(server: ScriptedServer):
    server.then(*[Script(status=500, body={"error": "model crashed"})] * 5)
    started = time.monotonic()
    with pytest.raises(EndpointError) as caught:
        embedder(server, retries=2).embed(["a"])
    assert type(caught.value) is EndpointError
    assert caught.value.code == "ENDPOINT_ERROR"
    assert "HTTP 500 after 3 attempts" in caught.value.message and "model crashed" in caught.value.message
    assert len(server.posts("/v1/embeddings")) == 3
    assert time.monotonic() - started < 10


def test_a_429_waits_for_retry_after_then_succeeds(server: ScriptedServer):
    server.then(Script(status=429, headers={"Retry-After": "1"}, body={"error": "slow down"}))
    remote = embedder(server)
    started = time.monotonic()
    assert len(remote.embed(["a"])) == 1
    waited = time.monotonic() - started
    assert 1.0 <= waited < 5
    assert remote.client.tally.retries == 1


def test_a_429_asking_for_a_long_wait_is_rate_limited_at_once(server: ScriptedServer):
    server.then(Script(status=429, headers={"Retry-After": "600"}, body={"error": "quota"}))
    started = time.monotonic()
    with pytest.raises(EndpointRateLimited) as caught:
        embedder(server).embed(["a"])
    assert time.monotonic() - started < 2
    assert caught.value.code == "ENDPOINT_RATE_LIMITED"
    assert "asks to wait 600 s" in caught.value.message
    assert len(server.posts("/v1/embeddings")) == 1


def test_a_slow_server_is_a_timeout_not_a_hang(server: ScriptedServer):
    server.then(Script(pause=3.0))
    started = time.monotonic()
    with pytest.raises(EndpointTimeout) as caught:
        embedder(server, timeout=0.5).embed(["a"])
    assert time.monotonic() - started < 2.5
    assert caught.value.code == "ENDPOINT_TIMEOUT"
    assert "TANSAKU_REMOTE_TIMEOUT" in (caught.value.hint or "")


def test_a_refused_connection_is_unreachable_after_bounded_retries():
    endpoint = parse_endpoint(f"http://127.0.0.1:{free_port()}/v1#m")
    started = time.monotonic()
    with pytest.raises(EndpointUnreachable) as caught:
        RemoteEmbedder(Client(endpoint, None, timeout=1, retries=1)).embed(["a"])
    assert time.monotonic() - started < 5
    assert caught.value.code == "ENDPOINT_UNREACHABLE"
    assert "connection refused" in caught.value.message


def test_a_model_the_server_does_not_have_is_model_missing(server: ScriptedServer):
    wrong = RemoteEmbedder(Client(parse_endpoint(server.url(model="no-such-model")), None, timeout=2))
    with pytest.raises(EndpointModelMissing) as caught:
        wrong.embed(["a"])
    assert caught.value.code == "ENDPOINT_MODEL_MISSING" and caught.value.exit_code == 1
    assert "'no-such-model'" in caught.value.message
    assert len(server.posts("/v1/embeddings")) == 1  # not retried


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_endpoint_auth(server: ScriptedServer, status: int):
    server.then(Script(status=status, body={"error": "invalid api key"}))
    with pytest.raises(EndpointAuth) as caught:
        embedder(server).embed(["a"])
    assert "TANSAKU_API_KEY" in (caught.value.hint or "")


def test_vectors_of_other_dimensions_are_endpoint_dimensions(server: ScriptedServer):
    remote = embedder(server)
    assert remote.dims == 8
    server.then(Script(dims=12))
    with pytest.raises(EndpointDimensions) as caught:
        remote.embed(["a"])
    assert caught.value.details == {"got": 12, "expected": 8}
    remote.forget_dims()  # a new question to the server: its answer sets them again
    assert len(remote.embed(["a"])[0]) == 8


def test_an_answer_with_too_few_vectors_is_a_bad_response(server: ScriptedServer):
    server.then(Script(body={"data": [{"index": 0, "embedding": [1.0, 0.0]}]}))
    with pytest.raises(EndpointError) as caught:
        embedder(server).embed(["a", "b"])
    assert caught.value.code == "ENDPOINT_BAD_RESPONSE"
    assert "1 vectors for 2 texts" in caught.value.message


def test_the_time_waited_is_wall_time_not_summed_over_concurrent_requests(server: ScriptedServer):
    server.then(Script(pause=0.6), Script(pause=0.6))
    remote = RemoteEmbedder(Client(parse_endpoint(server.url()), None, timeout=5), batch=1, concurrency=2)
    started = time.monotonic()
    remote.embed(["a", "b"])
    wall = time.monotonic() - started
    assert 0.6 <= remote.client.tally.seconds <= wall < 1.1
