"""Expansion and reranking through an endpoint against a real loopback server (stdlib,
scripted): the routes tried in order (grammar, plain completion, chat with a schema, plain chat;
/rerank, then yes/no judging), and a failing endpoint costing its step only, with its warning."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tansaku.models.generate import EXPANSION_GRAMMAR, expand_query
from tansaku.models.remote.client import Client
from tansaku.models.remote.endpoint import parse_endpoint
from tansaku.models.remote.generator import (
    CHAT,
    CHAT_SCHEMA,
    COMPLETIONS,
    COMPLETIONS_GRAMMAR,
    RemoteGenerator,
)
from tansaku.models.remote.reranker import JUDGE, RERANK, RemoteReranker

from .openai_server import Script, ScriptedServer

LINES = "lex: restore deleted file backup\nvec: how to recover a deleted file\n"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    running = ScriptedServer(model="gen")
    yield running
    running.close()


def client(server: ScriptedServer, **options: Any) -> Client:
    return Client(parse_endpoint(server.url()), None, **{"timeout": 2.0, "retries": 0, **options})


def completion(text: str) -> dict:
    return {"choices": [{"text": text, "index": 0}], "usage": {"prompt_tokens": 40, "completion_tokens": 12}}


def chat(content: str) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": content}}]}


def refuses(field: str, then: Callable[[Any], tuple[int, Any]]) -> Callable[[Any], tuple[int, Any]]:
    """A route that answers 400 to a request carrying ``field`` (as OpenAI does to unknown ones)."""
    return lambda body: (
        (400, {"error": f"Unrecognized request argument: {field}"}) if field in body else then(body)
    )


def test_the_grammar_is_sent_where_the_server_takes_it(server: ScriptedServer):
    server.routes["/v1/completions"] = lambda body: (200, completion(LINES))
    generator = RemoteGenerator(client(server))
    text = generator.generate("Query: x\n", max_tokens=32, grammar=EXPANSION_GRAMMAR, stop=("\n\n",))
    assert text == LINES and generator.route == COMPLETIONS_GRAMMAR
    sent = server.posts("/v1/completions")[0].body
    assert sent["grammar"] == EXPANSION_GRAMMAR and sent["temperature"] == 0.0 and sent["stop"] == ["\n\n"]
    assert sent["model"] == "gen" and generator.last_tokens == 12


def test_a_server_refusing_the_grammar_gets_the_prompt_alone(server: ScriptedServer):
    server.routes["/v1/completions"] = refuses("grammar", lambda body: (200, completion(LINES)))
    generator = RemoteGenerator(client(server))
    assert generator.generate("Query: x\n", max_tokens=32, grammar=EXPANSION_GRAMMAR) == LINES
    assert generator.route == COMPLETIONS
    generator.generate("Query: y\n", max_tokens=32, grammar=EXPANSION_GRAMMAR)
    assert len(server.posts("/v1/completions")) == 3  # the route is remembered: no second refusal


def test_a_chat_only_server_answers_json_by_schema(server: ScriptedServer):
    answer = {"lex": ["restore deleted file backup"], "vec": ["how to recover a deleted file"], "hyde": []}
    server.routes["/v1/chat/completions"] = lambda body: (200, chat(json.dumps(answer)))
    generator = RemoteGenerator(client(server))
    assert generator.generate("Query: x\n", max_tokens=32, grammar=EXPANSION_GRAMMAR) == LINES
    assert generator.route == CHAT_SCHEMA
    sent = server.posts("/v1/chat/completions")[0].body
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["messages"][0]["content"].endswith("Query: x\n")


def test_a_chat_server_without_schemas_gets_plain_chat(server: ScriptedServer):
    server.routes["/v1/chat/completions"] = refuses("response_format", lambda body: (200, chat(LINES)))
    generator = RemoteGenerator(client(server))
    assert generator.generate("Query: x\n", max_tokens=32) == LINES
    assert generator.route == CHAT


def test_an_expansion_past_its_budget_is_a_timeout_warning(server: ScriptedServer):
    server.routes["/v1/completions"] = lambda body: (200, completion(LINES))
    server.then(Script(pause=1.5))
    expansion = expand_query("restore file", RemoteGenerator(client(server)), None, timeout=0.3)
    assert [w.code for w in expansion.warnings][:1] == ["TIMEOUT"]
    assert expansion.lex == ["restore file"]


def test_rerank_scores_come_from_rerank_in_document_order(server: ScriptedServer):
    results = [{"index": 1, "relevance_score": -2.0}, {"index": 0, "relevance_score": 3.0}]
    server.routes["/v1/rerank"] = lambda body: (200, {"results": results, "usage": {"prompt_tokens": 20}})
    scorer = RemoteReranker(client(server))
    scores = scorer.score_batch("q", ["relevant", "not"])
    assert scorer.route == RERANK
    # llama.cpp's logits go through the logistic function; probabilities stay as they are.
    assert scores == pytest.approx([0.9526, 0.1192], abs=1e-4)
    assert server.posts("/v1/rerank")[0].body == {
        "model": "gen",
        "query": "q",
        "documents": ["relevant", "not"],
        "top_n": 2,
    }
    assert scorer.last_prompt_tokens == 20
    server.routes["/v1/rerank"] = lambda body: (200, {"results": [{"index": 0, "relevance_score": 0.25}]})
    assert scorer.score("q", "one") == 0.25


def test_without_rerank_documents_are_judged_yes_or_no(server: ScriptedServer):
    def judge(body: Any) -> tuple[int, Any]:
        if "potassium" in body["prompt"]:
            return 200, completion(" No")  # no log-probabilities: the word decides
        logprobs = {"top_logprobs": [{" yes": -0.1, " Yes": -3.0, " no": -2.5}]}
        return 200, {"choices": [{"text": " yes", "logprobs": logprobs}]}

    server.routes["/v1/completions"] = judge
    scorer = RemoteReranker(client(server))
    scores = scorer.score_batch("restore a file", ["Run restic restore.", "Bananas are rich in potassium."])
    assert scorer.route == JUDGE
    assert scores[0] == pytest.approx((0.9048 + 0.0498) / (0.9048 + 0.0498 + 0.0821), abs=1e-3)
    assert scores[1] == 0.0
    prompt = server.posts("/v1/completions")[0].body
    assert prompt["max_tokens"] == 1 and prompt["logprobs"] == 10
    assert prompt["prompt"].endswith("Document: Run restic restore.\nRelevant:")
    assert len(server.posts("/v1/rerank")) == 1  # asked once, then remembered


@pytest.fixture
def failing(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedServer:
    server.routes["/v1/completions"] = lambda body: (500, {"error": "model crashed"})
    server.routes["/v1/rerank"] = lambda body: (500, {"error": "model crashed"})
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", server.url())
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", server.url())
    monkeypatch.setenv("TANSAKU_REMOTE_RETRIES", "0")
    return server


def test_a_failing_endpoint_costs_its_step_not_the_query(
    cli: Callable, indexed: Path, failing: ScriptedServer
):
    result = cli(
        "query", "how", "do", "I", "get", "a", "deleted", "file", "back", "--json", "--rerank-budget", "5"
    )
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["results"]
    codes = {w["code"]: w["message"] for w in data["warnings"]}
    assert "HTTP 500" in codes["EXPANSION_FAILED"] and "model crashed" in codes["EXPANSION_FAILED"]
    assert "HTTP 500" in codes["RERANK_SKIPPED"]
