"""Reading a BERT sentence-transformers folder's settings into the ModelSpec the converter writes.

config.json, the tokenizer's files, the sentence-transformers modules and pooling, and the model
card's languages are read and checked here, so an unsupported folder is refused before anything
is written. The vocabulary is turned into llama.cpp's form: llama.cpp's BERT tokenizer is not HF's
WordPiece verbatim, it prefixes every word with ``▁`` and then matches greedily, so word-initial
entries must carry the ``▁`` prefix and ``##`` continuations must lose their ``##``. The weights
themselves are read by convert_safetensors.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tansaku.models.convert_card import card_languages

__all__ = ["PHANTOM_SPACE", "ModelSpec", "read_model_spec", "read_vocab"]

# What llama.cpp's BERT tokenizer puts before every word.
PHANTOM_SPACE = "\u2581"
# sentence-transformers module types that leave the transformer's pooled output as llama.cpp
# computes it; anything else (Dense, LayerNorm, ...) would change the vectors.
_SUPPORTED_MODULES = frozenset(
    {
        "sentence_transformers.models.Transformer",
        "sentence_transformers.models.Pooling",
        "sentence_transformers.models.Normalize",
    }
)


@dataclass(frozen=True)
class ModelSpec:
    """Everything the GGUF file says about a model besides its weights, read from its folder.

    ``tokens`` are in llama.cpp's form (see the module's docstring), ``pooling`` is "mean", "cls"
    or (for the test cross-encoder) "rank"."""

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


def read_model_spec(src_dir: Path) -> ModelSpec:
    """The spec of the BERT sentence-transformers folder ``src_dir``.

    Raises ValueError for a folder that is not a supported BERT model and FileNotFoundError when
    a required file is missing.
    """
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

    tokens, token_types, special_ids = read_vocab(src_dir, _config_int(config, "vocab_size"))
    tok_config = _read_json(src_dir / "tokenizer_config.json")
    # BertTokenizer's strip_accents=None means "follow lowercase", as llama.cpp's default does.
    lowercase = bool(tok_config.get("do_lower_case", True))
    strip_accents = tok_config.get("strip_accents")
    st_config_path = src_dir / "sentence_bert_config.json"
    max_seq = _read_json(st_config_path).get("max_seq_length") if st_config_path.is_file() else None
    dims = _config_int(config, "hidden_size")
    return ModelSpec(
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
        languages=card_languages(src_dir / "README.md"),
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


def read_vocab(src_dir: Path, vocab_size: int) -> tuple[list[str], list[int], dict[str, int]]:
    """(tokens in llama.cpp's form, their GGUF token types, the id of each special token by role:
    unk, cls, sep, pad, mask) of the folder's vocab.txt."""
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
            tokens.append(PHANTOM_SPACE + tok)
            types.append(int(TokenType.NORMAL))
    if len(set(tokens)) != len(tokens):
        # Two entries mapping to one string would make llama.cpp's lookup pick one silently.
        raise ValueError("vocab.txt has entries that collide once written in llama.cpp's form")
    return tokens, types, special_ids
