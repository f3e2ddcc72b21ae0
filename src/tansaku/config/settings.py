"""The configuration file: collections and contexts, as TOML a person can edit.

Each index has its own config (``index.toml``, ``NAME.toml`` for ``--index NAME``). For a SQLite
index the file is the source of truth for what is indexed; the index only holds derived data. An
index in PostgreSQL keeps its collections and contexts in the database instead, so every member of
a team sees one list (config/index_lists.py); its file keeps the other settings. Writes go to a
temporary file that replaces the old one, so a crash never leaves half a config behind.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigInvalid
from ..types import Collection

if TYPE_CHECKING:
    from ..types import Context  # built on first use (see tansaku.types); a search never needs it

HEADER = "# tansaku configuration. Edit by hand or with `tansaku collection ...` / `tansaku context ...`.\n"
DEFAULT_MASKS = ("**/*.md",)


@dataclass
class Config:
    collections: dict[str, Collection] = field(default_factory=dict)
    contexts: dict[str, str] = field(default_factory=dict)  # path ("/" or virtual path) -> text
    max_file_bytes: int = 5 * 1024 * 1024
    # Top-level tables this module does not manage (e.g. [models]), written back untouched.
    other: dict[str, Any] = field(default_factory=dict)

    def collection_list(self) -> list[Collection]:
        return [self.collections[name] for name in sorted(self.collections)]

    def context_list(self) -> list[Context]:
        from ..types import Context

        return [Context(path=p, text=t) for p, t in sorted(self.contexts.items(), key=_context_order)]

    def with_collection(self, collection: Collection) -> Config:
        collections = dict(self.collections)
        collections[collection.name] = collection
        return replace(self, collections=collections)


def index_url(config: Config) -> str | None:
    """``[index] url``: the database that holds this config's index (``postgresql://...``), or None
    for the SQLite file. Anything else there is refused rather than silently ignored."""
    from ..store.backend import is_database_url

    table = config.other.get("index")
    if table is None:
        return None
    url = table.get("url") if isinstance(table, dict) else None
    if url is None and isinstance(table, dict):
        return None
    if not isinstance(url, str) or not is_database_url(url):
        raise ConfigInvalid(
            f"[index] url must be a postgresql:// URL, not {url!r}",
            hint="remove [index] url to keep the index in its SQLite file",
        )
    return url


def _context_order(item: tuple[str, str]) -> tuple[int, str]:
    path = item[0]
    return (0 if path == "/" else 1, path)


def load(path: Path) -> Config:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise ConfigInvalid(f"cannot read config {path}: {exc.strerror}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigInvalid(f"config {path} is not valid TOML: {exc}", hint="fix or remove the file") from exc
    return _from_dict(data, path)


def collection_from_entry(name: str, entry: Any, path: Path | str) -> Collection:
    """A collection from its TOML table (or the same table kept in a database, where ``path``
    names the index for the messages)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        raise ConfigInvalid(f"config {path}: collection {name!r} needs a path")
    return Collection(
        name=name,
        path=entry["path"],
        masks=tuple(_strings(entry.get("masks", list(DEFAULT_MASKS)), path, name, "masks")),
        ignore=tuple(_strings(entry.get("ignore", []), path, name, "ignore")),
        update=entry.get("update") or None,
        include=bool(entry.get("include", True)),
        chunk_strategy=_strategy(entry.get("chunk_strategy", "regex"), path, name),
        type=_type(entry.get("type", "files"), path, name),
        redact=bool(entry.get("redact", True)),
    )


def collection_entry(c: Collection) -> dict[str, Any]:
    """A collection as its TOML table (the config file's, or a database's list)."""
    entry: dict[str, Any] = {"path": c.path, "masks": list(c.masks), "include": c.include}
    if c.ignore:
        entry["ignore"] = list(c.ignore)
    if c.update:
        entry["update"] = c.update
    if c.chunk_strategy != "regex":
        entry["chunk_strategy"] = c.chunk_strategy
    if c.type != "files":
        entry["type"] = c.type
    if not c.redact:
        entry["redact"] = False
    return entry


def _from_dict(data: dict[str, Any], path: Path) -> Config:
    config = Config()
    config.other = {k: v for k, v in data.items() if k not in ("settings", "collections", "contexts")}
    settings = data.get("settings", {})
    if isinstance(settings, dict) and isinstance(settings.get("max_file_bytes"), int):
        config.max_file_bytes = settings["max_file_bytes"]
    collections = data.get("collections", {})
    if not isinstance(collections, dict):
        raise ConfigInvalid(f"config {path}: [collections] must be a table")
    for name, entry in collections.items():
        config.collections[name] = collection_from_entry(name, entry, path)
    contexts = data.get("contexts", {})
    if not isinstance(contexts, dict) or not all(isinstance(v, str) for v in contexts.values()):
        raise ConfigInvalid(f"config {path}: [contexts] must map paths to strings")
    config.contexts = dict(contexts)
    return config


CHUNK_STRATEGIES = ("regex", "auto")
COLLECTION_TYPES = ("files", "claude", "codex")


def _type(value: Any, path: Path | str, name: str) -> str:
    if value not in COLLECTION_TYPES:
        raise ConfigInvalid(
            f"config {path}: collection {name!r}: type must be one of {', '.join(COLLECTION_TYPES)}"
        )
    return str(value)


def _strategy(value: Any, path: Path | str, name: str) -> str:
    if value not in CHUNK_STRATEGIES:
        raise ConfigInvalid(f"config {path}: collection {name!r}: chunk_strategy must be 'regex' or 'auto'")
    return str(value)


def _strings(value: Any, path: Path | str, name: str, key: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ConfigInvalid(f"config {path}: collection {name!r}: {key} must be a list of strings")


def save(path: Path, config: Config) -> None:
    data: dict[str, Any] = dict(config.other)
    if config.max_file_bytes != Config().max_file_bytes:
        data["settings"] = {"max_file_bytes": config.max_file_bytes}
    data["collections"] = {}
    for c in config.collection_list():
        data["collections"][c.name] = collection_entry(c)
    data["contexts"] = dict(sorted(config.contexts.items(), key=_context_order))
    write_toml(path, data)


def write_toml(path: Path, data: dict[str, Any]) -> None:
    """Write the whole config through a temporary file that replaces the old one, so a crash
    never leaves half a config behind."""
    # Only commands that change the config pay for the writer and tempfile (which imports random).
    import tempfile

    import tomli_w

    text = HEADER + tomli_w.dumps(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tansaku-config-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
