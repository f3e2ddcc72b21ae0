"""Relevance scores through ``/rerank`` (llama.cpp, vLLM, Jina, Cohere style), falling back to
yes/no judging through ``/completions`` on servers without it.

The local scorer's interface (models/rerank.RelevanceScorer). ``/rerank`` scores are probabilities
from most servers and raw logits from llama.cpp's: a score outside 0..1 is taken for a logit and
passed through the logistic function.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...errors import EndpointBadResponse
from .client import Client, HttpStatus

RERANK, JUDGE = "rerank", "judge"
_NO_ROUTE = (404, 405, 501)
# The judging prompt of the local yes/no scorer (models/llama_causal.py), so both judge alike.
_YES_NO_PROMPT = (
    "Judge whether the document is relevant to the search query. Answer only yes or no.\n"
    "Query: {query}\n"
    "Document: {document}\n"
    "Relevant:"
)
# A judged document is cut here: the server's window is not known, and the start of a passage
# says most of what it is about.
_JUDGED_CHARS = 2000


class RemoteReranker:
    prompt_version = 1

    def __init__(self, client: Client) -> None:
        self.client = client
        self.model_sha256 = client.endpoint.generation_identity()
        self.route: str | None = None
        self.last_prompt_tokens = 0

    def score(self, query: str, document: str) -> float:
        return self.score_batch(query, [document])[0]

    def score_batch(self, query: str, documents: Sequence[str]) -> list[float]:
        self.last_prompt_tokens = 0
        if not documents:
            return []
        if self.route != JUDGE:
            try:
                scores = self._rerank(query, list(documents))
            except HttpStatus as exc:
                if self.route == RERANK or exc.status not in (*_NO_ROUTE, 400):
                    raise
                self.route = JUDGE
            else:
                self.route = RERANK
                return scores
        return [self._judge(query, document) for document in documents]

    def _rerank(self, query: str, documents: list[str]) -> list[float]:
        answer = self.client.post(
            "/rerank",
            {
                "model": self.client.endpoint.model,
                "query": query,
                "documents": documents,
                "top_n": len(documents),
            },
        )
        self._count(answer)
        results = answer.get("results")
        scores: list[float | None] = [None] * len(documents)
        for item in results if isinstance(results, list) else []:
            index = item.get("index") if isinstance(item, dict) else None
            value = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
            if isinstance(index, int) and 0 <= index < len(documents) and isinstance(value, int | float):
                scores[index] = _probability(float(value))
        if any(score is None for score in scores):
            raise EndpointBadResponse(f"{self.client.endpoint.base_url}/rerank did not score every document")
        return [float(score) for score in scores if score is not None]

    def _judge(self, query: str, document: str) -> float:
        prompt = _YES_NO_PROMPT.format(query=query, document=document[:_JUDGED_CHARS])
        answer = self.client.post(
            "/completions",
            {"model": self.client.endpoint.model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0,
             "logprobs": 10},
        )  # fmt: skip
        self._count(answer)
        choices = answer.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        from_logprobs = _yes_share(choice.get("logprobs"))
        if from_logprobs is not None:
            return from_logprobs
        word = str(choice.get("text", "")).strip().lower()
        return 1.0 if word.startswith("yes") else 0.0 if word.startswith("no") else 0.5

    def _count(self, answer: dict[str, Any]) -> None:
        usage = answer.get("usage")
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if isinstance(tokens, int):
            self.last_prompt_tokens += tokens


def _probability(value: float) -> float:
    return value if 0.0 <= value <= 1.0 else 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, value))))


def _yes_share(logprobs: Any) -> float | None:
    """P(yes) / (P(yes) + P(no)) from the first token's top log-probabilities, if they hold either."""
    top = logprobs.get("top_logprobs") if isinstance(logprobs, dict) else None
    first = top[0] if isinstance(top, list) and top and isinstance(top[0], dict) else None
    if first is None:
        return None
    yes = no = 0.0
    for token, logprob in first.items():
        if not isinstance(logprob, int | float):
            continue
        word = str(token).strip().lower()
        if word == "yes":
            yes += math.exp(logprob)
        elif word == "no":
            no += math.exp(logprob)
    return yes / (yes + no) if yes + no > 0 else None
