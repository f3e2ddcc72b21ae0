"""What the CPU can run against what the installed llama.cpp build was compiled for.

A build made with ``-march=native`` (llama-cpp-python's default) on a CPU with AVX-512 or AMX uses
those instructions unconditionally, and the first decode on a CPU without them dies with
"Illegal instruction": a crash no error handler can catch. This compares the two before anything
loads a model. Importing llama_cpp loads its shared library but no weights.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

PORTABLE_REBUILD = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" pip install --no-cache-dir --force-reinstall'
    " --no-deps llama-cpp-python"
)

# llama_print_system_info() names -> /proc/cpuinfo flags that must all be present.
FEATURE_FLAGS: dict[str, tuple[str, ...]] = {
    "AVX": ("avx",),
    "AVX2": ("avx2",),
    "F16C": ("f16c",),
    "FMA": ("fma",),
    "BMI2": ("bmi2",),
    "AVX512": ("avx512f",),
    "AVX512_VBMI": ("avx512vbmi",),
    "AVX512_VNNI": ("avx512_vnni",),
    "AVX512_BF16": ("avx512_bf16",),
    "AVX_VNNI": ("avx_vnni",),
    "AMX_INT8": ("amx_int8", "amx_tile"),
    "AMX_BF16": ("amx_bf16", "amx_tile"),
}
# Instructions a build needs only where the machine that built it had them: a build that uses
# them is a native one and will not run on an older CPU.
MACHINE_SPECIFIC = ("AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_INT8", "AMX_BF16")


@dataclass(frozen=True)
class BuildInfo:
    features: frozenset[str]  # CPU features the build uses ("AVX2", "AMX_INT8", ...)
    text: str  # llama_print_system_info() as printed


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The CPU's feature flags (Linux), or None where they cannot be read."""
    try:
        text = cpuinfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):  # x86, ARM
            return frozenset(value.split())
    return None


def parse_system_info(text: str) -> frozenset[str]:
    """The features a build uses, from ``CPU : SSE3 = 1 | AVX2 = 1 | ...``."""
    return frozenset(name for name, on in re.findall(r"([A-Z0-9_]+) = (\d+)", text) if on != "0")


def llama_build() -> BuildInfo:
    """The installed build's features; ImportError when llama-cpp-python is not installed."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info()
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return BuildInfo(parse_system_info(text), text.strip())


def unsupported(build: frozenset[str], flags: frozenset[str]) -> list[str]:
    """The build's features this CPU lacks (each would be an "Illegal instruction")."""
    return sorted(f for f in build if f in FEATURE_FLAGS and not all(x in flags for x in FEATURE_FLAGS[f]))


def machine_specific(build: frozenset[str]) -> list[str]:
    return sorted(f for f in build if f in MACHINE_SPECIFIC)


def available_memory() -> int | None:
    """Bytes of memory available to start new work (Linux ``MemAvailable``), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@functools.cache
def gpu_offload() -> bool:
    """Whether the installed llama.cpp can offload layers to a GPU (False without llama-cpp-python).
    Asked once a process: `query` asks it for every query, and the answer cannot change."""
    try:
        import llama_cpp
    except ImportError:
        return False
    try:
        return bool(llama_cpp.llama_supports_gpu_offload())
    except (AttributeError, OSError):
        return False
