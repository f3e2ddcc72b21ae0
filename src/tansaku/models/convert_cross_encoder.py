"""A cross-encoder GGUF built from the MiniLM embedding model, for tests only.

No registry package ships a cross-encoder, so the reranking tests use MiniLM's encoder with a
generated classification head: a linear probe fitted to tell passages that share a query's words
from passages that share none, on the [CLS] states of _PROBE_TRIPLES, computed here by a numpy
forward pass of llama.cpp's BERT graph. It uses the converter's reading, mapping and writing; no
code outside the tests calls it. numpy and gguf are imported on first use.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from tansaku.models.convert import ConversionInfo
from tansaku.models.convert_safetensors import read_safetensors
from tansaku.models.convert_spec import PHANTOM_SPACE, ModelSpec, read_model_spec
from tansaku.models.convert_tensors import DTYPES, map_tensors
from tansaku.models.convert_write import write_atomically, write_gguf

if TYPE_CHECKING:
    import numpy as np

__all__ = ["convert_cross_encoder_for_tests"]

# Each query with a passage that shares its words and one that shares none. The test
# cross-encoder's head is fitted to tell these apart; tests judge it on other pairs. Plain ASCII
# and lower-case words, so the converter's simple WordPiece split agrees with llama.cpp's.
_PROBE_TRIPLES = (
    ("how to repair a bicycle puncture", "To repair a bicycle puncture, remove the tube and patch the hole.",
     "Quarterly revenue grew by twelve percent this year."),
    ("backup restore files", "Restore files from the backup with the restore command.",
     "The cat sits on the mat in the sun."),
    ("python list sorting", "Sorting a list in Python uses the sorted function or list.sort.",
     "Mount Everest is the highest mountain on Earth."),
    ("chocolate cake recipe", "This chocolate cake recipe needs flour, cocoa and eggs.",
     "The train leaves the station at noon."),
    ("learn guitar chords", "Beginners learn guitar chords such as G, C and D.",
     "Tax returns are due in April."),
    ("solar panel installation", "Solar panel installation starts with a roof survey.",
     "The novel tells the story of a young detective."),
    ("dog training tips", "Dog training tips: reward good behaviour with treats.",
     "The stock market closed lower on Friday."),
    ("compress images", "You can compress images with a lossy or lossless codec.",
     "Rain is expected over the weekend in the north."),
    ("fix a leaking tap", "To fix a leaking tap, replace the washer inside the tap.",
     "The orchestra played a symphony by Mahler."),
    ("linux file permissions", "Linux file permissions are set with chmod for user, group and others.",
     "Bananas are rich in potassium."),
    ("coffee brewing methods", "Coffee brewing methods include espresso, pour-over and French press.",
     "The election results will be announced tomorrow."),
    ("how do vaccines work", "Vaccines work by training the immune system to recognise a virus.",
     "The football team won the cup final."),
)  # fmt: skip
# The head's logits for the average related and unrelated probe pair: +2 and -2 (scores 0.88, 0.12).
_PROBE_LOGIT = 2.0


def convert_cross_encoder_for_tests(
    src_dir: Path, out_path: Path, *, dtype: str = "f32", rerank_template: str | None = None
) -> ConversionInfo:
    """Write ``src_dir`` (a BERT sentence-transformers folder) as a rank-pooling GGUF cross-encoder.

    For tests only: no registry package ships a cross-encoder, so this gives the embedding
    model's encoder the classification head llama.cpp's BERT rank pooling reads (``cls.weight``,
    ``cls.bias``, ``cls.output.weight``, ``cls.output.bias``) and ``bert.pooling_type = 4``.
    The head is the identity, tanh, then a linear probe fitted by difference of means to the
    [CLS] states of ``_PROBE_TRIPLES``, computed here by a numpy forward pass of the same
    weights. So a passage that shares the query's words tends to score above one that shares
    none; it is no relevance model beyond that. ``rerank_template`` is written as
    ``tokenizer.chat_template.rerank``. f32 by default: with f16 weights llama.cpp re-rounds
    activations to f16, which made packed and one-by-one scores differ by ~2e-4 rather than
    ~4e-5. Deterministic for one machine's numpy; written atomically.
    """
    import numpy as np

    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    src_dir = Path(src_dir)
    out_path = Path(out_path)
    # The sentence-transformers window belongs to embedding use; llama.cpp's own converter writes
    # none for a cross-encoder.
    spec = replace(read_model_spec(src_dir), pooling="rank", max_seq_length=None)
    arrays = read_safetensors(src_dir / "model.safetensors")
    weights = dict(map_tensors(arrays, spec, "f32"))
    direction, bias = _probe_head(weights, spec)
    head = [
        # Identity before the tanh: the probe is fitted to tanh of the [CLS] state itself.
        ("cls.weight", np.eye(spec.dims, dtype=np.float32)),
        ("cls.bias", np.zeros(spec.dims, dtype=np.float32)),
        ("cls.output.weight", direction.reshape(1, spec.dims).astype(np.float32)),
        ("cls.output.bias", np.array([bias], dtype=np.float32)),
    ]
    tensors = map_tensors(arrays, spec, dtype) + head
    sha256 = write_atomically(
        out_path,
        lambda tmp: write_gguf(
            tmp, spec, tensors, dtype, "tansaku-test-cross-encoder", rerank_template=rerank_template
        ),
    )
    return ConversionInfo.written(out_path, spec, dtype, sha256, pooling="rank", max_seq_length=None)


def _probe_head(weights: dict[str, np.ndarray], spec: ModelSpec) -> tuple[np.ndarray, float]:
    """(cls.output weight, bias): the difference of the mean tanh([CLS]) of related and unrelated
    probe pairs, scaled and shifted so those means land at +-``_PROBE_LOGIT``."""
    import numpy as np

    index = {token: i for i, token in enumerate(spec.tokens)}
    cls, sep = spec.special_ids["cls"], spec.special_ids["sep"]

    def pair(query: str, document: str) -> list[int]:
        return [cls, *_wordpiece(query, index, spec), sep, *_wordpiece(document, index, spec), sep]

    pairs = [pair(q, yes) for q, yes, _ in _PROBE_TRIPLES] + [pair(q, no) for q, _, no in _PROBE_TRIPLES]
    features = np.tanh(_bert_cls_states(weights, spec, pairs))
    related = features[: len(_PROBE_TRIPLES)].mean(axis=0)
    unrelated = features[len(_PROBE_TRIPLES) :].mean(axis=0)
    difference = related - unrelated
    direction = (2 * _PROBE_LOGIT) * difference / float(difference @ difference)
    bias = -float(direction @ (related + unrelated)) / 2
    return direction, bias


def _wordpiece(text: str, index: dict[str, int], spec: ModelSpec) -> list[int]:
    """BERT's lower-cased WordPiece split, enough for the ASCII probe texts (no accents, no CJK)."""
    ids: list[int] = []
    for word in re.findall(r"\w+|[^\w\s]", text.lower()):
        pieces: list[int] = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                # Vocabulary entries are in llama.cpp's form: word-initial pieces carry the prefix.
                piece = word[start:end] if start else PHANTOM_SPACE + word[start:end]
                if piece in index:
                    pieces.append(index[piece])
                    start = end
                    break
            else:
                pieces = [spec.special_ids["unk"]]
                break
        ids.extend(pieces)
    return ids


