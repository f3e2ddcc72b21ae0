"""The configured embedding model: resolved from the registry, loaded once per process."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ..errors import ModelMissing
from .prompts import PromptFormat, choose
from .registry import ModelRef, resolve

_LOADED: dict[str, Any] = {}


def embed_model(config_path: Path) -> ModelRef:
    """The embed model, which must be present: a missing one is an error naming the fix."""
    ref = resolve("embed", config_path)
    if not ref.present:
        hint = (
            "download it with `tansaku models pull embed`, or use a local file: "
            "`tansaku models add embed PATH.gguf` (`tansaku models import DIR` converts a BERT-family "
            "sentence-transformers folder)"
        )
        raise ModelMissing(
            f"the embedding model {ref.reference} is not on this machine ({ref.local_path})", hint=hint
        )
    return ref


def prompt_format(path: Path, config_path: Path) -> PromptFormat:
    override = None
    try:
        models = tomllib.loads(config_path.read_text(encoding="utf-8")).get("models", {})
        override = models.get("embed_prompt") if isinstance(models, dict) else None
    except (OSError, tomllib.TOMLDecodeError):
        override = None
    from .llama import cached_gguf_metadata

    return choose(cached_gguf_metadata(path), override)


def load_embedder(path: Path, *, threads: int | None = None, verbose: bool = False) -> Any:
    """One llama.cpp embedder per model file per process (loading costs far more than a query).

    ``threads`` is for what the caller embeds next, and is set on every call since one embedder
    serves all callers: a count (``ThreadSetting.query`` for a query), or None to choose by the
    machine's load before each decode (``ThreadSetting.batch`` unless the user fixed it).
    """
    key = str(path)
    if key not in _LOADED:
        from .llama import LlamaEmbedder

        try:
            _LOADED[key] = LlamaEmbedder(key, n_threads=threads, verbose=verbose)
        except ImportError as exc:
            raise ModelMissing(str(exc), hint="pip install 'tansaku[models]'") from exc
        except (FileNotFoundError, ValueError) as exc:
            raise ModelMissing(f"cannot load the embedding model: {exc}") from exc
    else:
        _LOADED[key].set_threads(threads)
    return _LOADED[key]
