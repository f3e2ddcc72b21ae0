"""`tansaku doctor`: is the config, the index, the models and the machine fit to search with?

Read-only: the index is opened ``mode=ro``, nothing is written, and no model weights load
unless ``deep``. Each check is a ``DoctorCheck`` (ok / warn / fail) with the command that fixes
it; the caller decides the exit code (any fail). The model and device checks are in
``doctor_machine.py``.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import IndexCorrupt, IndexMissing, IndexSchemaMismatch, TansakuError
from ..store import db
from .checks import FAIL, OK, WARN, check
from .checks import shell_quote as _q

if TYPE_CHECKING:
    from ..config.settings import Config
    from ..types import DoctorCheck

KNOWN_KEYS: dict[str, frozenset[str]] = {
    "": frozenset({"settings", "collections", "contexts", "models", "index"}),
    "settings": frozenset({"max_file_bytes"}),
    "index": frozenset({"url"}),
    "models": frozenset({"embed", "generate", "rerank", "threads", "embed_prompt"}),
    "collection": frozenset(
        {"path", "masks", "ignore", "update", "include", "chunk_strategy", "type", "redact"}
    ),
}
WAL_WARN_BYTES = 64 * 1024 * 1024  # a WAL this big means checkpoints keep failing (a reader never lets go)


def run_doctor(config_path: Path, index_path: Path, *, deep: bool = False) -> list[DoctorCheck]:
    from ..store.backend import SqliteBackend
    from . import doctor_machine

    checks: list[DoctorCheck] = []
    config = config_checks(config_path, checks)
    index_checks(config, config_path, index_path, checks)
    doctor_machine.model_checks(config_path, SqliteBackend(index_path), checks, deep=deep)
    doctor_machine.device_checks(config_path, SqliteBackend(index_path), checks)
    return checks


# --- config ---------------------------------------------------------------------------------


def config_checks(
    config_path: Path, checks: list[DoctorCheck], listed: Config | None = None
) -> Config | None:
    """The config's checks; the parsed config, or None when it cannot be used. ``listed``: the
    collections and contexts of an index that keeps its own list (a PostgreSQL database's), whose
    folders are checked instead of the file's."""
    import tomllib

    from ..config import settings

    if not config_path.exists():
        if listed is not None and listed.collections:
            own = f"the index lists its own ({len(listed.collections)} collections)"
            checks.append(check("config", OK, f"no config file at {config_path}; {own}"))
            return _listed_checks(listed, checks)
        checks.append(check("config", WARN, f"no config file at {config_path}: nothing to search yet", _ADD))
        return settings.Config()
    try:
        config = settings.load(config_path)
        raw = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except TansakuError as exc:
        checks.append(check("config", FAIL, exc.message, f"edit {_q(config_path)}: {exc.hint or 'fix it'}"))
        return None
    checks.append(check("config", OK, f"{config_path} parses ({len(config.collections)} collections)"))
    if listed is not None:
        config = listed
    unknown = _unknown_keys(raw)
    if unknown:
        checks.append(
            check(
                "config.keys",
                WARN,
                f"unknown keys (ignored; a misspelling?): {', '.join(unknown)}",
                f"remove or correct them in {_q(config_path)}",
            )
        )
    _listed_checks(config, checks)
    checks.extend(_setting_checks(config_path))
    return config


def _listed_checks(config: Config, checks: list[DoctorCheck]) -> Config:
    """Each collection's folder, masks and hook, and the contexts' collections."""
    for collection in config.collection_list():
        checks.extend(_collection_checks(collection))
    checks.extend(_context_checks(config))
    return config


_ADD = "tansaku collection add PATH"


def _unknown_keys(raw: dict[str, Any]) -> list[str]:
    unknown = [key for key in raw if key not in KNOWN_KEYS[""]]
    for table in ("settings", "models", "index"):
        value = raw.get(table)
        if isinstance(value, dict):
            unknown += [f"[{table}] {key}" for key in value if key not in KNOWN_KEYS[table]]
    collections = raw.get("collections")
    if isinstance(collections, dict):
        for name, entry in collections.items():
            if isinstance(entry, dict):
                unknown += [f"[collections.{name}] {k}" for k in entry if k not in KNOWN_KEYS["collection"]]
    return unknown


def _collection_checks(collection: Any) -> list[DoctorCheck]:
    from ..config.masks import MaskMatcher, expand_masks

    name, root = collection.name, Path(collection.path)
    label = f"config.collection.{name}"
    out = []
    if not root.is_dir():
        out.append(
            check(
                label,
                FAIL,
                f"{name}: folder {root} does not exist",
                f"mkdir -p {_q(root)}  (or: tansaku collection remove {name})",
            )
        )
    elif not os.access(root, os.R_OK | os.X_OK):
        out.append(check(label, FAIL, f"{name}: folder {root} is not readable", f"chmod u+rx {_q(root)}"))
    else:
        out.append(check(label, OK, f"{name}: {root}"))
    for key, values in (("masks", collection.masks), ("ignore", collection.ignore)):
        try:
            if values:
                MaskMatcher(expand_masks(values))
        except TansakuError as exc:
            out.append(
                check(
                    f"{label}.{key}", FAIL, f"{name}: {exc.message}", f"correct {key} of {name} in the config"
                )
            )
    if collection.update:
        try:
            words = shlex.split(collection.update)
        except ValueError:
            words = []
        program = words[0] if words else ""
        # A shell builtin or a path relative to the collection folder is run by bash -c there.
        found = program and (
            shutil.which(program) or _is_builtin(program) or os.access(root / program, os.X_OK)
        )
        if not found:
            out.append(
                check(
                    f"{label}.hook",
                    WARN,
                    f"{name}: the update hook {collection.update!r} names no executable"
                    f" ({program or 'empty'})",
                    f"tansaku collection set-update {name} 'COMMAND'  (no COMMAND clears it)",
                )
            )
    return out


_BUILTINS = frozenset(
    {"cd", "true", "false", "echo", "test", "[", "exit", "export", ":", "set", "source", "."}
)


def _is_builtin(program: str) -> bool:
    return program in _BUILTINS


def _context_checks(config: Config) -> list[DoctorCheck]:
    from ..paths import split_virtual_path

    out = []
    for path in config.contexts:
        if path == "/":
            continue
        try:
            name, _rel = split_virtual_path(path)
        except TansakuError:
            name = ""
        if name not in config.collections:
            out.append(
                check(
                    "config.contexts",
                    WARN,
                    f"the context at {path} belongs to no collection",
                    f"tansaku context rm {_q(path)}",
                )
            )
    return out


def _setting_checks(config_path: Path) -> list[DoctorCheck]:
    from .settings import all_settings

    out = []
    for item in all_settings(config_path):
        if item.problem:
            where = f"unset {item.env}" if item.source in ("env", "default") and item.env else ""
            if item.config_key and not where:
                where = f"correct {item.config_key} in {_q(config_path)}"
            out.append(
                check(f"setting.{item.name}", FAIL if item.value == "?" else WARN, item.problem, where)
            )
        else:
            out.append(check(f"setting.{item.name}", OK, f"{item.value} [{item.source}]"))
    return out


# --- index ----------------------------------------------------------------------------------


def index_checks(
    config: Config | None, config_path: Path, index_path: Path, checks: list[DoctorCheck]
) -> None:
    from ..store.migrations import SCHEMA_VERSION

    has_collections = bool(config and config.collections)
    if not index_path.exists():
        status, fix = (FAIL, "tansaku update") if has_collections else (WARN, _ADD)
        checks.append(check("index", status, f"no index at {index_path}", fix))
        return
    rebuild = f"mv {_q(index_path)} {_q(str(index_path) + '.bak')} && tansaku update"
    try:
        conn = db.open_read(index_path)
    except IndexSchemaMismatch as exc:
        checks.append(check("index", FAIL, exc.message, exc.hint))
        return
    except IndexMissing as exc:
        checks.append(check("index", FAIL, exc.message, f"chmod u+r {_q(index_path)}"))
        return
    except TansakuError as exc:
        checks.append(check("index", FAIL, exc.message, rebuild))
        return
    try:
        size = index_path.stat().st_size
        checks.append(check("index", OK, f"{index_path} ({size} bytes, schema {SCHEMA_VERSION})"))
        _run(checks, "index.integrity", rebuild, lambda: _integrity(conn, rebuild), index_path=index_path)
        if config is not None:
            _run(
                checks,
                "index.pending",
                "tansaku update",
                lambda: _pending(conn, config, config_path),
                index_path=index_path,
                damaged=rebuild,
            )
    finally:
        conn.close()
    checks.append(_wal_check(index_path))
    checks.append(_lock_check(index_path))
    checks.append(_writable_check(index_path))


def _writable_check(index_path: Path) -> DoctorCheck:
    """A read-only index is sound and searchable; only the commands that write it will fail."""
    from ..store import failures

    reason = failures.unwritable_reason(index_path)
    if reason is None:
        return check("index.writable", OK, "the index can be written")
    why, fix = reason
    return check("index.writable", WARN, f"read-only ({why}): search works, `tansaku update` cannot", fix)


def _run(
    checks: list[DoctorCheck],
    name: str,
    fix: str,
    step: Callable[[], list[DoctorCheck]],
    *,
    index_path: Path,
    damaged: str | None = None,
) -> None:
    """A check that cannot even run (a damaged page, a locked file) is itself a failure. Only
    when SQLite finds the file damaged is ``damaged`` the fix (rebuilding, not the check's usual
    one); a locked or unreadable disk gets its own cause and hint."""
    try:
        checks.extend(step())
    except db.DatabaseError as exc:
        cause = db.translate(exc, index_path)
        if isinstance(cause, IndexCorrupt) or not isinstance(cause, TansakuError):
            checks.append(check(name, FAIL, f"cannot check: the index is damaged ({exc})", damaged or fix))
        else:
            checks.append(check(name, FAIL, f"cannot check: {cause.message}", cause.hint or fix))
    except TansakuError as exc:
        checks.append(check(name, FAIL, exc.message, fix))


def _integrity(conn: Any, rebuild: str) -> list[DoctorCheck]:
    from ..store import health

    problems = health.quick_check(conn)
    if problems:
        return [check("index.integrity", FAIL, "quick_check: " + "; ".join(problems[:3]), rebuild)]
    fts, documents = health.fts_and_document_counts(conn)
    out = [check("index.integrity", OK, "quick_check ok")]
    if fts != documents:
        out.append(
            check("index.fts", FAIL, f"the keyword index has {fts} rows for {documents} documents", rebuild)
        )
    else:
        out.append(check("index.fts", OK, f"{documents} documents, each in the keyword index"))
    return out


def _pending(conn: Any, config: Config, config_path: Path) -> list[DoctorCheck]:
    from ..index.runner import pending_summary
    from ..store import documents as store
    from .status import collection_infos

    out = []
    states = store.collection_states(conn)
    for c in config.collection_list():
        if c.name not in states:
            out.append(
                check("index.pending", WARN, f"{c.name}: never indexed", f"tansaku update -c {c.name}")
            )
    for line in pending_summary(conn, config):
        name = line.split(":", 1)[0]
        if "folder" in line and "missing" in line:
            continue  # reported by the config check of that collection
        out.append(check("index.stale", WARN, line.split("; run", 1)[0], f"tansaku update -c {name}"))
    for info in collection_infos(conn, config, config_path):
        name = info.collection.name
        if info.unembedded:
            out.append(
                check(
                    "index.embed",
                    WARN,
                    f"{name}: {info.unembedded} chunks await a vector",
                    f"tansaku embed -c {name}",
                )
            )
    if not out:
        out.append(check("index.pending", OK, "every collection is up to date"))
    return out


def _wal_check(index_path: Path) -> DoctorCheck:
    wal = Path(str(index_path) + "-wal")
    size = wal.stat().st_size if wal.exists() else 0
    if size > WAL_WARN_BYTES:
        return check(
            "index.wal",
            WARN,
            f"the write-ahead log is {size // (1024 * 1024)} MB: a long-lived reader keeps it"
            " from being folded in",
            "stop long-running tansaku processes (servers), then run `tansaku update`",
        )
    return check("index.wal", OK, f"write-ahead log {size} bytes")


def _lock_check(index_path: Path) -> DoctorCheck:
    import json

    holder_file = index_path.with_name(index_path.name + ".writer")
    if not holder_file.exists():
        return check("index.lock", OK, "no writer holds the index")
    try:
        info = json.loads(holder_file.read_text(encoding="utf-8"))
        pid = int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return check("index.lock", WARN, f"unreadable lock note {holder_file}", f"rm {_q(holder_file)}")
    if not _alive(pid):
        return check(
            "index.lock",
            WARN,
            f"a lock note names pid {pid}, which is no longer running",
            f"rm {_q(holder_file)}",
        )
    holder = db.read_lock_holder(index_path) or f"pid {pid}"
    return check(
        "index.lock",
        WARN,
        f"the index is being written by {holder}; writers wait up to {db.lock_timeout():g} s",
        f"wait for pid {pid} to finish (or stop it: kill {pid})",
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
