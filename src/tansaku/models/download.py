"""Fetching ``hf:`` model files: the only code in tansaku that touches the network.

Only ``tansaku models pull`` calls it. huggingface_hub (the ``models`` extra) does the transfer:
it honours ``HF_ENDPOINT``, tokens and proxies, follows the hub's CDN redirects, and when the
connection drops mid-file it re-requests the rest with a ``Range`` header. It downloads into a
staging folder inside the models cache; a file is moved to its final path only once it has
proved to be GGUF, so the cache never holds a half-written or wrong file under a model's name.

huggingface_hub 2.x keeps no partial file between runs (it deletes its temporary file when a
download fails), so a pull that is killed starts that file again; drops within one run resume.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping, Sequence
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ModelDownloadFailed, OfflineError
from .registry import HfFile, ModelRef, is_gguf, model_dir

DEFAULT_ENDPOINT = "https://huggingface.co"
# Without this probe an unreachable hub costs ~23 s of huggingface_hub retries before it fails.
PROBE_TIMEOUT_S = 3.0
STAGING = ".downloads"
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


def download(ref: ModelRef, hf: HfFile, *, endpoint: str, progress: bool) -> Path:
    # Set before huggingface_hub is imported, which is when it reads it. Telemetry on, it also
    # fetches an "agent harness" list from the hub and reports the environment in its user agent;
    # a local-first tool asks for the file and nothing else. A user's own setting wins.
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    from .. import __version__

    staging = model_dir() / STAGING / hf.owner / hf.repo
    bars_were_off = are_progress_bars_disabled()
    if not progress:
        disable_progress_bars()
    try:
        staged = Path(
            hf_hub_download(
                hf.repo_id,
                hf.filename,
                local_dir=staging,
                endpoint=endpoint,
                library_name="tansaku",
                library_version=__version__,
            )
        )
    except LocalEntryNotFoundError as exc:  # the hub went away after the probe answered
        raise _offline(endpoint, "the connection failed", {ref.role: file_url(hf, endpoint)}) from exc
    except GatedRepoError as exc:
        login = "accept its licence on the hub, log in (`hf auth login` or HF_TOKEN) and pull again, or "
        raise _failed(ref, hf, endpoint, "the repository is gated", login + MANUAL_HINT) from exc
    except RepositoryNotFoundError as exc:
        raise _failed(ref, hf, endpoint, "the repository does not exist (or is private)") from exc
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise _failed(ref, hf, endpoint, f"the hub answered HTTP {status}") from exc
    except Exception as exc:  # network, disk and size errors: report them, don't trace back
        raise _failed(ref, hf, endpoint, f"{type(exc).__name__}: {exc}") from exc
    finally:
        if not progress and not bars_were_off:
            enable_progress_bars()
    if not is_gguf(staged):
        staged.unlink(missing_ok=True)
        raise _failed(
            ref, hf, endpoint, "the file is not GGUF (it does not start with 'GGUF'); it was deleted"
        )
    ref.local_path.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staged, ref.local_path)
    return ref.local_path


def _failed(
    ref: ModelRef, hf: HfFile, endpoint: str, reason: str, hint: str = MANUAL_HINT
) -> ModelDownloadFailed:
    return ModelDownloadFailed(
        f"could not download the {ref.role} model {ref.reference}: {reason}",
        hint=hint,
        url=file_url(hf, endpoint),
    )
