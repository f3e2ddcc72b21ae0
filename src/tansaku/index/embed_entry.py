"""`embed` from the top: the settings checked before any model loads, then the run on this
machine (index/embed.py) or through an endpoint (index/remote_embed.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..store.backend import Backend
from ..types import Collection, EmbedReport
from .progress import ProgressFactory


def embed_index(
    backend: Backend,
    config_path: Path,
    chosen: Sequence[Collection],
    *,
    force: bool = False,
    progress: ProgressFactory | None = None,
    verbose: bool = False,
    consent: bool = False,
    quick: str = "auto",
) -> EmbedReport:
    """Embed the chunks of ``chosen`` that have no vector for the configured model (all of them
    with ``force``).

    ``quick``: "auto" gives every pending chunk a quick vector (index/quick_digest.py) first when
    many are pending, so vsearch and query are useful long before the full pass ends; "only"
    stops after that pass; "off" never makes one (index/embed.py: QuickPass).

    An endpoint on another machine first needs the person's consent to send chunk text there:
    ``consent`` gives it (and records it), or ``[models] remote_ok`` in the config."""
    from ..models.embedding import embed_model, embedder_for, prompt_format_of
    from ..models.threads import resolve_threads
    from .embed import QuickPass, embed_budget_setting, embed_collections

    embed_budget_setting()  # a bad TANSAKU_EMBED_BUDGET is refused before any model loads
    threads = resolve_threads(config_path).batch
    quick_pass = QuickPass.from_setting(quick)
    ref = embed_model(config_path)
    prompt = prompt_format_of(ref, config_path)
    if not backend.exists():
        with backend.reading():  # raises INDEX_MISSING with its hint
            pass
    if ref.endpoint is not None:
        from .remote_embed import embed_remote

        return embed_remote(
            backend, config_path, ref, chosen, prompt,
            force=force, progress=progress, consent=consent,
        )  # fmt: skip
    return embed_collections(
        backend,
        chosen,
        str(ref.local_path),
        prompt,
        lambda: embedder_for(ref, config_path, threads=threads, verbose=verbose),
        force=force,
        progress=progress,
        quick=quick_pass,
    )
