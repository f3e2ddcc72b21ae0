"""Mapping an HF BERT checkpoint's tensors to the names, types and order of llama.cpp's BERT graph.

Each HF name (``encoder.layer.3.attention.self.query.weight``) becomes llama.cpp's
(``blk.3.attn_q.weight``); the pooler and masked-LM heads, which sentence embeddings never use, are
dropped; a checkpoint that lacks a tensor the configured layers need, or has one beyond them, is
refused. The weight matrices are stored as ``dtype`` (one of DTYPES); vectors and the small
token-type table stay f32. numpy is imported on first use, so importing this module does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from tansaku.models.convert_spec import ModelSpec

__all__ = ["DTYPES", "map_tensors"]

# The storage types the converter writes weight matrices in.
DTYPES = ("f16", "f32")
# HF names with no place in llama.cpp's BERT graph: the buffer of position ids and the
# next-sentence pooler / masked-LM heads, which sentence embeddings never use.
_IGNORED_PREFIXES = ("embeddings.position_ids", "pooler.", "cls.")

_EMBEDDING_NAMES = {
    "embeddings.word_embeddings": "token_embd",
    "embeddings.token_type_embeddings": "token_types",
    "embeddings.position_embeddings": "position_embd",
    "embeddings.LayerNorm": "token_embd_norm",
}
_LAYER_NAMES = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
# Old TF-converted checkpoints name LayerNorm parameters gamma/beta.
_PARAM_NAMES = {"weight": "weight", "bias": "bias", "gamma": "weight", "beta": "bias"}


def _gguf_name(hf_name: str) -> str | None:
    """llama.cpp's name for an HF BERT tensor; None for tensors it has no use for."""
    name = hf_name.removeprefix("bert.")
    if name.startswith(_IGNORED_PREFIXES):
        return None
    base, _, param = name.rpartition(".")
    if param not in _PARAM_NAMES:
        raise ValueError(f"unexpected tensor {hf_name!r}")
    param = _PARAM_NAMES[param]
    if base in _EMBEDDING_NAMES:
        return f"{_EMBEDDING_NAMES[base]}.{param}"
    parts = base.split(".", 3)
    if (
        len(parts) == 4
        and parts[:2] == ["encoder", "layer"]
        and parts[2].isdigit()
        and parts[3] in _LAYER_NAMES
    ):
        return f"blk.{int(parts[2])}.{_LAYER_NAMES[parts[3]]}.{param}"
    raise ValueError(f"unexpected tensor {hf_name!r}: not part of a BERT encoder")


def map_tensors(arrays: dict[str, np.ndarray], spec: ModelSpec, dtype: str) -> list[tuple[str, np.ndarray]]:
    """``arrays`` (HF names) as (llama.cpp name, contiguous array) pairs in the order they are
    written; raises ValueError when they do not make up the BERT encoder ``spec`` describes."""
    import numpy as np

    matrix_type = np.float16 if dtype == "f16" else np.float32
    mapped: dict[str, np.ndarray] = {}
    for hf_name in sorted(arrays):
        gguf_name = _gguf_name(hf_name)
        if gguf_name is None:
            continue
        if gguf_name in mapped:
            raise ValueError(f"two tensors map to {gguf_name}")
        array = arrays[hf_name]
        # Vectors and the tiny token-type table stay f32: llama.cpp adds them to f32 activations.
        keep_f32 = array.ndim == 1 or gguf_name.startswith("token_types.")
        mapped[gguf_name] = np.ascontiguousarray(array, dtype=np.float32 if keep_f32 else matrix_type)

    expected = {f"{n}.{p}" for n in _EMBEDDING_NAMES.values() for p in ("weight", "bias")}
    expected -= {"token_embd.bias", "token_types.bias", "position_embd.bias"}
    expected |= {
        f"blk.{i}.{n}.{p}"
        for i in range(spec.layers)
        for n in _LAYER_NAMES.values()
        for p in ("weight", "bias")
    }
    if missing := sorted(expected - mapped.keys()):
        raise ValueError(f"model.safetensors lacks {len(missing)} tensors, e.g. {missing[0]}")
    if extra := sorted(mapped.keys() - expected):
        raise ValueError(f"model.safetensors has tensors beyond the configured layers, e.g. {extra[0]}")
    if mapped["token_embd.weight"].shape != (len(spec.tokens), spec.dims):
        raise ValueError("the word embedding table does not match vocab.txt and hidden_size")
    if mapped["position_embd.weight"].shape[0] != spec.context_length:
        raise ValueError("the position embedding table does not match max_position_embeddings")

    def order(name: str) -> tuple[int, str]:
        # Embeddings first, then blocks in numeric order: a stable, readable layout.
        if name.startswith("blk."):
            return int(name.split(".")[1]) + 1, name
        return 0, name

    return [(name, mapped[name]) for name in sorted(mapped, key=order)]
