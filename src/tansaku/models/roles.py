"""The `generate` and `rerank` models of `query`: loaded on first use, kept for the process.

A missing or unloadable model is never an error here: the caller gets None and a MODEL_MISSING
notice naming the fix, and `query` goes on without that step. A long-lived process (a server, a
script holding a ``Tansaku``) loads each model once; a one-shot command loads only the models of
the steps that run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..types import Notice
from .registry import resolve

MODEL_MISSING = "MODEL_MISSING"

_LOADED: dict[tuple[str, str], Any] = {}
# Steps a missing model costs, for its notice.
_SKIPPED = {"generate": "the query is not expanded", "rerank": "results keep their fused order"}


class ModelLoadError(RuntimeError):
    """The model file is there but llama.cpp cannot load it."""


class LazyModel:
    """A role's model that loads on first real use: a query whose expansion and rerank scores
    are all cached never loads either model (a second or more of a one-shot command). The file
    hash and the prompt version (the cache keys) are known without loading."""

    def __init__(self, role: str, path: str, sha256: str | None, prompt_version: int | None) -> None:
        self._role, self._path = role, path
        if sha256 is not None:
            self.model_sha256 = sha256
        if prompt_version is not None:
            self.prompt_version = prompt_version

    def __getattr__(self, name: str) -> Any:
        # Only reached for what __init__ did not set: everything else is the real model's.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(_load(self._role, self._path), name)


def lazy_role_model(
    role: str, config_path: Path, hashes: Any | None = None
) -> tuple[Any | None, Notice | None]:
    """The role's model as a ``LazyModel``, or (None, a MODEL_MISSING notice) when its file is
    not on this machine. A file that will not load raises ``ModelLoadError`` at first use."""
    ref = resolve(role, config_path)
    if ref.endpoint is not None:
        from .remote.open import remote_model

        # Nothing to load: a request is made only when a step is not answered from the cache.
        return remote_model(role, ref.endpoint, config_path), None
    if not ref.present:
        return None, Notice(
            MODEL_MISSING,
            f"the {role} model {ref.reference} is not on this machine: {_SKIPPED[role]}"
            f" (`tansaku models pull {role}`, or `tansaku models add {role} PATH.gguf`)",
        )
    path = str(ref.local_path)
    return LazyModel(role, path, _known_hash(path, hashes), _prompt_version(role, path)), None


def _load(role: str, path: str) -> Any:
    key = (role, path)
    if key not in _LOADED:
        try:
            _LOADED[key] = _open(role, path)
        except (ImportError, OSError, ValueError, RuntimeError) as exc:
            raise ModelLoadError(f"cannot load the {role} model {path}: {exc}") from exc
    return _LOADED[key]


def _prompt_version(role: str, path: str) -> int | None:
    """The rerank cache key's prompt version, from the kind of model the file holds (its header)."""
    if role != "rerank":
        return None
    try:
        from .cross_encoder import LlamaCrossEncoder, is_cross_encoder
        from .llama_causal import LlamaYesNoScorer

        kind = LlamaCrossEncoder if is_cross_encoder(path) else LlamaYesNoScorer
        return int(kind.prompt_version)
    except (OSError, ValueError):
        return None  # the model's own, once loaded


def _open(role: str, path: str) -> Any:
    if role == "generate":
        from .llama_causal import LlamaGenerator

        # No fixed thread count: chosen before each call from the machine's load.
        return LlamaGenerator(path)
    generator = _LOADED.get(("generate", path))
    if generator is not None:
        from .llama_causal import LlamaYesNoScorer

        # One decoder file in both roles (a small model that expands and judges): one load.
        return LlamaYesNoScorer(path, sharing=generator)
    from .cross_encoder import open_reranker

    return open_reranker(path)


def _known_hash(path: str, hashes: Any | None) -> str | None:
    if hashes is None:
        return None
    from ..store.llm_cache import cache_key
    from .gguf import file_sha256

    st = os.stat(path)
    key = cache_key(path, str(st.st_size), str(st.st_mtime_ns))
    known = hashes.get("file_sha256", key)
    if isinstance(known, str):
        return known
    sha = file_sha256(path)
    hashes.put("file_sha256", key, sha)
    return sha
