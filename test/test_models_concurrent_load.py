"""Two threads loading llama.cpp models at once (a server's vsearch and query) must both get
their model: unserialised, the process ended silently with exit status 0."""

from __future__ import annotations

import subprocess
import sys

from .gemma_fixture import gemma_gguf, requires_gemma
from .models_fixture import minilm_gguf


@requires_gemma
def test_models_loading_in_two_threads_at_once_both_load() -> None:
    # In a subprocess: the failure this guards against ends the whole process, pytest included.
    code = f"""
import threading
from tansaku.models.llama import LlamaEmbedder
from tansaku.models.llama_causal import LlamaGenerator
loaded = {{}}
gemma = threading.Thread(target=lambda: loaded.setdefault("generator", LlamaGenerator({str(gemma_gguf())!r})))
gemma.start()
loaded["embedder"] = LlamaEmbedder({str(minilm_gguf())!r})
gemma.join()
print(sorted(loaded), len(loaded["embedder"].embed(["ok"])[0]))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["['embedder',", "'generator']", "384"]
