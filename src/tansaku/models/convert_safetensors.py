"""Reading a safetensors weights file into numpy arrays, for the converter.

The format is an 8-byte header length, a JSON header naming each tensor's dtype, shape and byte
range, then the raw data; it is parsed here rather than with the ``safetensors`` package to add
no dependency, and the data is memory-mapped rather than read. numpy is imported on first use,
so importing this module does not load it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["read_safetensors"]

# numpy's reading of each safetensors dtype; bfloat16 has none, so it is read as raw 16-bit words.
_SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4"}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the safetensors file at ``path`` by tensor name, memory-mapped (bfloat16 ones
    widened to float32). Raises FileNotFoundError when it is missing, ValueError when it is not a
    safetensors file this reader understands."""
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
