"""`update --watch`: update once, then again whenever files of the watched collections change.

Explicit and in the foreground: nothing watches unless the user starts it, and Ctrl-C (or the
``stop`` event) ends it. Changes are seen with the watchfiles library (the ``watch`` extra) and
gathered for ``debounce_ms``; then only the collections whose files changed are updated, each by
the ordinary incremental update (a transcript that only grew is read from where the last update
stopped). A change to a file the collection's masks leave out does not wake it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..config.masks import MaskMatcher, expand_masks
from ..errors import UsageError
from ..types import Collection, UpdateReport

DEFAULT_DEBOUNCE_MS = 300
WAKE_MS = 500  # the watcher wakes this often even without changes (the first wake-up updates)


def _watchfiles() -> Any:
    try:
        import watchfiles
    except ImportError:
        raise UsageError(
            "`update --watch` needs the watchfiles library",
            hint="pip install 'tansaku[watch]'",
        ) from None
    return watchfiles


class _Matchers:
    """Which collections a changed path belongs to (by folder, masks and ignore masks)."""

    def __init__(self, collections: Sequence[Collection]) -> None:
        self._roots = [
            (
                c.name,
                Path(c.path).resolve(),
                MaskMatcher(expand_masks(c.masks)),
                MaskMatcher(expand_masks(c.ignore)) if c.ignore else None,
            )
            for c in collections
        ]

    def owners(self, path: str) -> list[str]:
        found: list[str] = []
        target = Path(path).resolve()
        for name, root, masks, ignore in self._roots:
            try:
                rel = target.relative_to(root).as_posix()
            except ValueError:
                continue
            if masks.matches(rel) and not (ignore and ignore.matches(rel)):
                found.append(name)
        return found


def watch(
    collections: Sequence[Collection],
    update: Callable[[Sequence[str], bool], UpdateReport],
    on_update: Callable[[UpdateReport], None],
    *,
    stop: threading.Event | None = None,
    debounce_ms: int = DEFAULT_DEBOUNCE_MS,
) -> int:
    """Run ``update(names, True)`` for all ``collections`` now, then ``update(changed, False)`` for
    those whose files change, until ``stop`` is set or Ctrl-C (KeyboardInterrupt, which is not
    raised: this returns). The flag says whether to run the pre-update hooks: only the first time
    (a hook such as `git pull` changes files, which must not set off the next update and the next
    hook). Each report goes to ``on_update``. Returns how many updates ran."""
    watchfiles = _watchfiles()
    names = [c.name for c in collections]
    folders = [c.path for c in collections if Path(c.path).is_dir()]
    if not folders:
        raise UsageError("no collection folder to watch", hint="see `tansaku collection list`")
    matchers = _Matchers(collections)
    runs = 0
    try:
        # The first update runs at the first wake-up, when the folders are watched already: a
        # file that changes while it runs (or before it) is seen by the next one, never missed.
        for changes in watchfiles.watch(
            *folders,
            watch_filter=lambda _change, path: bool(matchers.owners(path)),
            debounce=debounce_ms,
            stop_event=stop,
            rust_timeout=WAKE_MS,
            yield_on_timeout=True,
            raise_interrupt=True,
        ):
            if runs == 0:
                on_update(update(names, True))
            else:
                changed = _changed(matchers, (path for _change, path in changes))
                if not changed:
                    continue
                on_update(update([n for n in names if n in changed], False))
            runs += 1
    except KeyboardInterrupt:
        pass
    return runs


def _changed(matchers: _Matchers, paths: Iterable[str]) -> set[str]:
    return {name for path in paths for name in matchers.owners(path)}
