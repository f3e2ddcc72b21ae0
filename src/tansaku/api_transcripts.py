"""The facade's agent-transcript methods (Claude Code, Codex): adding such a collection, search
and vsearch by turn, run, session or project, and reading a session. Mixed into api.Tansaku
(``self`` is an api_facade.Facade), whose other methods these call; the work is in
config/transcripts.py, search/transcripts.py and retrieve/sessions.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .config.selection import files_only, searched_collections

if TYPE_CHECKING:
    from .api_facade import Facade
    from .index.progress import ProgressFactory
    from .types import SearchResult, UpdateReport


class TranscriptMethods:
    def add_transcript_collection(
        self: Facade,
        collection_type: str,
        path: str | None = None,
        *,
        name: str | None = None,
        masks: Sequence[str] = (),
        ignore: Sequence[str] = (),
        redact: bool = True,
        dry_run: bool = False,
        progress: ProgressFactory | None = None,
    ) -> UpdateReport:
        """`collection add --type claude|codex [PATH]`: indexed now, registered after (as files)."""
        from .config.transcripts import transcript_collection

        collection = transcript_collection(
            collection_type,
            path,
            cwd=self.cwd or os.getcwd(),
            name=name,
            masks=masks,
            ignore=ignore,
            redact=redact,
        )
        return self._register(collection, dry_run=dry_run, progress=progress)

    def search_levels(
        self: Facade,
        query: str,
        *,
        collections: Sequence[str] = (),
        level: str | None = None,
        roles: Sequence[str] = (),
        since: str | None = None,
        until: str | None = None,
        project: str | None = None,
        limit: int | None = 5,
        min_score: float = 0.0,
        full: bool = False,
        where: Sequence[str] = (),
        fields: bool = False,
        all_copies: bool = False,
    ) -> SearchResult:
        """`search` with transcript levels and filters: transcript collections are searched by turn
        and aggregated to ``level`` (default turn), file collections as by :meth:`search`. With
        ``where`` only file collections are searched (transcripts have no front matter)."""
        from .search import transcripts as turns

        config = self.config()
        plain = {
            "limit": limit,
            "min_score": min_score,
            "full": full,
            "where": where,
            "fields": fields,
            "all_copies": all_copies,
        }
        scope = self._file_scope(collections, where)
        if scope is not None:
            result = self.search(query, collections=scope[0], **plain)
            return replace(result, warnings=(*scope[1], *result.warnings))
        if files_only(config, collections):
            return self.search(query, collections=collections, **plain)
        chosen, warnings = searched_collections(config, collections)
        result = turns.search_levels(
            self._reader,
            chosen,
            warnings,
            config.contexts,
            lambda files: self.search(
                query, collections=files, limit=limit, min_score=min_score, full=full, all_copies=all_copies
            ),
            query=query,
            level=level,
            roles=roles,
            since=since,
            until=until,
            project=project,
            limit=limit,
            min_score=min_score,
            full=full,
        )
        return self._fields_added(result, fields)  # sessions have none: `{}`

    def vsearch_levels(
        self: Facade,
        query: str,
        *,
        collections: Sequence[str] = (),
        level: str | None = None,
        roles: Sequence[str] = (),
        since: str | None = None,
        until: str | None = None,
        project: str | None = None,
        limit: int | None = 5,
        min_score: float = 0.3,
        full: bool = False,
        verbose: bool = False,
        where: Sequence[str] = (),
        fields: bool = False,
        all_copies: bool = False,
    ) -> SearchResult:
        """`vsearch` with transcript levels and filters, as :meth:`search_levels` for `search`."""
        from .search import transcripts as turns

        plain = {
            "min_score": min_score,
            "full": full,
            "verbose": verbose,
            "where": where,
            "fields": fields,
            "all_copies": all_copies,
        }
        scope = self._file_scope(collections, where) if query.strip() else None
        if scope is not None:
            result = self.vsearch(query, collections=scope[0], limit=limit, **plain)
            return replace(result, warnings=(*scope[1], *result.warnings))
        if files_only(self.config(), collections) or not query.strip():
            return self.vsearch(query, collections=collections, limit=limit, **plain)
        request = turns.turn_query(query, level, roles, since, until, project, limit, min_score, full)
        found = self.vector_search_texts(
            [query], collections, limit, min_score, full, True, verbose, request, all_copies=all_copies
        )
        from .search.vector_texts import with_unreadable_warning

        return self._fields_added(
            with_unreadable_warning(found.results[0], found.unreadable_shares[0]), fields
        )

    def read_session(
        self: Facade,
        ref: str,
        *,
        from_line: int = 1,
        limit: int | None = None,
        run: int | None = None,
        max_bytes: int | None = None,
        raw: bool = False,
    ) -> Any:
        """`session read`: a session's messages in file order, bounded (retrieve/sessions.py)."""
        from .retrieve.sessions import read_ref

        config = self.config()
        with self._reader() as conn:
            return read_ref(
                conn,
                ref,
                config.collections,
                from_line=from_line,
                limit=limit,
                run=run,
                max_bytes=max_bytes,
                raw=raw,
            )
