"""What the user can run when a result says part of the index or a model is missing.

A server is read-only: it never embeds, re-indexes or downloads. When a result or an error says
something is missing, the agent gets the exact command to hand to its user, with what it does,
roughly how long it takes and what it costs on disk, so the user can decide.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..render.shared import duration_words

# Measured on 2 CPU cores (evals/RESULTS-embed.md), for when the configured model has not been
# measured on this machine yet: the wait is then given as the range these two make.
REFERENCE_SPEEDS = (("MiniLM-L6", 6.1), ("EmbeddingGemma-300M", 0.5))  # chunks per second
# The default models' files (models/registry.py DEFAULTS), rounded.
MODEL_SIZES = {"embed": "about 330 MB", "generate": "about 640 MB", "rerank": "about 640 MB"}
# The default embedding model's vector size (EmbeddingGemma-300M): what a chunk's vector costs
# before the model has embedded anything here (4 bytes a dimension).
DEFAULT_EMBED_DIMS = 768
_ROLE = re.compile(r"\bthe (embed|generate|rerank)(?:ding)? model\b")


@dataclass(frozen=True)
class PendingEmbed:
    """Chunks without a vector from the configured model, and the seconds they would take at its
    speed measured on this machine (None when it was never measured here)."""

    chunks: int
    seconds: float | None = None
    chunks_per_second: float | None = None


def _embed(pending: PendingEmbed | None) -> str:
    if pending is None or not pending.chunks:
        size = "the collections' chunks"
        cost = "a few KB of index per chunk"
    else:
        chunks = pending.chunks
        size = f"{chunks} chunk" + ("" if chunks == 1 else "s")
        megabytes = max(1, round(chunks * DEFAULT_EMBED_DIMS * 4 / 2**20))
        cost = f"about {megabytes} MB of vectors at the default model's {DEFAULT_EMBED_DIMS} dimensions"
        cost += ", " + _wait(pending)
    return (
        "`tansaku embed` computes a vector for each chunk that has none, with the local embedding"
        f" model ({size}; {cost}; chunks already embedded are kept, and an interrupted run resumes)"
    )


def _wait(pending: PendingEmbed) -> str:
    if pending.seconds is not None and pending.chunks_per_second:
        return (
            f"{duration_words(pending.seconds)} at the {pending.chunks_per_second:.2g} chunks/s"
            " this model was measured at on this machine"
        )
    fast, slow = (pending.chunks / rate for _, rate in REFERENCE_SPEEDS)
    models = " and ".join(f"{name} {rate:g} chunks/s" for name, rate in REFERENCE_SPEEDS)
    return (
        f"{duration_words(fast).removeprefix('about ')} to {duration_words(slow).removeprefix('about ')}"
        f" on 2 CPU cores depending on the model ({models}; this model's speed here is not measured"
        " yet: `tansaku embed` shows it)"
    )


def _pull(role: str) -> str:
    return (
        f"`tansaku models pull {role}` downloads the default {role} model once into the models folder"
        f" ({MODEL_SIZES.get(role, 'a few hundred MB')}; a minute or more, depending on the"
        f" connection; it is the only command that uses the network), or `tansaku models add {role}"
        " PATH.gguf` uses a file already on the machine"
    )


UPDATE = (
    "`tansaku update` re-reads the files that changed since they were indexed (unchanged files are"
    " skipped by size and time, so it takes about as long as reading the changed ones; the index"
    " grows with their text)"
)


def for_codes(codes: Iterable[tuple[str, str]], pending: PendingEmbed | None = None) -> list[str]:
    """One sentence per (code, message) that a user can act on; the order of first appearance."""
    advice: list[str] = []
    for code, message in codes:
        if code in ("NO_VECTORS", "VECTORS_UNAVAILABLE", "STALE_VECTORS"):
            line = _embed(pending)
        elif code == "MODEL_MISSING":
            role = _ROLE.search(message)
            line = _pull(role.group(1) if role else "embed")
        elif code in ("STALE", "INDEX_SCHEMA_MISMATCH"):
            line = UPDATE
        elif code == "INDEX_MISSING":
            line = "`tansaku collection add PATH` creates the index and indexes that folder now"
        else:
            continue
        if line not in advice:
            advice.append(line)
    return advice


def codes_of(data: Any) -> list[tuple[str, str]]:
    """The warning and error codes in a result's JSON data, and stale hits as STALE."""
    found: list[tuple[str, str]] = []
    if not isinstance(data, dict):
        return found
    error = data.get("error")
    if isinstance(error, dict):
        found.append((str(error.get("code")), str(error.get("message", ""))))
    for warning in data.get("warnings") or ():
        if isinstance(warning, dict):
            found.append((str(warning.get("code")), str(warning.get("message", ""))))
    hits = list(data.get("results") or ()) + list(data.get("documents") or ())
    if data.get("stale") or any(isinstance(h, dict) and h.get("stale") for h in hits):
        found.append(("STALE", ""))
    return found


def pending_embed(status: Any) -> PendingEmbed:
    """What `embed` would have to do, from a status report: chunks without a vector from the
    configured model, and their time at its measured speed."""
    total = 0
    for info in status.collections:
        total += info.unembedded or max(0, info.chunks - info.vectors)
    speed = getattr(status, "embed_speed", None)
    if speed is None:
        return PendingEmbed(total)
    return PendingEmbed(total, speed.seconds_for(total), speed.chunks_per_second)


def text(lines: list[str]) -> str:
    if not lines:
        return ""
    body = "\n".join(f"- {line}" for line in lines)
    return f"\nFor the user to run (this server is read-only and will not run them):\n{body}\n"
