"""The GGUF file header (metadata read without llama.cpp) and a model file's identity (its hash)."""

from __future__ import annotations

import functools
import hashlib
import os
import struct
from pathlib import Path
from typing import BinaryIO

__all__ = ["cached_gguf_metadata", "file_sha256", "read_gguf_metadata"]


_GGUF_MAGIC = b"GGUF"
_GGUF_STRING = 8
_GGUF_ARRAY = 9
_GGUF_SCALARS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}  # fmt: skip


def cached_gguf_metadata(path: str | Path) -> dict[str, object]:
    """``read_gguf_metadata``, once per file version per process: walking a header costs tens of
    ms (43 ms for Gemma's 262k-token vocabulary), more than a keyword query. The dict is shared:
    read it, do not change it. A missing file or a folder gives ``read_gguf_metadata``'s errors."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return read_gguf_metadata(Path(path))  # raises its clear error
    return _metadata_of_version(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _metadata_of_version(path: str, size: int, mtime_ns: int) -> dict[str, object]:
    return read_gguf_metadata(Path(path))


def read_gguf_metadata(path: Path) -> dict[str, object]:
    """The scalar and string key-values of a GGUF file's header, and its short string arrays
    (lists of at most 64 strings, such as ``general.languages``; other arrays are skipped).

    Read in plain Python so that the window, pooling and family are known before llama.cpp
    loads the weights, and so that a wrong file gets a clear error rather than a llama.cpp crash.
    """
    if not path.exists():
        raise FileNotFoundError(f"model file {path} does not exist")
    if path.is_dir():
        raise ValueError(f"{path} is a directory, not a GGUF model file")
    size = path.stat().st_size
    with path.open("rb") as f:
        if f.read(4) != _GGUF_MAGIC:
            raise ValueError(f"{path} is not a GGUF model file (it does not start with 'GGUF')")
        try:
            version, _tensors, kv_count = struct.unpack("<IQQ", _read(f, 20))
            if version not in (2, 3) or kv_count > 1_000_000:
                raise ValueError(f"unsupported GGUF version {version}")
            meta: dict[str, object] = {}
            for _ in range(kv_count):
                key = _read_string(f, size)
                (kind,) = struct.unpack("<I", _read(f, 4))
                if kind == _GGUF_ARRAY:
                    short = _short_string_array(f, size)
                    if short is not None:
                        meta[key] = short
                else:
                    meta[key] = _read_value(f, kind, size)
        except (ValueError, struct.error, UnicodeDecodeError) as exc:
            raise ValueError(f"{path} is not a valid GGUF model file: {exc}") from exc
    return meta


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ValueError("the file is truncated")
    return data


def _read_string(f: BinaryIO, size: int) -> str:
    (n,) = struct.unpack("<Q", _read(f, 8))
    if n > size:
        raise ValueError("a string runs past the end of the file")
    return _read(f, n).decode("utf-8")


def _read_value(f: BinaryIO, kind: int, size: int) -> object:
    if kind == _GGUF_STRING:
        return _read_string(f, size)
    fmt = _GGUF_SCALARS.get(kind)
    if fmt is None:
        raise ValueError(f"unknown value type {kind}")
    return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]


_LENGTH = struct.Struct("<Q")


def _skip_strings(f: BinaryIO, count: int, size: int) -> None:
    """Step over ``count`` length-prefixed strings, parsing blocks in memory: a vocabulary holds
    up to 262k of them, and a read and a seek per string cost three times as much."""
    start = f.tell()
    block = b""
    offset = 0  # in ``block``, which starts at file position ``start``
    for _ in range(count):
        if offset + 8 > len(block):
            start += offset
            f.seek(start)
            block, offset = f.read(1 << 20), 0
            if len(block) < 8:
                raise ValueError("the file is truncated")
        (n,) = _LENGTH.unpack_from(block, offset)
        if n > size:
            raise ValueError("a string runs past the end of the file")
        offset += 8 + n
    f.seek(start + offset)


# Arrays of at most this many strings are kept (``general.languages``, ``general.tags``);
# longer ones and arrays of numbers are vocabularies and tables, stepped over.
_SHORT_ARRAY = 64


def _short_string_array(f: BinaryIO, size: int) -> list[str] | None:
    """A short array of strings as a list; any other array is skipped (None)."""
    kind, count = struct.unpack("<IQ", _read(f, 12))
    if kind == _GGUF_STRING and count <= _SHORT_ARRAY:
        return [_read_string(f, size) for _ in range(count)]
    _skip_array_items(f, kind, count, size)
    return None


def _skip_array_items(f: BinaryIO, kind: int, count: int, size: int) -> None:
    if kind == _GGUF_STRING:
        _skip_strings(f, count, size)
    elif kind in _GGUF_SCALARS:
        f.seek(count * struct.calcsize(_GGUF_SCALARS[kind]), os.SEEK_CUR)
    else:
        raise ValueError(f"unsupported array type {kind}")
    if f.tell() > size:
        raise ValueError("an array runs past the end of the file")


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in blocks: the model identity that caches are keyed by."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
