"""Local models: the llama.cpp embedder and the BERT → GGUF converter.

Importing this package loads neither llama_cpp, numpy nor gguf: each is imported on first use,
so the keyword-only install can import it and learn what is missing from the error it raises.
"""

from __future__ import annotations

from tansaku.models.convert import (
    CONVERTER_VERSION,
    ConversionInfo,
    convert_sentence_transformer,
    find_minilm_package,
)
from tansaku.models.llama import LlamaEmbedder

__all__ = [
    "CONVERTER_VERSION",
    "ConversionInfo",
    "LlamaEmbedder",
    "convert_sentence_transformer",
    "find_minilm_package",
]
