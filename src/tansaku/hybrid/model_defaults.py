"""Whether `query` expands and reranks when the caller does not say: where it pays, not on a CPU.

Measured on 2 CPU cores (docs/models.md, evals/RESULTS-embed.md): instruction-tuned expansion
models (Qwen2.5-Coder 0.5B and 1.5B) changed MRR@10 by -0.028 to +0.023 and took 3 to 15 s a
query, past the 1.5 s a query gives them, so on a CPU expansion costs its budget and adds nothing.
A 0.5B model judging passages took 3.9 CPU seconds a passage: no passage fits the 0.75 s rerank
budget, so a reranker of that size on a CPU only ever warned that it was skipped. A model served
by an endpoint or run on a GPU fits its budget: there both stay on. On a CPU reranking runs by
default only with a rerank model on this machine, and a skip for want of time is then a note, not
a warning (nobody asked for it). ``[query] expand`` / ``[query] rerank`` (true or false) in the
config, or the caller's flag, decide instead, and then every shortfall is a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigInvalid
from .run import EXPANSION_REFUSED, RERANK_REFUSED

SETTING = "expand"
RERANK_SETTING = "rerank"
_AUTO = "auto"


@dataclass(frozen=True)
class ExpansionChoice:
    expand: bool
    why: str  # the note `query --explain` and JSON `notes` give when expansion is off


@dataclass(frozen=True)
class RerankChoice:
    rerank: bool
    why: str  # the note when reranking is off
    # Chosen by default on a CPU: a skip for want of time is a note, not a warning.
    quiet: bool = False


def _setting(query_settings: Mapping[str, Any] | None, name: str, config_path: Path) -> bool | None:
    """``[query] NAME`` as true or false; None for "auto" or unset; anything else is refused."""
    setting = (query_settings or {}).get(name, _AUTO)
    if isinstance(setting, bool):
        return setting
    if setting != _AUTO:
        raise ConfigInvalid(
            f'config {config_path}: [query] {name} must be true, false or "auto", not {setting!r}'
        )
    return None


def _served_fast(ref: Any, gpu: Callable[[], bool] | None) -> bool:
    """A model on an endpoint, or llama.cpp offloading to a GPU."""
    if ref.endpoint is not None:
        return True
    if gpu is None:
        from ..models.system import gpu_offload

        gpu = gpu_offload
    return gpu()


def choose_rerank(
    asked: bool | None,
    config_path: Path,
    query_settings: Mapping[str, Any] | None,
    gpu: Callable[[], bool] | None = None,
) -> RerankChoice:
    """``asked`` (the flag), else ``[query] rerank``, else on for an endpoint or a GPU; on a CPU,
    on (quietly) when the rerank model is on this machine, off with a note when it is not."""
    if asked is not None:
        return RerankChoice(asked, RERANK_REFUSED)
    setting = _setting(query_settings, RERANK_SETTING, config_path)
    if setting is not None:
        return RerankChoice(setting, f"reranking off ([query] rerank = false in {config_path})")
    from ..models.registry import resolve

    ref = resolve("rerank", config_path)
    if _served_fast(ref, gpu):
        return RerankChoice(True, "")
    if not ref.present:
        return RerankChoice(
            False,
            "reranking off: no rerank model on this machine (`tansaku models pull rerank`); on a CPU"
            " it runs by default only when its model is here, and is skipped when it cannot finish"
            " in its budget",
        )
    return RerankChoice(True, "", quiet=True)


def choose_expansion(
    asked: bool | None,
    config_path: Path,
    query_settings: Mapping[str, Any] | None,
    gpu: Callable[[], bool] | None = None,
) -> ExpansionChoice:
    """``asked`` (the flag: True, False, or None for the default), else ``[query] expand``, else
    on for an endpoint or a GPU and off on a CPU. ``gpu`` tells whether llama.cpp offloads to one."""
    if asked is not None:
        return ExpansionChoice(asked, EXPANSION_REFUSED)
    setting = _setting(query_settings, SETTING, config_path)
    if setting is not None:
        return ExpansionChoice(setting, f"expansion off ([query] expand = false in {config_path})")
    from ..models.registry import resolve

    if _served_fast(resolve("generate", config_path), gpu):
        return ExpansionChoice(True, "")
    return ExpansionChoice(
        False,
        "expansion off by default on a CPU, where it did not pay (docs/models.md): --expand, or"
        " [query] expand = true, turns it on",
    )


def roles_left_out(
    config_path: Path, query_settings: Mapping[str, Any] | None, gpu: Callable[[], bool] | None = None
) -> dict[str, str]:
    """The model roles `query` does not use by default on this machine, each with why: what
    `models pull` without a role leaves out (a 640 MB model nothing would run)."""
    left: dict[str, str] = {}
    if not choose_expansion(None, config_path, query_settings, gpu).expand:
        left["generate"] = "query does not expand on a CPU by default (it did not pay: docs/models.md)"
    from ..models.registry import resolve

    wanted = _setting(query_settings, RERANK_SETTING, config_path)
    if wanted is False:
        left["rerank"] = f"[query] rerank = false in {config_path}"
    elif wanted is None and not _served_fast(resolve("rerank", config_path), gpu):
        left["rerank"] = (
            "on a CPU a reranker of this size scores about one passage in 4 s, past query's 0.75 s"
            " budget (docs/models.md)"
        )
    return left
