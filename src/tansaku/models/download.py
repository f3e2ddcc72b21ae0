"""Fetching ``hf:`` model files: the only code in tansaku that touches the network.

Only ``tansaku models pull`` calls it. huggingface_hub (the ``models`` extra) does the talking:
it reads the file's metadata (``get_hf_file_metadata``: ETag, size, the CDN location of LFS and
Xet files) and transfers the bytes (``http_get``), honouring ``HF_ENDPOINT``, tokens and proxies,
and re-requesting the rest with a ``Range`` header when the connection drops mid-file.

Pulls are resumable across runs. The bytes go to ``<models cache>/.downloads/OWNER/REPO/FILE.part``
next to ``FILE.part.json``, which records the ETag and size of the file those bytes belong to.
A pull that is killed (SIGKILL, Ctrl-C, a crash) leaves both behind, and the next pull asks only
for the rest (``Range: bytes=N-``), provided the hub still reports the same ETag and size; a file
that changed on the hub is started again from zero, never appended to. huggingface_hub's own
``hf_hub_download`` cannot do this: in 2.x (read in 2.4.0) it writes to a temporary file with a
per-process name, deletes it when a download fails or is interrupted, and never reuses one a
killed process left behind. Tested with huggingface_hub 2.4.0; the calls used here take the same
arguments in 1.0.0 (read in its source), and a version without them fails with a clear
ModelDownloadFailed, not a traceback. huggingface_hub's faster Xet protocol is not used, because
it cannot resume from a partial file; the hub serves Xet-backed files over plain HTTPS too.

A finished file is verified before it is moved to its final path: its size must match the
hub's, its SHA-256 must match when the hub reports one (the ``X-Linked-Etag`` of LFS and Xet
files is the SHA-256 of the content), and it must start with the GGUF magic. A file that fails
is deleted, so the cache never holds a half-written or wrong file under a model's name. A lock
file next to the partial one keeps two pulls from writing it at once: the second fails at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import re
import shutil
import socket
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any
from urllib.parse import urljoin, urlsplit

from ..errors import ModelDownloadFailed, OfflineError
from .registry import HfFile, ModelRef, is_gguf, model_dir

DEFAULT_ENDPOINT = "https://huggingface.co"
# Without this probe an unreachable hub costs ~23 s of huggingface_hub retries before it fails.
PROBE_TIMEOUT_S = 3.0
STAGING = ".downloads"
PART = ".part"  # the bytes received so far, next to PART_INFO: what file they belong to
PART_INFO = ".part.json"
LOCK_TIMEOUT_S = 1.0
HF_VERIFIED = "2.4.0"  # the huggingface_hub version this module was tested against
# Auth may follow a redirect to these (as huggingface_hub does); any other host is a CDN with a
# signed URL, and the token must not leave the hub.
HUB_ORIGINS = ("https://huggingface.co", "https://hf.co")
_SHA256 = re.compile(r"[0-9a-f]{64}")
MANUAL_HINT = (
    "download the file on a machine that can reach the hub, copy it here, then run "
    "`tansaku models add ROLE PATH` (for a BERT sentence-transformers folder: `tansaku models import DIR`)"
)


def hub_endpoint() -> str:
    # Read per call, not at import: huggingface_hub itself freezes HF_ENDPOINT when it is imported.
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def file_url(hf: HfFile, endpoint: str | None = None) -> str:
    return f"{endpoint or hub_endpoint()}/{hf.repo_id}/resolve/main/{hf.filename}"


def pull(refs: Sequence[ModelRef], *, progress: bool = False) -> list[Path]:
    """Download each ``hf:`` reference into the models cache; return the local paths.

    Raises OfflineError at once (within PROBE_TIMEOUT_S) when the hub cannot be reached, and
    ModelDownloadFailed when huggingface_hub is missing or a download fails or is not GGUF.
    """
    files = [_hf(ref) for ref in refs]
    if not files:
        return []
    if find_spec("huggingface_hub") is None:
        raise ModelDownloadFailed(
            "downloading models needs huggingface_hub, which is not installed",
            hint="pip install 'tansaku[models]', or " + MANUAL_HINT,
        )
    endpoint = hub_endpoint()
    probe(endpoint, {ref.role: file_url(hf, endpoint) for ref, hf in zip(refs, files, strict=True)})
    return [
        download(ref, hf, endpoint=endpoint, progress=progress) for ref, hf in zip(refs, files, strict=True)
    ]


def _hf(ref: ModelRef) -> HfFile:
    hf = ref.hf
    if hf is None:
        raise ModelDownloadFailed(
            f"the {ref.role} model is a local file ({ref.reference}), not an hf: reference: "
            "there is nothing to download"
        )
    return hf


def probe(endpoint: str, urls: Mapping[str, str] | None = None, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise OfflineError unless a TCP connection to the hub (or its proxy) opens within ``timeout``.

    ``urls`` (role -> file URL) only make the error say what to fetch by hand.
    """
    urls = urls or {}
    if _truthy(os.environ.get("HF_HUB_OFFLINE")):
        raise _offline(endpoint, "HF_HUB_OFFLINE is set", urls)
    try:
        host, port = _connect_target(endpoint)
    except ValueError as exc:
        raise ModelDownloadFailed(f"HF_ENDPOINT {endpoint!r} is not a usable URL: {exc}") from exc
    outcome: list[BaseException | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc)

    # A thread bounds the whole probe, name lookup included: getaddrinfo ignores socket timeouts
    # and can block far longer than the connect itself when no resolver answers.
    worker = threading.Thread(target=connect, name="tansaku-hub-probe", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise _offline(endpoint, f"no answer within {timeout:g} s", urls)
    if outcome[0] is not None:
        raise _offline(endpoint, _reason(outcome[0]), urls)


def _connect_target(endpoint: str) -> tuple[str, int]:
    import urllib.request  # only pull pays for it

    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected http(s)://HOST[:PORT]")
    # Behind a proxy the hub itself may be unreachable by design: the proxy is what must answer.
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname):
        proxy_parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if proxy_parts.hostname:
            return proxy_parts.hostname, proxy_parts.port or (443 if proxy_parts.scheme == "https" else 80)
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _offline(endpoint: str, reason: str, urls: Mapping[str, str]) -> OfflineError:
    files = "".join(f"\n  {role}: {url}" for role, url in urls.items())
    return OfflineError(
        f"cannot reach the model hub at {endpoint} ({reason}); nothing was downloaded",
        hint=MANUAL_HINT + (f"; the file{'s' if len(urls) > 1 else ''}:{files}" if urls else ""),
        endpoint=endpoint,
        files=dict(urls),
    )


