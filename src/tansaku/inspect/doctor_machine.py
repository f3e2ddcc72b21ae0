"""`tansaku doctor`'s checks of the vector extension, the model files and the machine."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TansakuError
from ..store import db
from .checks import FAIL, OK, WARN, check
from .checks import shell_quote as _q

if TYPE_CHECKING:
    from ..store.backend import Backend
    from ..types import DoctorCheck

MIN_FREE_DISK = 256 * 1024 * 1024  # an update rewrites pages and the WAL grows meanwhile


def model_checks(config_path: Path, index: Backend, checks: list[DoctorCheck], *, deep: bool) -> None:
    from ..models import registry

    if index.kind == "sqlite":  # a database's vector extension is pgvector, checked with the server
        checks.append(_vec_check())
    try:
        refs = registry.resolve_all(config_path)
    except TansakuError as exc:
        checks.append(check("models", FAIL, exc.message, exc.hint))
        return
    for ref in refs:
        if ref.endpoint is not None:
            from .doctor_endpoint import endpoint_check

            checks.append(endpoint_check(ref, config_path, index))
        else:
            checks.append(_model_file_check(ref))
    embed = next(r for r in refs if r.role == "embed")
    if embed.endpoint is None:  # an endpoint's dimensions are part of its check
        checks.extend(_dimension_checks(embed, index))
    checks.extend(_unusable_vector_checks(index))
    checks.append(_llama_import_check())
    if deep:
        for ref in refs:
            if ref.endpoint is None and ref.present and registry.is_gguf(ref.local_path):
                checks.append(_deep_check(ref))


def _vec_check() -> DoctorCheck:
    from ..store import health, vectors

    conn = db.sqlite3.connect(":memory:")
    try:
        vectors.load_extension(conn)
        return check("vectors.extension", OK, f"sqlite-vec {health.vec_version(conn)} loads")
    except (TansakuError, db.DatabaseError, AttributeError, OSError) as exc:
        return check(
            "vectors.extension",
            FAIL,
            f"sqlite-vec does not load: {getattr(exc, 'message', None) or exc}",
            "pip install --force-reinstall sqlite-vec",
        )
    finally:
        conn.close()


def _get_fix(ref: Any) -> str:
    from .model_files import fix_command

    return fix_command(ref)


def _model_file_check(ref: Any) -> DoctorCheck:
    from ..models import registry

    label, path = f"model.{ref.role}", ref.local_path
    where = f"{ref.reference} [{ref.source}]"
    if not ref.present:
        # Keyword search works without any model; `query` skips a missing model's step.
        return check(label, WARN, f"{ref.role}: {where} is not on this machine ({path})", _get_fix(ref))
    if not os.access(path, os.R_OK):
        return check(label, FAIL, f"{ref.role}: {path} is not readable", f"chmod u+r {_q(path)}")
    if not registry.is_gguf(path):
        return check(
            label,
            FAIL,
            f"{ref.role}: {path} is not a GGUF file (no 'GGUF' header)",
            f"tansaku models pull {ref.role}" if ref.hf else f"tansaku models add {ref.role} PATH.gguf",
        )
    dims = registry.embedding_length(path) if ref.role == "embed" else None
    shown = f", {dims} dims" if dims else ""
    return check(label, OK, f"{ref.role}: {path} ({ref.size} bytes{shown}) from {where}")


def _dimension_checks(embed: Any, index: Backend) -> list[DoctorCheck]:
    from ..models import registry
    from ..store.backend import health

    try:
        if not index.exists():
            return []
        with index.reading() as conn:
            stored = [s for s in health.stored_vectors(conn) if s.vectors]
    except TansakuError:
        return []  # the index check reported it
    if not stored:
        return []
    if not embed.present or not registry.is_gguf(embed.local_path):
        return []  # the model file check reported it
    dims = registry.embedding_length(embed.local_path)
    mine = [s for s in stored if s.model_path == str(embed.local_path)]
    if dims is None:
        return [check("vectors.dims", WARN, f"cannot read the dimensions of {embed.local_path}")]
    fix = "tansaku embed -f"
    for s in mine:
        if s.dims != dims:
            detail = f"the index holds {s.dims}-dim vectors of {s.model_path}, which now has {dims} dims"
            return [check("vectors.dims", FAIL, detail, fix)]
    if mine:
        return [check("vectors.dims", OK, f"{sum(s.vectors for s in mine)} vectors of {dims} dims")]
    other = stored[0]
    if other.dims != dims:
        detail = (
            f"the index holds {other.dims}-dim vectors of {other.model_path}; "
            f"the embed model {embed.local_path} makes {dims} dims"
        )
        return [check("vectors.dims", FAIL, detail, fix)]
    detail = f"the vectors were made by another model ({other.model_path}): vsearch reports STALE_VECTORS"
    return [check("vectors.dims", WARN, detail, fix)]


def _unusable_vector_checks(index: Backend) -> list[DoctorCheck]:
    """Vectors no search can score (all zeros, NaN or infinite values), which an endpoint could
    store before its answers were checked: search leaves them out, so their chunks are found by
    keywords only until embedded again. At most UNUSABLE_SCAN_MAX of each model's newest vectors
    are read (about a second per million)."""
    from ..store.backend import db as backend_db
    from ..store.backend import vectors as vec

    try:
        if not index.exists():
            return []
        with index.reading() as conn:
            if not backend_db.has_table(conn, "embed_models"):
                return []
            vec.load_extension(conn)
            found = [
                (record, vec.unusable_vectors(conn, record.dims, record.fingerprint))
                for record in vec.models(conn)
            ]
    except (TansakuError, db.DatabaseError) as exc:
        detail = getattr(exc, "message", None) or str(exc)
        return [check("vectors.finite", WARN, f"cannot read the vectors to check them: {detail}")]
    found = [(record, counted) for record, counted in found if counted.total]
    if not found:
        return []
    bad = [(record, counted) for record, counted in found if counted.count]
    checked = sum(counted.checked for _, counted in found)
    total = sum(counted.total for _, counted in found)
    scope = f"the newest {checked:,} of {total:,}" if checked < total else f"all {total:,}"
    if not bad:
        return [check("vectors.finite", OK, f"{scope} vectors have a direction (finite, not all zeros)")]
    listed = "; ".join(f"{counted.count:,} of {record.model_path}'s" for record, counted in bad)
    detail = (
        f"{listed} vectors are all zeros or hold NaN or infinite values (of {scope} checked): search"
        " leaves them out, so their chunks are found by keywords only"
    )
    return [check("vectors.finite", WARN, detail, "tansaku embed -f")]


def _llama_import_check() -> DoctorCheck:
    from ..models.system import PORTABLE_REBUILD

    try:
        import llama_cpp
    except ImportError:
        return check(
            "models.llama_cpp",
            WARN,
            "llama-cpp-python is not installed: keyword search only",
            f"{PORTABLE_REBUILD} (or pip install 'tansaku[models]' with the same CMAKE_ARGS)",
        )
    return check("models.llama_cpp", OK, f"llama-cpp-python {getattr(llama_cpp, '__version__', '?')} imports")


def _deep_check(ref: Any) -> DoctorCheck:
    """Load the model and ask for one token (one embedding, one score), timed."""
    label = f"model.{ref.role}.load"
    started = time.perf_counter()
    try:
        if ref.role == "embed":
            from ..models.embedding import load_embedder

            load_embedder(ref.local_path, threads=1).embed(["ok"])
        elif ref.role == "generate":
            from ..models.llama_causal import LlamaGenerator

            LlamaGenerator(str(ref.local_path)).generate("ok", max_tokens=1)
        else:
            from ..models.cross_encoder import open_reranker

            open_reranker(str(ref.local_path)).score("ok", "ok")
    except Exception as exc:  # any failure to load is the finding, whatever its type
        return check(label, FAIL, f"{ref.role}: {ref.local_path} does not load: {exc}", _get_fix(ref))
    took = time.perf_counter() - started
    return check(label, OK, f"{ref.role}: loaded and answered in {took:.2f} s")


# --- device ---------------------------------------------------------------------------------


def device_checks(config_path: Path, index: Backend, checks: list[DoctorCheck]) -> None:
    """The CPU, threads, memory and, for a SQLite file, the disk it is on (a database's disk is
    the server's, beyond this machine's reach)."""
    from ..models.threads import usable_cpus
    from .settings import thread_setting

    checks.append(_cpu_check())
    cpus = usable_cpus()
    threads = thread_setting(config_path)
    detail = f"{cpus} usable CPUs; threads {threads.value} [{threads.source}]"
    if threads.value.isdigit() and int(threads.value) > cpus:
        fix = (
            f"unset {threads.env}" if threads.source == "env" else f"set [models] threads = {cpus} or 'auto'"
        )
        checks.append(
            check("device.cores", WARN, detail + ": more threads than CPUs wait for each other", fix)
        )
    else:
        checks.append(check("device.cores", OK, detail))
    checks.append(_memory_check(config_path))
    path = getattr(index, "path", None)
    if index.kind == "sqlite" and path is not None:
        checks.append(_disk_check(path))


def _cpu_check() -> DoctorCheck:
    from ..models import system

    flags = system.cpu_flags()
    wanted = ("avx2", "avx512f", "amx_tile")
    has = (
        "unknown CPU flags"
        if flags is None
        else "CPU: " + ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in wanted)
    )
    try:
        build = system.llama_build()
    except ImportError:
        return check("device.cpu", OK, f"{has}; llama-cpp-python not installed")
    except Exception as exc:  # a broken native library is exactly what this check is for
        return check(
            "device.cpu", FAIL, f"{has}; the llama.cpp library does not load: {exc}", system.PORTABLE_REBUILD
        )
    used = ", ".join(sorted(build.features & set(system.FEATURE_FLAGS))) or "none"
    if flags is not None:
        missing = system.unsupported(build.features, flags)
        if missing:
            detail = (
                f"{has}; the llama.cpp build uses {', '.join(missing)}, which this CPU lacks: the first"
                " decode would crash with 'Illegal instruction' (a native build from another machine)"
            )
            return check("device.cpu", FAIL, detail, system.PORTABLE_REBUILD)
    native = system.machine_specific(build.features)
    if native:
        detail = (
            f"{has}; the llama.cpp build uses {', '.join(native)}: it runs here but crashes with"
            " 'Illegal instruction' on CPUs without them (do not copy this environment elsewhere)"
        )
        return check("device.cpu", WARN, detail, system.PORTABLE_REBUILD)
    return check("device.cpu", OK, f"{has}; the llama.cpp build uses {used}")


def _memory_check(config_path: Path) -> DoctorCheck:
    from ..models import registry
    from ..models.system import available_memory

    available = available_memory()
    try:
        needed = sum(r.size or 0 for r in registry.resolve_all(config_path))
    except TansakuError:
        needed = 0
    if available is None:
        return check("device.memory", OK, f"models need about {needed // 2**20} MB; free memory unknown")
    detail = f"{available // 2**20} MB available; the present models take {needed // 2**20} MB"
    if needed > available:
        return check(
            "device.memory",
            WARN,
            detail + ": loading them all would swap",
            "close other programs, or use smaller models (`tansaku models add ROLE PATH.gguf`)",
        )
    return check("device.memory", OK, detail)


def _disk_check(index_path: Path) -> DoctorCheck:
    folder = index_path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return check("device.disk", WARN, f"cannot read the free space of {folder}")
    index_size = index_path.stat().st_size if index_path.exists() else 0
    detail = f"{free // 2**20} MB free beside the index ({folder})"
    if free < max(MIN_FREE_DISK, index_size):
        return check(
            "device.disk",
            WARN,
            detail + ": an update may run out of space",
            f"free space in {_q(folder)}, or move the index with TANSAKU_INDEX_PATH",
        )
    return check("device.disk", OK, detail)
