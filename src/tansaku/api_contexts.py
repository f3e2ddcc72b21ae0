"""The facade's context methods: notes attached to a path, kept with the index's collections
(its config file, or its database's list: api_lists.py) apart from the documents
(config/contexts.py). Mixed into api.Tansaku (``self`` is an api_facade.Facade).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .config.contexts import missing_contexts, normalize_context_path
from .errors import ContextNotFound, UsageError
from .store.backend import documents as store

if TYPE_CHECKING:
    from .api_facade import Facade
    from .types import Context


class ContextMethods:
    def add_context(self: Facade, path: str, text: str) -> Context:
        from .types import Context

        if not text.strip():
            raise UsageError("context text is empty")
        config = self.config()
        key = normalize_context_path(path, config.collections, self.cwd)
        contexts = dict(config.contexts)
        contexts[key] = text.strip()
        self._save_config(config, replace(config, contexts=contexts), "context")
        return Context(key, text.strip())

    def contexts(self: Facade) -> list[Context]:
        return self.config().context_list()

    def remove_context(self: Facade, path: str) -> Context:
        from .types import Context

        config = self.config()
        key = path if path in config.contexts else normalize_context_path(path, config.collections, self.cwd)
        if key not in config.contexts:
            raise ContextNotFound(f"no context at {key!r}", hint="see `tansaku context list`")
        contexts = dict(config.contexts)
        text = contexts.pop(key)
        self._save_config(config, replace(config, contexts=contexts), "context")
        return Context(key, text)

    def check_contexts(self: Facade) -> list[str]:
        """Collections and top-level folders that have no context yet (as virtual paths)."""
        paths: list[tuple[str, str]] = []
        if self.backend.exists():
            with self._reader() as conn:
                paths = store.all_paths(conn)
        return missing_contexts(self.config(), paths)