@dataclass(frozen=True)
class Remote:
    """What the hub says about one file, from the HEAD request before the transfer."""

    url: str  # where the bytes are fetched: the CDN location for LFS files, else the resolve URL
    etag: str
    size: int | None
    headers: dict[str, str]  # for the GET: user agent, and the token unless url is off the hub

    @property
    def sha256(self) -> str | None:
        """The content's SHA-256 when the ETag is one (LFS and Xet files), else None."""
        return self.etag if _SHA256.fullmatch(self.etag) else None

    def identity(self) -> dict[str, Any]:
        """What a partial file must have been started from to be resumed."""
        return {"etag": self.etag, "size": self.size}


def download(ref: ModelRef, hf: HfFile, *, endpoint: str, progress: bool) -> Path:
    """Fetch one file into the cache at ``ref.local_path``, resuming a partial download if any."""
    # Set before huggingface_hub is imported, which is when it reads it. Telemetry on, it also
    # fetches an "agent harness" list from the hub and reports the environment in its user agent;
    # a local-first tool asks for the file and nothing else. A user's own setting wins.
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    hub = _client()
    staging = model_dir() / STAGING / hf.owner / hf.repo
    part = staging / (hf.filename + PART)
    lock = part.with_name(part.name + ".lock")
    try:
        part.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _failed(ref, hf, endpoint, f"cannot write to the models cache: {_reason(exc)}") from exc
    # Earlier builds let hf_hub_download(local_dir=...) stage here; what it left can never resume.
    shutil.rmtree(staging / ".cache", ignore_errors=True)
    bars_were_off = hub.are_progress_bars_disabled()
    if not progress:
        hub.disable_progress_bars()
    try:
        # Fail at once rather than wait unseen: the other pull may take minutes.
        with hub.WeakFileLock(lock, timeout=LOCK_TIMEOUT_S):
            if is_gguf(ref.local_path):  # another pull finished it since this one looked
                return ref.local_path
            remote = _remote(hub, ref, hf, endpoint)
            resume_from = _resume_point(part, remote)
            _transfer(hub, ref, hf, endpoint, part, remote, resume_from)
            _verify(ref, hf, endpoint, part, remote)
            ref.local_path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(part, ref.local_path)
            _info(part).unlink(missing_ok=True)
            # Safe while held: whoever takes the lock next sees the finished file and returns.
            with contextlib.suppress(OSError):
                lock.unlink()
    except hub.LockTimeout as exc:
        raise _failed(
            ref,
            hf,
            endpoint,
            "another `tansaku models pull` is downloading this file",
            hint=f"wait for it to finish; if none is running, delete {lock} and pull again",
        ) from exc
    finally:
        if not progress and not bars_were_off:
            hub.enable_progress_bars()
    return ref.local_path


