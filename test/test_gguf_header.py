"""read_gguf_metadata: the header walk that runs before llama.cpp sees a file."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tansaku.models.gguf import read_gguf_metadata


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _gguf(vocabulary: list[str], after: bytes = b"") -> bytes:
    """A header with a string array (a vocabulary, as tokenizers store it) between two scalars."""
    kv = _string("general.architecture") + struct.pack("<I", 8) + _string("llama")
    kv += _string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, len(vocabulary))
    kv += b"".join(_string(token) for token in vocabulary)
    kv += _string("llama.context_length") + struct.pack("<II", 4, 4096)
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 3) + kv + after


def test_a_large_vocabulary_is_skipped_and_later_keys_are_read(tmp_path: Path) -> None:
    # More than one read block (1 MiB) of strings, so the walk crosses block edges mid-string.
    vocabulary = [f"token-{i}-" + "x" * (i % 37) for i in range(60_000)]
    path = tmp_path / "vocab.gguf"
    path.write_bytes(_gguf(vocabulary))
    assert path.stat().st_size > 2 << 20
    assert read_gguf_metadata(path) == {"general.architecture": "llama", "llama.context_length": 4096}


@pytest.mark.parametrize("cut", [12, 400, 5_000])
def test_a_vocabulary_cut_short_is_a_clear_error(tmp_path: Path, cut: int) -> None:
    data = _gguf([f"t{i}" for i in range(2_000)])
    path = tmp_path / "cut.gguf"
    path.write_bytes(data[: len(data) - cut])
    with pytest.raises(ValueError, match="not a valid GGUF model file"):
        read_gguf_metadata(path)


def test_a_string_longer_than_the_file_is_refused(tmp_path: Path) -> None:
    data = _gguf(["ok"])
    bad = data.replace(_string("ok"), struct.pack("<Q", 1 << 40) + b"ok")
    path = tmp_path / "long.gguf"
    path.write_bytes(bad)
    with pytest.raises(ValueError, match="runs past the end"):
        read_gguf_metadata(path)
