"""Prompt formats: how queries and documents are worded for each embedding model family.

Chosen from the GGUF metadata (architecture and name), overridable with ``[models] embed_prompt``
in the config. A chunk's heading path is part of its document text, so a chunk in the middle of a
long section still says what it is about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

FORMATS = ("embeddinggemma", "qwen3-embedding", "plain")


@dataclass(frozen=True)
class PromptFormat:
    name: str

    def query(self, text: str) -> str:
        if self.name == "embeddinggemma":
            return f"task: search result | query: {text}"
        if self.name == "qwen3-embedding":
            return (
                "Instruct: Given a web search query, retrieve relevant passages that answer the query\n"
                f"Query: {text}"
            )
        return text

    def document(self, title: str, heading_path: Sequence[str], text: str) -> str:
        body = (" > ".join(heading_path) + "\n" + text) if heading_path else text
        if self.name == "embeddinggemma":
            return f"title: {title or 'none'} | text: {body}"
        # Every window starts with what its document is (its title, unless the heading path
        # already does): a window from the middle of a long page otherwise says nothing of it.
        if title and not (heading_path and heading_path[0] == title):
            return title + "\n" + body
        return body


def choose(metadata: Mapping[str, object], override: str | None = None) -> PromptFormat:
    if override:
        if override not in FORMATS:
            raise ValueError(f"unknown prompt format {override!r}; use one of: {', '.join(FORMATS)}")
        return PromptFormat(override)
    arch = str(metadata.get("general.architecture", "")).lower()
    name = " ".join(str(metadata.get(key, "")).lower() for key in ("general.name", "general.basename"))
    if "gemma" in arch and ("embedding" in arch or "embedding" in name):
        return PromptFormat("embeddinggemma")
    if "qwen3" in arch and "embedding" in name:
        return PromptFormat("qwen3-embedding")
    return PromptFormat("plain")
