"""Writing a converted model as a GGUF file, atomically, for llama.cpp's BERT graph.

write_gguf writes the ModelSpec's hyperparameters, tokenizer and pooling as GGUF keys and then the
mapped tensors; write_atomically runs such a writer on a temporary file beside the target, syncs
and hashes it, and only then renames it into place, so a concurrent reader never loads half a
model. The ``gguf`` package is imported on first use, so importing this module does not load it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from tansaku.models.convert_spec import ModelSpec

__all__ = ["write_atomically", "write_gguf"]


def write_atomically(out_path: Path, write: Callable[[Path], None]) -> str:
    """Run ``write`` on a temporary file beside ``out_path``, then rename it there; returns its SHA-256.

    The rename makes the file appear whole, so a concurrent reader never loads half a model.
    """
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        write(tmp)
        sha256 = _fsync_and_hash(tmp)
        os.replace(tmp, out_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return sha256


def write_gguf(
    path: Path,
    spec: ModelSpec,
    tensors: list[tuple[str, np.ndarray]],
    dtype: str,
    name: str,
    *,
    rerank_template: str | None = None,
) -> None:
    """Write ``spec`` and ``tensors`` (mapped, in order) as a GGUF file named ``name`` at ``path``.

    ``dtype`` says what the weight matrices are stored as; a "rank" spec gets the tokenizer keys
    of a cross-encoder and ``rerank_template`` as its rerank chat template.
    """
    import gguf

    poolings = {"mean": gguf.PoolingType.MEAN, "cls": gguf.PoolingType.CLS, "rank": gguf.PoolingType.RANK}
    rank = spec.pooling == "rank"

    writer = gguf.GGUFWriter(path, "bert")
    try:
        writer.add_name(name)
        writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if dtype == "f16" else gguf.LlamaFileType.ALL_F32)
        writer.add_context_length(spec.context_length)
        writer.add_embedding_length(spec.dims)
        writer.add_feed_forward_length(spec.ffn)
        writer.add_block_count(spec.layers)
        writer.add_head_count(spec.heads)
        writer.add_layer_norm_eps(spec.layer_norm_eps)
        writer.add_causal_attention(False)
        writer.add_pooling_type(poolings[spec.pooling])
        if spec.max_seq_length:
            writer.add_uint32("sentence_transformers.max_seq_length", spec.max_seq_length)
        if spec.languages:
            writer.add_languages(list(spec.languages))

        writer.add_tokenizer_model("bert")
        writer.add_token_list(spec.tokens)
        writer.add_token_types(spec.token_types)
        writer.add_token_type_count(spec.token_type_count)
        # BERT input is [CLS] text [SEP]: llama.cpp adds the BOS id first and the SEP id last.
        writer.add_bos_token_id(spec.special_ids["cls"])
        writer.add_sep_token_id(spec.special_ids["sep"])
        writer.add_unk_token_id(spec.special_ids["unk"])
        writer.add_pad_token_id(spec.special_ids["pad"])
        writer.add_mask_token_id(spec.special_ids["mask"])
        writer.add_add_bos_token(True)
        if rank:
            # What llama.cpp's converter writes for a BERT cross-encoder (tokenizer.json's pair
            # template "[CLS] $A [SEP] $B [SEP]"): EOS is [SEP] and is added, no separate SEP, so
            # llama.cpp's rerank input is [CLS] query [SEP] document [SEP].
            writer.add_eos_token_id(spec.special_ids["sep"])
            writer.add_add_sep_token(False)
            writer.add_add_eos_token(True)
            if rerank_template is not None:
                writer.add_string("tokenizer.chat_template.rerank", rerank_template)
        else:
            writer.add_add_sep_token(True)
            writer.add_add_eos_token(False)
        writer.add_bool("tokenizer.ggml.normalizer.lowercase", spec.lowercase)
        writer.add_bool("tokenizer.ggml.normalizer.strip_accents", spec.strip_accents)

        for tensor_name, array in tensors:
            writer.add_tensor(tensor_name, array)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()


def _fsync_and_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb+") as f:
        os.fsync(f.fileno())
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
