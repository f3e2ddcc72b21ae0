"""What the facade's mixins (api_*.py) ask of the object they are mixed into: ``api.Tansaku``.

The mixins type ``self`` with this protocol instead of importing api.py (which imports them), so
imports point one way: api.py -> api_*.py -> api_facade.py. A member a mixin starts to use is
added here; api.Tansaku (with its mixins) has every one.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .config import settings
    from .index.progress import ProgressFactory
    from .inspect.summary import SummaryCache
    from .paths import Locations
    from .store.backend import Backend
    from .types import Collection, Notice, SearchResult, UpdateReport


class Facade(Protocol):
    cwd: str | None
    locations: Locations
    keep_connections: bool
    _creating: threading.Lock
    _summaries: SummaryCache | None
    _from_file: Any

    @property
    def backend(self) -> Backend: ...

    @property
    def config_path(self) -> Path: ...

    def config(self) -> settings.Config: ...

    def _reader(self) -> contextlib.AbstractContextManager[Any]: ...

    def _writer(self, command: str) -> contextlib.AbstractContextManager[Any]: ...

    def _lists_in_index(self) -> bool: ...

    def _save_config(
        self, old: settings.Config, new: settings.Config, command: str = ..., conn: Any = None
    ) -> None: ...

    def _register(
        self, collection: Collection, *, dry_run: bool, progress: ProgressFactory | None
    ) -> UpdateReport: ...

    def _update(self, config: settings.Config, names: Sequence[str], **how: Any) -> UpdateReport: ...

    def search(self, query: str, **options: Any) -> SearchResult: ...

    def vsearch(self, query: str, **options: Any) -> SearchResult: ...

    def vector_search_texts(self, texts: Sequence[str], *args: Any, **options: Any) -> Any: ...

    def _fields_added(self, result: SearchResult, fields: bool) -> SearchResult: ...

    def _file_scope(
        self, collections: Sequence[str], where: Sequence[str]
    ) -> tuple[list[str], list[Notice]] | None: ...
