"""The facade's collection methods: adding a folder as a collection, listing, renaming and
removing them, and their settings. The config changes are config/collections.py's; the index rows
go through store/. Mixed into api.Tansaku (``self`` is an api_facade.Facade).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from .config.selection import find_collection

if TYPE_CHECKING:
    from .api_facade import Facade
    from .index.progress import ProgressFactory
    from .types import Collection, CollectionInfo, UpdateReport


class CollectionMethods:
    def add_collection(
        self: Facade,
        path: str,
        *,
        name: str | None = None,
        masks: Sequence[str] = (),
        ignore: Sequence[str] = (),
        chunk_strategy: str = "regex",
        dry_run: bool = False,
        progress: ProgressFactory | None = None,
        formats: Sequence[str] = (),
    ) -> UpdateReport:
        """``formats`` (pdf, html, docx, epub) add their masks to ``masks``, or to the default
        ``**/*.md`` when no mask is given."""
        from .config.collections import files_collection

        collection = files_collection(
            path,
            cwd=self.cwd or os.getcwd(),
            name=name,
            masks=masks,
            ignore=ignore,
            chunk_strategy=chunk_strategy,
            formats=formats,
        )
        return self._register(collection, dry_run=dry_run, progress=progress)

    def _register(
        self: Facade, collection: Collection, *, dry_run: bool, progress: ProgressFactory | None
    ) -> UpdateReport:
        """Index a new collection, then save it in the config (a dry run saves nothing)."""
        from .config.collections import overlap_notices, with_new_collection

        config = self.config()
        new_config = with_new_collection(config, collection)
        overlaps = overlap_notices(config, collection)
        # Index first, register after: if indexing raises (a locked or damaged index), the config
        # is untouched and simply retrying the add works instead of failing with COLLECTION_EXISTS.
        report = self._update(
            new_config, [collection.name], dry_run=dry_run, run_hooks=False, progress=progress
        )
        if not dry_run:
            self._save_config(config, new_config, "collection add")
        if overlaps:
            report = replace(report, warnings=[*overlaps, *report.warnings])
        return report

    def collections(self: Facade) -> list[CollectionInfo]:
        from .inspect.status import collection_list

        return collection_list(self.config(), self.config_path, self.backend)

    def collection(self: Facade, name: str) -> CollectionInfo:
        find_collection(self.config(), name)
        return next(info for info in self.collections() if info.collection.name == name)

    def rename_collection(self: Facade, old: str, new: str) -> Collection:
        from .config.collections import renamed

        config = self.config()
        new_config, collection = renamed(config, old, new)
        saved = False
        if self.backend.exists():
            from .store.backend import documents

            with self._writer("collection rename") as conn:
                documents.rename_collection(conn, old, new)
                if saved := self._lists_in_index:  # the list changes in the same transaction
                    self._save_config(config, new_config, conn=conn)
        if not saved:
            self._save_config(config, new_config, "collection rename")
        return collection

    def remove_collection(self: Facade, name: str) -> int:
        """Unregister a collection and drop its index rows. Its files are never touched."""
        from .config.collections import without

        config = self.config()
        new_config = without(config, name)
        removed = 0
        saved = False
        if self.backend.exists():
            from .store.backend import removal

            with self._writer("collection remove") as conn:
                removed = removal.delete_collection(conn, name)
                if saved := self._lists_in_index:  # the list changes in the same transaction
                    self._save_config(config, new_config, conn=conn)
        if not saved:
            self._save_config(config, new_config, "collection remove")
        return removed

    def set_include(self: Facade, name: str, include: bool) -> Collection:
        config = self.config()
        updated = replace(find_collection(config, name), include=include)
        self._save_config(config, config.with_collection(updated))
        return updated

    def set_update_command(self: Facade, name: str, command: str | None) -> Collection:
        config = self.config()
        updated = replace(find_collection(config, name), update=(command or None))
        self._save_config(config, config.with_collection(updated))
        return updated

    def set_chunk_strategy(self: Facade, name: str, strategy: str) -> Collection:
        from .config.collections import chunk_strategy_set

        config = self.config()
        updated = chunk_strategy_set(config, name, strategy)
        self._save_config(config, config.with_collection(updated))
        return updated