def _bert_cls_states(
    weights: dict[str, np.ndarray], spec: ModelSpec, sequences: list[list[int]]
) -> np.ndarray:
    """The final hidden state of each sequence's first token, by the same graph as llama.cpp's BERT.

    The sequences' tokens are stacked so that each linear layer is one matrix product (one BLAS
    call per layer rather than per sequence: on a busy machine each call is what costs); only
    attention is per sequence.
    """
    import numpy as np

    def norm(x: np.ndarray, name: str) -> np.ndarray:
        centred = x - x.mean(-1, keepdims=True)
        scaled = centred / np.sqrt((centred**2).mean(-1, keepdims=True) + spec.layer_norm_eps)
        return scaled * weights[f"{name}.weight"] + weights[f"{name}.bias"]

    def linear(x: np.ndarray, name: str) -> np.ndarray:
        return x @ weights[f"{name}.weight"].T + weights[f"{name}.bias"]

    head_dim = spec.dims // spec.heads
    starts = np.cumsum([0, *(len(ids) for ids in sequences)])
    ids = [token for sequence in sequences for token in sequence]
    positions = np.concatenate([np.arange(len(sequence)) for sequence in sequences])
    # llama.cpp gives every token type 0, the document half of a pair too.
    x = weights["token_embd.weight"][ids] + weights["position_embd.weight"][positions]
    x = norm(x + weights["token_types.weight"][0], "token_embd_norm")
    for i in range(spec.layers):
        q, k, v = (linear(x, f"blk.{i}.{part}") for part in ("attn_q", "attn_k", "attn_v"))
        context = np.empty_like(x)
        for begin, end in itertools.pairwise(starts.tolist()):
            qs, ks, vs = (
                t[begin:end].reshape(end - begin, spec.heads, head_dim).transpose(1, 0, 2) for t in (q, k, v)
            )
            scores = qs @ ks.transpose(0, 2, 1) / np.sqrt(head_dim)
            attention = np.exp(scores - scores.max(-1, keepdims=True))
            attention /= attention.sum(-1, keepdims=True)
            context[begin:end] = (attention @ vs).transpose(1, 0, 2).reshape(end - begin, spec.dims)
        x = norm(x + linear(context, f"blk.{i}.attn_output"), f"blk.{i}.attn_output_norm")
        up = linear(x, f"blk.{i}.ffn_up")
        # ggml's GELU is the tanh approximation.
        up = 0.5 * up * (1 + np.tanh(np.sqrt(2 / np.pi) * (up + 0.044715 * up**3)))
        x = norm(x + linear(up, f"blk.{i}.ffn_down"), f"blk.{i}.layer_output_norm")
    return x[starts[:-1]]
