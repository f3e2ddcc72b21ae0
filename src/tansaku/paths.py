"""Where tansaku keeps its files, and the virtual path scheme.

Config (human-edited TOML) lives under the XDG config dir, the index (derived data) under the XDG
cache dir. ``TANSAKU_CONFIG_DIR`` and ``TANSAKU_INDEX_PATH`` override them, which is how tests keep
away from the real home. ``TANSAKU_INDEX_PATH`` is the default index's file only: ``--index NAME`` is a
flag, and a flag outranks the environment (precedence.py), so a named index keeps its own file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from .errors import InvalidName, UsageError
from .precedence import choose
from .types import SCHEME

DEFAULT_INDEX = "index"
VIRTUAL_PREFIX = f"{SCHEME}://"
_INDEX_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_database_url(ref: str | None) -> bool:
    """Whether an index reference names a database server rather than a file or an index name."""
    return bool(ref) and str(ref).startswith(POSTGRES_SCHEMES)


@dataclass(frozen=True)
class Locations:
    config_file: Path
    index_file: Path
    # `--index postgresql://...`: the index is that database (the config stays the default one's).
    index_url: str | None = None


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    # The XDG spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def locations(index_name: str | None = None) -> Locations:
    if is_database_url(index_name):
        return replace(locations(None), index_url=index_name)
    name = index_name or DEFAULT_INDEX
    if not _INDEX_NAME.match(name):
        raise InvalidName(f"invalid index name {name!r}: use letters, digits, '_' or '-'")
    config_dir = os.environ.get("TANSAKU_CONFIG_DIR")
    config_root = Path(config_dir) if config_dir else _xdg("XDG_CONFIG_HOME", ".config") / "tansaku"
    # Both name a file, so letting the variable win made `--index work` write into the default
    # index (issue 36). The flag's file is the named index's own, whatever the environment says.
    cache_file = _xdg("XDG_CACHE_HOME", ".cache") / "tansaku" / f"{name}.sqlite"
    index_file, _source = choose(
        flag=cache_file if index_name else None,
        env="TANSAKU_INDEX_PATH",
        default=cache_file,
    )
    return Locations(config_file=config_root / f"{name}.toml", index_file=Path(index_file))


def virtual_path(collection: str, rel_path: str = "") -> str:
    rel = rel_path.strip("/")
    return f"{VIRTUAL_PREFIX}{collection}/{rel}" if rel else f"{VIRTUAL_PREFIX}{collection}"


def split_virtual_path(value: str) -> tuple[str, str]:
    """``tansaku://coll/a/b.md`` -> ``("coll", "a/b.md")``."""
    if not value.startswith(VIRTUAL_PREFIX):
        raise UsageError(f"not a virtual path: {value!r} (expected {VIRTUAL_PREFIX}COLLECTION/PATH)")
    rest = value[len(VIRTUAL_PREFIX) :].strip("/")
    collection, _, rel = rest.partition("/")
    if not collection:
        raise UsageError(f"virtual path {value!r} names no collection")
    return collection, normalize_rel(rel)


def normalize_rel(rel: str) -> str:
    """Collapse ``./``, duplicate and trailing slashes; reject ``..`` escapes."""
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UsageError(f"path {rel!r} may not contain '..'")
    return "/".join(parts)


def is_within(path: str, prefix: str) -> bool:
    """Whole-segment prefix test: ``a/sub`` is within ``a`` but ``a/subway`` is not within ``a/sub``."""
    if not prefix:
        return True
    return path == prefix or path.startswith(prefix + "/")
