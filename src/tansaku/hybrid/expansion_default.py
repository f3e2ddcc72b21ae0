"""Whether `query` expands the query when the caller does not say: where it pays, not on a CPU.

Measured on 2 CPU cores (docs/models.md, evals/RESULTS-embed.md): instruction-tuned expansion
models (Qwen2.5-Coder 0.5B and 1.5B) changed MRR@10 by -0.004 to +0.023 and took 4 to 15 s a
query, past the 1.5 s a query gives them, so on a CPU expansion costs its budget and adds nothing.
A model served by an endpoint or run on a GPU writes its lines within the budget: there it stays
on. ``[query] expand = true`` (or false) in the config, or the caller's flag, decides instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigInvalid
from .run import EXPANSION_REFUSED

SETTING = "expand"
_AUTO = "auto"


@dataclass(frozen=True)
class ExpansionChoice:
    expand: bool
    why: str  # the note `query --explain` and JSON `notes` give when expansion is off


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
    setting = (query_settings or {}).get(SETTING, _AUTO)
    if isinstance(setting, bool):
        return ExpansionChoice(setting, f"expansion off ([query] expand = false in {config_path})")
    if setting != _AUTO:
        raise ConfigInvalid(
            f'config {config_path}: [query] expand must be true, false or "auto", not {setting!r}'
        )
    from ..models.registry import resolve

    ref = resolve("generate", config_path)
    if ref.endpoint is not None:
        return ExpansionChoice(True, "")
    if gpu is None:
        from ..models.system import gpu_offload

        gpu = gpu_offload
    if gpu():
        return ExpansionChoice(True, "")
    return ExpansionChoice(
        False,
        "expansion off by default on a CPU, where it did not pay (docs/models.md): --expand, or"
        " [query] expand = true, turns it on",
    )
