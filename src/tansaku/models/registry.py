"""Which model file each role uses, and where it lives on disk.

A role (embed, generate, rerank) names its model with a reference: a local GGUF path,
``hf:OWNER/REPO/FILE`` for a file on the Hugging Face hub, or ``http(s)://HOST[:PORT]/v1#MODEL``
for a model served by an OpenAI-compatible endpoint (models/remote; used only when configured).
The reference comes from ``TANSAKU_<ROLE>_MODEL``, else this index's config (its ``[models]``
table), else the user-wide models file beside the index configs (``models.user.toml``, the same
table), else the defaults below (the order of every setting: ``tansaku.precedence``). Model
files and the choice of them belong to the person, not to one index: ``models add`` writes the
user-wide file unless told to keep the choice to one index. Nothing here touches the network:
``hf:`` files are only downloaded by ``tansaku models pull`` (``models/download.py``); until then
they are reported missing.

Stdlib only, so listing models costs no heavy import.
"""

from __future__ import annotations

import os
import struct
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import ConfigInvalid, PathNotFound, UsageError
from ..paths import _xdg
from .remote.endpoint import Endpoint, is_endpoint, parse_endpoint

ROLES = ("embed", "generate", "rerank")
HF_PREFIX = "hf:"
GGUF_MAGIC = b"GGUF"
# The dot keeps it apart from every index's own config (index names are letters, digits, '_', '-').
USER_MODELS_FILE = "models.user.toml"
SCOPES = ("user", "index")

# Downloaded only by `tansaku models pull`, never on first use: a search must never stall on (or
# fail for want of) a network that a local-first tool cannot assume.
DEFAULTS: dict[str, str] = {
    "embed": "hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf",
    "generate": "hf:Qwen/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q8_0.gguf",
    "rerank": "hf:ggml-org/Qwen3-Reranker-0.6B-Q8_0-GGUF/qwen3-reranker-0.6b-q8_0.gguf",
}


@dataclass(frozen=True)
class HfFile:
    owner: str
    repo: str
    filename: str  # may contain '/' for files in a sub-folder of the repo

    @property
    def repo_id(self) -> str:
        return f"{self.owner}/{self.repo}"


@dataclass(frozen=True)
class ModelRef:
    role: str
    reference: str
    source: str  # "env" | "config" (this index) | "user" (every index) | "default" (tansaku.precedence)
    local_path: Path
    present: bool
    size: int | None
    set_in: Path | None = None  # the file whose [models] table chose it (config or user source)

    @property
    def hf(self) -> HfFile | None:
        return parse_hf(self.reference) if self.reference.startswith(HF_PREFIX) else None

    @property
    def endpoint(self) -> Endpoint | None:
        """The server of a remote model; None for a model file."""
        return parse_endpoint(self.reference) if is_endpoint(self.reference) else None


def env_var(role: str) -> str:
    return f"TANSAKU_{role.upper()}_MODEL"


def model_dir() -> Path:
    """The models cache; ``TANSAKU_MODEL_DIR`` overrides it (tests point it at a temp folder)."""
    override = os.environ.get("TANSAKU_MODEL_DIR")
    if override:
        return Path(override).expanduser()
    return _xdg("XDG_CACHE_HOME", ".cache") / "tansaku" / "models"


def parse_hf(reference: str) -> HfFile:
    parts = reference[len(HF_PREFIX) :].strip("/").split("/")
    # '..' or empty segments would let a reference write outside the models cache.
    if len(parts) < 3 or any(p in ("", ".", "..") for p in parts):
        raise UsageError(
            f"bad model reference {reference!r}",
            hint="use hf:OWNER/REPO/FILE.gguf or a path to a local .gguf file",
        )
    return HfFile(parts[0], parts[1], "/".join(parts[2:]))


def hf_cache_path(hf: HfFile) -> Path:
    return model_dir() / hf.owner / hf.repo / hf.filename


def check_role(role: str) -> str:
    if role not in ROLES:
        raise UsageError(f"unknown model role {role!r}", hint=f"use one of: {', '.join(ROLES)}")
    return role


def user_models_path(config_path: Path) -> Path:
    """The models file every index shares: beside the index configs (``TANSAKU_CONFIG_DIR`` or
    ``~/.config/tansaku``), so it moves with them."""
    return config_path.parent / USER_MODELS_FILE


