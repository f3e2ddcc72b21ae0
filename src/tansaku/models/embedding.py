"""The configured embedding model: resolved from the registry, loaded once per process."""

from __future__ import annotations

import threading
import tomllib
from pathlib import Path
from typing import Any

from ..errors import ModelMissing
from .prompts import PromptFormat, choose
from .registry import ModelRef, resolve

_LOADED: dict[str, Any] = {}
_LOADING = threading.Lock()


class _TakingTurns:
    """The process's one embedder of a file, shared by every thread (a server's requests): a
    llama.cpp context is not safe to use from two threads at once, so its calls take turns. Only
    the model is serialised; the vector search around it runs side by side."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._turn = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        def in_turn(*args: Any, **kwargs: Any) -> Any:
            with self._turn:
                return value(*args, **kwargs)

        return in_turn

    def __enter__(self) -> _TakingTurns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    """The model's prompt format, unless ``[models] embed_prompt`` names one: this index's config
    first, then the user-wide models file (the order of the model choice itself)."""
    from .gguf import cached_gguf_metadata

    return choose(cached_gguf_metadata(path), _prompt_override(config_path))


def prompt_format_of(ref: ModelRef, config_path: Path) -> PromptFormat:
    """``prompt_format`` for a file or an endpoint; a served model has no header to read, so its
    name stands for one (``embeddinggemma-300m`` is an EmbeddingGemma)."""
    if ref.endpoint is None:
        return prompt_format(ref.local_path, config_path)
    name = ref.endpoint.model.lower()
    return choose({"general.architecture": name, "general.name": name}, _prompt_override(config_path))


def _prompt_override(config_path: Path) -> str | None:
    from .registry import user_models_path

    for source in (config_path, user_models_path(config_path)):
        try:
            models = tomllib.loads(source.read_text(encoding="utf-8")).get("models", {})
        except (OSError, tomllib.TOMLDecodeError):
            continue
        override = models.get("embed_prompt") if isinstance(models, dict) else None
        if override is not None:
            return str(override)
    return None


def embedder_for(
    ref: ModelRef, config_path: Path, *, threads: int | None = None, verbose: bool = False
) -> Any:
    """The embedder of the configured model: a local file's (``load_embedder``) or an endpoint's."""
    if ref.endpoint is not None:
        from .remote.open import remote_model

        return remote_model("embed", ref.endpoint, config_path)
    return load_embedder(ref.local_path, threads=threads, verbose=verbose)


def load_embedder(path: Path, *, threads: int | None = None, verbose: bool = False) -> Any:
    """One llama.cpp embedder per model file per process (loading costs far more than a query).

    ``threads`` is for what the caller embeds next, and is set on every call since one embedder
    serves all callers: a count (``ThreadSetting.query`` for a query), or None to choose by the
    machine's load before each decode (``ThreadSetting.batch`` unless the user fixed it).
    """
    key = str(path)
    with _LOADING:
        if key not in _LOADED:
            from .llama import LlamaEmbedder

            try:
                _LOADED[key] = _TakingTurns(LlamaEmbedder(key, n_threads=threads, verbose=verbose))
            except ImportError as exc:
                raise ModelMissing(str(exc), hint="pip install 'tansaku[models]'") from exc
            except (FileNotFoundError, ValueError) as exc:
                raise ModelMissing(f"cannot load the embedding model: {exc}") from exc
            return _LOADED[key]
    _LOADED[key].set_threads(threads)
    return _LOADED[key]
