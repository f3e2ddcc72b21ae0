"""Text completion for query expansion through ``/completions``, else ``/chat/completions``.

The local generator's interface (models/generate.TextGenerator). The grammar is sent where the
server takes one (llama.cpp's servers do); a server that refuses it gets the prompt alone, and a
server without ``/completions`` (chat-only APIs) the prompt as a chat message, asking for JSON by
schema where it supports one. Whatever comes back is parsed and validated by the caller
(generate.parse_expansion), so a server that ignores the shape costs lines, not correctness.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...errors import EndpointBadResponse, EndpointTimeout
from .client import Client, HttpStatus

# Routes, most exact first; a process remembers the first that worked.
COMPLETIONS_GRAMMAR, COMPLETIONS, CHAT_SCHEMA, CHAT = (
    "completions+grammar",
    "completions",
    "chat+schema",
    "chat",
)
# The statuses that mean "this route does not exist here" rather than "this request is wrong".
_NO_ROUTE = (404, 405, 501)

_CHAT_INSTRUCTION = (
    "Continue the text below with the lines for its last query only, in the same format"
    " (lex:, vec: and hyde: lines), and nothing else.\n\n"
)
_SCHEMA = {
    "type": "object",
    "properties": {
        "lex": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "vec": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "hyde": {"type": "array", "items": {"type": "string"}, "maxItems": 1},
    },
    "required": ["lex", "vec"],
    "additionalProperties": False,
}


class RemoteGenerator:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.model_sha256 = client.endpoint.generation_identity()
        self.timed_out = False
        self.last_tokens = 0
        self.route: str | None = None

    def generate(
        self, prompt: str, *, max_tokens: int, temperature: float = 0.0, seed: int = 0,
        stop: Sequence[str] = (), grammar: str | None = None, timeout: float | None = None,
        stable_prefix: int = 0,
    ) -> str:  # fmt: skip
        """The completion of ``prompt``; a request past ``timeout`` seconds sets ``timed_out``
        and gives no text (nothing partial comes back from a request that did not finish)."""
        self.timed_out = False
        base = {"model": self.client.endpoint.model, "max_tokens": max_tokens, "temperature": temperature,
                "seed": seed}  # fmt: skip
        routes = [self.route] if self.route else _routes(grammar)
        last: HttpStatus | None = None
        for route in routes:
            try:
                text = self._ask(route, base, prompt, list(stop)[:4], grammar, timeout)
            except EndpointTimeout:
                self.timed_out = True
                return ""
            except HttpStatus as exc:
                last = exc
                if exc.status in _NO_ROUTE or exc.status in (400, 422):
                    continue
                raise
            self.route = route
            return text
        assert last is not None
        raise last

    def _ask(
        self, route: str, base: dict[str, Any], prompt: str, stop: list[str], grammar: str | None,
        timeout: float | None,
    ) -> str:  # fmt: skip
        if route in (COMPLETIONS_GRAMMAR, COMPLETIONS):
            payload = {**base, "prompt": prompt, "stop": stop}
            if route == COMPLETIONS_GRAMMAR:
                payload["grammar"] = grammar
            answer = self.client.post("/completions", payload, timeout=timeout)
            self._count(answer)
            return _choice_text(answer, "text")
        payload = {**base, "messages": [{"role": "user", "content": _CHAT_INSTRUCTION + prompt}]}
        if route == CHAT_SCHEMA:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "expansion", "schema": _SCHEMA, "strict": True},
            }
        answer = self.client.post("/chat/completions", payload, timeout=timeout)
        self._count(answer)
        content = _choice_text(answer, "message")
        return _lines_from_json(content) if route == CHAT_SCHEMA else content

    def _count(self, answer: dict[str, Any]) -> None:
        usage = answer.get("usage")
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        self.last_tokens = int(tokens) if isinstance(tokens, int) else 0


def _routes(grammar: str | None) -> list[str]:
    first = [COMPLETIONS_GRAMMAR] if grammar else []
    return [*first, COMPLETIONS, CHAT_SCHEMA, CHAT]


def _choice_text(answer: dict[str, Any], field: str) -> str:
    choices = answer.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        value = choices[0].get(field)
        if field == "message" and isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            return value
    raise EndpointBadResponse("the completion answer has no text (choices[0])")


def _lines_from_json(content: str) -> str:
    """Typed lines from a JSON answer; the content as it is when it is not that JSON."""
    try:
        data = json.loads(content)
    except json.JSONDecodeError:
        return content
    if not isinstance(data, dict):
        return content
    lines = []
    for kind in ("lex", "vec", "hyde"):
        values = data.get(kind)
        for value in values if isinstance(values, list) else []:
            if isinstance(value, str):
                lines.append(f"{kind}: {' '.join(value.split())}")
    return "\n".join(lines) + "\n"