def resolve(role: str, config_path: Path) -> ModelRef:
    from ..precedence import CONFIG, MISSING, USER, choose

    check_role(role)
    user_path = user_models_path(config_path)
    reference, source = choose(
        default=DEFAULTS[role],
        env=env_var(role),
        config=_config_models(config_path).get(role, MISSING),
        user=_config_models(user_path).get(role, MISSING),
    )
    set_in = {CONFIG: config_path, USER: user_path}.get(source)
    # A relative path in a config file means relative to that file, not to wherever the command
    # happens to run; one in the environment means relative to where it runs.
    base = set_in.parent if set_in is not None else Path.cwd()
    if is_endpoint(reference):
        _check_endpoint(reference, set_in)
        # Configured, so present: whether the server answers is for `doctor` and the first use.
        return ModelRef(role, reference.strip(), source, Path(), True, None, set_in)
    if reference.startswith(HF_PREFIX):
        local = hf_cache_path(parse_hf(reference))
    else:
        local = Path(os.path.abspath(base / Path(reference).expanduser()))
    size = _size(local)
    return ModelRef(role, reference, source, local, size is not None, size, set_in)


def _check_endpoint(reference: str, set_in: Path | None) -> None:
    try:
        parse_endpoint(reference)
    except UsageError as exc:
        if set_in is None:
            raise
        raise ConfigInvalid(f"config {set_in}: [models] {exc.message}", hint=exc.hint) from exc


def models_setting(config_path: Path, key: str) -> object | None:
    """A ``[models]`` setting other than a role (``embed_prompt``, ``ROLE_api_key_env``...): this
    index's config first, then the user-wide models file, the order of the model choice itself."""
    for source in (config_path, user_models_path(config_path)):
        models = _load_toml(source).get("models", {})
        if isinstance(models, dict) and key in models:
            return models[key]
    return None


def resolve_all(config_path: Path) -> list[ModelRef]:
    return [resolve(role, config_path) for role in ROLES]


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size if path.is_file() else None
    except OSError:
        return None


def _load_toml(config_path: Path) -> dict[str, Any]:
    try:
        raw = config_path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigInvalid(f"cannot read config {config_path}: {exc.strerror}") from exc
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigInvalid(
            f"config {config_path} is not valid TOML: {exc}", hint="fix or remove the file"
        ) from exc


def _config_models(config_path: Path) -> dict[str, str]:
    models = _load_toml(config_path).get("models", {})
    if not isinstance(models, dict):
        raise ConfigInvalid(f"config {config_path}: [models] must be a table")
    for role in ROLES:
        if role in models and not isinstance(models[role], str):
            raise ConfigInvalid(f"config {config_path}: [models] {role} must be a string (a path or hf:...)")
    return {role: models[role] for role in ROLES if role in models}


def is_gguf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == GGUF_MAGIC
    except OSError:
        return False


@dataclass(frozen=True)
class Registered:
    ref: ModelRef  # what the role resolves to now (the environment may still override the file)
    saved_in: Path
    # This index's own choice, dropped because a user-wide one replaced it (it would have won).
    dropped_from_index: str | None = None
    others_keep_own: tuple[str, ...] = ()  # other indexes that set their own model for the role


def register(role: str, path: Path | str, config_path: Path, *, scope: str = "user") -> Registered:
    """Point ROLE at a local GGUF file (``[models] ROLE = "/abs/path"``) or an endpoint
    (``http(s)://HOST/v1#MODEL``, checked for form only: no request is made): in the user-wide
    models file for every index (scope "user"), or in this index's config only (scope "index").

    A user-wide choice made from an index that sets its own removes that index's own line:
    otherwise the command would change nothing where it was run.
    """
    check_role(role)
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r}", hint=f"use one of: {', '.join(SCOPES)}")
    if isinstance(path, str) and is_endpoint(path):
        return _register_value(role, parse_endpoint(path).reference, config_path, scope)
    path = Path(os.path.abspath(Path(path).expanduser()))
    if not path.exists():
        raise PathNotFound(f"model file {str(path)!r} does not exist")
    if not path.is_file():
        raise UsageError(f"{str(path)!r} is not a file", hint="give the path of a .gguf model file")
    if not is_gguf(path):
        raise UsageError(
            f"{str(path)!r} is not a GGUF model file (it does not start with the bytes 'GGUF')",
            hint="convert the model to GGUF first (llama.cpp's convert_hf_to_gguf.py)",
        )
    return _register_value(role, str(path), config_path, scope)