def _client() -> SimpleNamespace:
    """The parts of huggingface_hub used here, or ModelDownloadFailed naming what is missing."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("huggingface_hub")
    except PackageNotFoundError:
        installed = "unknown"
    try:
        from filelock import Timeout as LockTimeout  # a dependency of huggingface_hub
        from huggingface_hub import get_hf_file_metadata, hf_hub_url
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            OfflineModeIsEnabled,
            RepositoryNotFoundError,
        )
        from huggingface_hub.file_download import http_get
        from huggingface_hub.utils import (
            WeakFileLock,
            are_progress_bars_disabled,
            build_hf_headers,
            disable_progress_bars,
            enable_progress_bars,
        )
    except ImportError as exc:
        raise _unsupported(installed, str(exc)) from exc
    needs = {
        http_get: ("resume_size", "expected_size", "headers", "displayed_filename"),
        get_hf_file_metadata: ("endpoint", "library_name", "library_version"),
        build_hf_headers: ("library_name", "library_version"),
        hf_hub_url: ("endpoint",),
        WeakFileLock: ("timeout",),
    }
    for function, arguments in needs.items():
        try:
            known = inspect.signature(function).parameters
        except (TypeError, ValueError):  # not introspectable: trust it
            continue
        if missing := [name for name in arguments if name not in known]:
            raise _unsupported(installed, f"{function.__name__}() takes no {', '.join(missing)}")
    return SimpleNamespace(
        get_hf_file_metadata=get_hf_file_metadata,
        hf_hub_url=hf_hub_url,
        http_get=http_get,
        build_hf_headers=build_hf_headers,
        WeakFileLock=WeakFileLock,
        are_progress_bars_disabled=are_progress_bars_disabled,
        disable_progress_bars=disable_progress_bars,
        enable_progress_bars=enable_progress_bars,
        GatedRepoError=GatedRepoError,
        HfHubHTTPError=HfHubHTTPError,
        OfflineModeIsEnabled=OfflineModeIsEnabled,
        RepositoryNotFoundError=RepositoryNotFoundError,
        LockTimeout=LockTimeout,
    )


def _unsupported(installed: str, detail: str) -> ModelDownloadFailed:
    return ModelDownloadFailed(
        f"the installed huggingface_hub ({installed}) lacks the download API tansaku uses ({detail})",
        hint=f"install a version tested with tansaku: pip install 'huggingface_hub=={HF_VERIFIED}'; or "
        + MANUAL_HINT,
    )


def _remote(hub: SimpleNamespace, ref: ModelRef, hf: HfFile, endpoint: str) -> Remote:
    from .. import __version__

    url = hub.hf_hub_url(hf.repo_id, hf.filename, endpoint=endpoint)
    agent = {"library_name": "tansaku", "library_version": __version__}
    try:
        meta = hub.get_hf_file_metadata(url, endpoint=endpoint, **agent)
    except Exception as exc:
        raise _hub_error(hub, ref, hf, endpoint, exc, connecting=True) from exc
    if not meta.commit_hash:
        raise _failed(
            ref, hf, endpoint, f"{endpoint} does not answer like a Hugging Face hub (no X-Repo-Commit header)"
        )
    if not meta.etag:
        raise _failed(ref, hf, endpoint, "the hub sent no ETag, so the download could not be verified")
    # Like hf_hub_download: an LFS file is fetched from the CDN its redirect names; a Xet file from
    # the resolve URL, whose redirect the transfer follows.
    xet = getattr(meta, "xet_file_data", None)
    target = url if xet is not None or not meta.location else urljoin(url, meta.location)
    headers = dict(hub.build_hf_headers(**agent))
    if _origin(target) not in {_origin(url), *map(_origin, HUB_ORIGINS)}:
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    return Remote(url=target, etag=meta.etag, size=meta.size, headers=headers)


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    return (
        parts.scheme,
        (parts.hostname or "").lower(),
        parts.port or (443 if parts.scheme == "https" else 80),
    )


def _info(part: Path) -> Path:
    return part.with_name(part.name.removesuffix(PART) + PART_INFO)


def _resume_point(part: Path, remote: Remote) -> int:
    """Bytes of ``part`` to keep: all of them if they belong to this very file, else none."""
    info = _info(part)
    try:
        recorded = json.loads(info.read_text(encoding="utf-8"))
        have = part.stat().st_size
    except (OSError, ValueError):
        recorded, have = None, 0
    if recorded == remote.identity() and (remote.size is None or have <= remote.size):
        return have
    # Nothing, or bytes of another revision of the file (or of unknown origin): start afresh, and
    # record what the new bytes belong to before the first of them is written.
    part.unlink(missing_ok=True)
    tmp = info.with_name(info.name + ".tmp")
    tmp.write_text(json.dumps(remote.identity()), encoding="utf-8")
    os.replace(tmp, info)
    return 0


def _transfer(
    hub: SimpleNamespace,
    ref: ModelRef,
    hf: HfFile,
    endpoint: str,
    part: Path,
    remote: Remote,
    resume_from: int,
) -> None:
    if remote.size is not None:
        free = shutil.disk_usage(part.parent).free
        if free < remote.size - resume_from:
            raise _failed(
                ref,
                hf,
                endpoint,
                f"not enough disk space in {part.parent}: {_mb(remote.size - resume_from)} needed, "
                f"{_mb(free)} free",
                hint="free some space (or point TANSAKU_MODEL_DIR elsewhere) and pull again",
            )
    try:
        # Appending: the bytes kept from an earlier run stay, and http_get asks for the rest.
        with part.open("ab") as out:
            hub.http_get(
                remote.url,
                out,
                resume_size=resume_from,
                headers=dict(remote.headers),
                expected_size=remote.size,
                displayed_filename=PurePosixPath(hf.filename).name,
            )
    except Exception as exc:
        kept = part.stat().st_size if part.exists() else 0
        if remote.size is not None and kept > remote.size:  # a server ignored Range: useless bytes
            _discard(part)
            kept = 0
        raise _hub_error(hub, ref, hf, endpoint, exc, connecting=False, kept=kept, total=remote.size) from exc


def _verify(ref: ModelRef, hf: HfFile, endpoint: str, part: Path, remote: Remote) -> None:
    size = part.stat().st_size
    problem = None
    if remote.size is not None and size != remote.size:
        problem = f"it has {size} bytes where the hub reports {remote.size}"
    elif remote.sha256 and (actual := _sha256(part)) != remote.sha256:
        problem = f"its SHA-256 is {actual} where the hub reports {remote.sha256}"
    elif not is_gguf(part):
        problem = "the file is not GGUF (it does not start with 'GGUF')"
    if problem:
        _discard(part)
        raise _failed(
            ref,
            hf,
            endpoint,
            f"{problem}; it was deleted",
            hint="pull again to download it afresh; if that fails the same way, " + MANUAL_HINT,
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _discard(part: Path) -> None:
    part.unlink(missing_ok=True)
    _info(part).unlink(missing_ok=True)


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def _hub_error(
    hub: SimpleNamespace,
    ref: ModelRef,
    hf: HfFile,
    endpoint: str,
    exc: Exception,
    *,
    connecting: bool,
    kept: int = 0,
    total: int | None = None,
) -> Exception:
    url = {ref.role: file_url(hf, endpoint)}
    if isinstance(exc, hub.OfflineModeIsEnabled):
        return _offline(endpoint, "huggingface_hub is in offline mode", url)
    if isinstance(exc, hub.GatedRepoError):
        login = "accept its licence on the hub, log in (`hf auth login` or HF_TOKEN) and pull again, or "
        return _failed(ref, hf, endpoint, "the repository is gated", login + MANUAL_HINT)
    if isinstance(exc, hub.RepositoryNotFoundError):
        return _failed(ref, hf, endpoint, "the repository does not exist (or is private)")
    if isinstance(exc, hub.HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else "?"
        reason = f"the hub answered HTTP {status}"
    else:  # network, disk and size errors: report them, don't trace back
        reason = f"{type(exc).__name__}: {exc}"
    # httpx's TransportError covers connect, read, timeout and protocol errors.
    if connecting and any(cls.__name__ == "TransportError" for cls in type(exc).__mro__):
        return _offline(endpoint, f"the connection failed: {reason}", url)
    if kept:
        of = f" of {total}" if total is not None else ""
        reason += f"; the {kept}{of} bytes received so far are kept"
        hint = f"run `tansaku models pull {ref.role}` again to resume from there; or " + MANUAL_HINT
        return _failed(ref, hf, endpoint, reason, hint)
    return _failed(ref, hf, endpoint, reason)


def _failed(
    ref: ModelRef, hf: HfFile, endpoint: str, reason: str, hint: str = MANUAL_HINT
) -> ModelDownloadFailed:
    return ModelDownloadFailed(
        f"could not download the {ref.role} model {ref.reference}: {reason}",
        hint=hint,
        url=file_url(hf, endpoint),
    )
