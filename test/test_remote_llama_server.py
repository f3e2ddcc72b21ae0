"""Endpoint models against a real OpenAI-compatible server on loopback: llama-cpp-python's own
(``python -m llama_cpp.server``), serving the test MiniLM for embeddings and Gemma 270M for
completions, started by the fixtures on free ports."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from tansaku.models.remote.client import Client
from tansaku.models.remote.embedder import RemoteEmbedder
from tansaku.models.remote.endpoint import parse_endpoint

from .gemma_fixture import gemma_gguf, requires_gemma
from .models_fixture import minilm_gguf, models_required, requires_llama, requires_minilm
from .openai_server import llama_server

SERVER_PACKAGES = ("fastapi", "sse_starlette", "starlette_context", "pydantic_settings", "uvicorn")
requires_server = pytest.mark.skipif(
    not all(importlib.util.find_spec(p) for p in SERVER_PACKAGES) and not models_required(),
    reason="llama-cpp-python's server packages are not installed (pip install 'tansaku[test]')",
)
pytestmark = [requires_llama, requires_minilm, requires_server]

TEXTS = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Quarterly revenue grew by 12 percent.",
    "restic restore latest --target /tmp/restore --include /home/me/notes.txt",
    "Snapshots are read-only; restoring one file does not change the repository. " * 6,
]


@pytest.fixture(scope="module")
def minilm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("llama-server") / "minilm.log"
    settings = {"embedding": True, "n_ctx": 512, "n_batch": 512, "n_ubatch": 512}
    with llama_server(minilm_gguf(), "minilm", log, **settings) as base:
        yield base


@pytest.fixture(scope="module")
def gemma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("llama-server") / "gemma.log"
    with llama_server(gemma_gguf(), "gemma", log, n_ctx=2048) as base:
        yield base


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_vectors_from_the_endpoint_equal_local_ones(minilm_server: str):
    from tansaku.models.llama import LlamaEmbedder

    remote = RemoteEmbedder(Client(parse_endpoint(f"{minilm_server}#minilm"), None, timeout=60), batch=2)
    served = remote.embed(TEXTS)
    with LlamaEmbedder(str(minilm_gguf()), n_threads=2) as local:
        here = local.embed(TEXTS)
    assert remote.dims == local.dims == 384
    cosines = [_cosine(a, b) for a, b in zip(served, here, strict=True)]
    assert min(cosines) > 1 - 1e-3, cosines
    # Not every vector is the same one (a server answering garbage would pass the check above
    # only if local vectors were garbage alike).
    assert _cosine(served[0], served[2]) < 0.5


def test_embed_then_vsearch_through_the_server_and_back_to_the_file(
    cli, indexed: Path, minilm_server: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", f"{minilm_server}#minilm")
    embedded = cli("embed", "--json")
    assert embedded.exit_code == 0, embedded.stderr
    report = embedded.json()
    assert report["dims"] == 384 and report["remote"]["texts"] > 1
    remote_hits = cli("vsearch", "restore a single file from a snapshot", "--json").json()["results"]
    assert remote_hits
    # The local file is another model identity: its vectors are stale until embedded again.
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", str(minilm_gguf()))
    row = cli("status", "--json").json()["collections"][0]
    assert row["vectors"] == 0 and row["stale_vectors"] == row["chunks"]
    assert cli("embed").exit_code == 0
    local_hits = cli("vsearch", "restore a single file from a snapshot", "--json").json()["results"]
    assert [h["docid"] for h in local_hits[:3]] == [h["docid"] for h in remote_hits[:3]]
    for there, here in zip(remote_hits, local_hits, strict=False):
        assert abs(there["score"] - here["score"]) < 1e-3
    # And back: the endpoint's vectors are still there, current again without a request.
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", f"{minilm_server}#minilm")
    row = cli("status", "--json").json()["collections"][0]
    assert row["vectors"] == row["chunks"] and row["stale_vectors"] == 0


def test_a_model_name_the_server_does_not_serve_is_refused_before_embedding(
    cli, indexed: Path, minilm_server: str, monkeypatch: pytest.MonkeyPatch
):
    # llama-cpp-python's server answers any name with its default model: only its model list
    # tells the name is wrong.
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", f"{minilm_server}#all-mpnet-base-v2")
    result = cli("embed", "--json")
    assert result.exit_code == 1
    error = result.error()
    assert error["code"] == "ENDPOINT_MODEL_MISSING"
    assert "does not serve 'all-mpnet-base-v2' (it serves: minilm)" in error["message"]
    doctor = {c["check"]: c for c in cli("doctor", "--json").json()}
    assert doctor["model.embed"]["status"] == "fail"
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", f"{minilm_server}#minilm")
    doctor = {c["check"]: c for c in cli("doctor", "--json").json()}
    assert doctor["model.embed"]["status"] == "ok" and "384 dims" in doctor["model.embed"]["detail"]


@requires_gemma
def test_expansion_through_completions_with_the_grammar(gemma_server: str):
    from tansaku.models.generate import _STOP, EXPANSION_GRAMMAR, MAX_TOKENS, build_prompt
    from tansaku.models.remote.generator import COMPLETIONS_GRAMMAR, RemoteGenerator

    generator = RemoteGenerator(Client(parse_endpoint(f"{gemma_server}#gemma"), None, timeout=120))
    prompt = build_prompt("restore a deleted file")
    text = generator.generate(prompt, max_tokens=MAX_TOKENS, stop=_STOP, grammar=EXPANSION_GRAMMAR)
    assert generator.route == COMPLETIONS_GRAMMAR
    lines = text.strip().split("\n")
    # The grammar held: typed lines only, lex first (a base model's words are noise, not
    # their shape).
    assert lines and lines[0].startswith("lex: ")
    assert all(line.split(":")[0] in ("lex", "vec", "hyde") for line in lines)
    # Not asserted: the same text twice. llama-cpp-python's server reuses the previous prompt's
    # KV cache, which rounds differently, so even greedy decoding may choose other words.


@requires_gemma
def test_expansion_past_its_budget_is_a_timeout_warning(gemma_server: str):
    from tansaku.models.generate import expand_query
    from tansaku.models.remote.generator import RemoteGenerator

    generator = RemoteGenerator(Client(parse_endpoint(f"{gemma_server}#gemma"), None, retries=0))
    expansion = expand_query("restore a deleted file", generator, None, timeout=0.01)
    codes = [w.code for w in expansion.warnings]
    assert "TIMEOUT" in codes and expansion.lex == ["restore a deleted file"]


@requires_gemma
def test_rerank_falls_back_to_yes_no_judging_through_completions(gemma_server: str):
    from tansaku.models.remote.reranker import JUDGE, RemoteReranker

    scorer = RemoteReranker(Client(parse_endpoint(f"{gemma_server}#gemma"), None, timeout=120))
    documents = ["To restore a deleted file, run restic restore.", "Bananas are rich in potassium."]
    scores = scorer.score_batch("how do I restore a deleted file", documents)
    assert scorer.route == JUDGE  # llama-cpp-python's server has no /v1/rerank
    assert all(0.0 <= s <= 1.0 for s in scores)
    # From the yes/no log-probabilities, not from the word alone (which gives 0, 0.5 or 1).
    assert any(s not in (0.0, 0.5, 1.0) for s in scores), scores
    # Not asserted: the same scores twice (the server's KV-cache reuse moves them by ~0.01).
    assert scorer.last_prompt_tokens > 0


@requires_gemma
def test_query_with_endpoint_models_for_every_step(
    cli, indexed: Path, minilm_server: str, gemma_server: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", f"{minilm_server}#minilm")
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", f"{gemma_server}#gemma")
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", f"{gemma_server}#gemma")
    assert cli("embed").exit_code == 0
    question = "how do I get a deleted file back"
    result = cli("query", question, "--json", "--explain", "--rerank-budget", "120", "-C", "4", "-n", "4")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    codes = {w["code"]: w["message"] for w in data["warnings"]}
    assert not {"MODEL_MISSING", "RERANK_SKIPPED", "RERANK_PARTIAL"} & set(codes), codes
    assert data["used"] == "hybrid" and data["results"]
    assert all(0.0 <= e["rerank"] <= 1.0 for e in data["explain"]["hits"])