def _register_value(role: str, value: str, config_path: Path, scope: str) -> Registered:
    target = user_models_path(config_path) if scope == "user" else config_path
    dropped = None
    if scope == "user":
        _config_models(config_path)  # a broken index config is reported before anything is written
        dropped = _set_model(config_path, role, None)
    _set_model(target, role, value)
    others = indexes_with_own(role, config_path) if scope == "user" else ()
    return Registered(resolve(role, config_path), target, dropped, others)


def _set_model(config_path: Path, role: str, value: str | None) -> str | None:
    """Set (or, with None, remove) ``[models] ROLE`` in one file; the value it had."""
    data = _load_toml(config_path)
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise ConfigInvalid(f"config {config_path}: [models] must be a table")
    old = models.get(role)
    if value is None:
        if old is None:
            return None
        del models[role]
        if not models:
            data.pop("models", None)
    else:
        data["models"] = {**models, role: value}
    _write_toml(config_path, data)
    return old if isinstance(old, str) else None


def indexes_with_own(role: str, config_path: Path) -> tuple[str, ...]:
    """The other indexes (configs beside this one) whose config sets ROLE's model themselves."""
    names = []
    for other in sorted(config_path.parent.glob("*.toml")):
        if other == config_path or other.name == USER_MODELS_FILE:
            continue
        try:
            if role in _config_models(other):
                names.append(other.stem)
        except ConfigInvalid:
            continue  # that index's own commands report its broken config
    return tuple(names)


def _write_toml(config_path: Path, data: dict[str, Any]) -> None:
    from ..config.settings import write_toml

    # The whole document is rewritten, collections, contexts and settings as loaded.
    write_toml(config_path, data)


# --- GGUF header: just enough to find the embedding length -----------------------------------
# The gguf package's GGUFReader parses every key up front, a 150k-entry vocabulary included:
# about 6 s per file, too slow for a listing. This reads key by key and stops at the answer.

_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
_MAX_KEYS = 10_000


def embedding_length(path: Path) -> int | None:
    """``<arch>.embedding_length`` from a GGUF file's header; None when absent or unreadable."""
    try:
        with path.open("rb") as handle:
            return _find_embedding_length(handle)
    except (OSError, ValueError, struct.error, UnicodeDecodeError):
        return None


def _find_embedding_length(handle: BinaryIO) -> int | None:
    magic, version = struct.unpack("<4sI", _read(handle, 8))
    if magic != GGUF_MAGIC or version < 2:  # version 1 used 32-bit counts; nothing ships it now
        return None
    _tensors, kv_count = struct.unpack("<QQ", _read(handle, 16))
    for _ in range(min(kv_count, _MAX_KEYS)):
        key = _string(handle)
        (kind,) = struct.unpack("<I", _read(handle, 4))
        if key.endswith(".embedding_length") and kind in _SCALARS and kind not in (6, 7, 12):
            fmt = "<" + _SCALARS[kind]
            return int(struct.unpack(fmt, _read(handle, struct.calcsize(fmt)))[0])
        _skip_value(handle, kind)
    return None


def _read(handle: BinaryIO, size: int) -> bytes:
    data = handle.read(size)
    if len(data) != size:
        raise ValueError("truncated GGUF header")
    return data


def _string(handle: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", _read(handle, 8))
    return _read(handle, length).decode("utf-8")


def _skip_value(handle: BinaryIO, kind: int) -> None:
    if kind in _SCALARS:
        handle.seek(struct.calcsize(_SCALARS[kind]), os.SEEK_CUR)
    elif kind == _STRING:
        (length,) = struct.unpack("<Q", _read(handle, 8))
        handle.seek(length, os.SEEK_CUR)
    elif kind == _ARRAY:
        item_kind, count = struct.unpack("<IQ", _read(handle, 12))
        if item_kind in _SCALARS:
            handle.seek(count * struct.calcsize(_SCALARS[item_kind]), os.SEEK_CUR)
        else:
            for _ in range(count):
                _skip_value(handle, item_kind)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")
