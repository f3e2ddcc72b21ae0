"""`session read`: a session's turns in file order, with ids, roles, times and source lines.

Bounded like `multi-get`: messages are returned whole while they fit ``max_bytes`` (UTF-8 bytes of
their text) and ``limit``; the first one that does not fit ends the page, and ``next_line`` says
where the next page starts. The text is what was indexed (secrets redacted) unless ``raw`` asks
for the source file's own text, which is read and parsed again for that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import AmbiguousDocid, DocumentNotFound
from ..paths import VIRTUAL_PREFIX, virtual_path
from ..search.hits import disk_path
from ..store import transcripts as tstore
from ..types import Collection, Notice

DEFAULT_LIMIT = 50
DEFAULT_MAX_BYTES = 64 * 1024


def resolve_session(conn: Any, ref: str, collections: Mapping[str, Collection]) -> tstore.StoredSession:
    """A session by id (or a unique id prefix), by ``COLLECTION/PATH`` or by ``tansaku://`` path."""
    names = [name for name, c in collections.items() if c.type != "files"]
    if not names:
        raise DocumentNotFound(
            "no transcript collections are configured", hint="see `tansaku collection add --type`"
        )
    text = ref.strip()
    path_ref = text.removeprefix(VIRTUAL_PREFIX)
    if "/" in path_ref:
        name, _, rel = path_ref.partition("/")
        rel = rel.rsplit(":", 1)[0] if rel.rsplit(":", 1)[-1].isdigit() else rel
        if name in names:
            found = tstore.session_at(conn, name, rel)
            if found is not None:
                return found
    matches = tstore.session_by_id(conn, names, text)
    if len(matches) > 1:
        # A parent session's id is a prefix of its sub-agents' ids: a prefix names the parent.
        top = [m for m in matches if "/" not in m.session_id[len(text) :]]
        matches = top if len(top) == 1 else matches
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        listed = ", ".join(m.session_id for m in matches[:5])
        raise AmbiguousDocid(f"{ref!r} names {len(matches)} sessions: {listed}", hint="give more of the id")
    raise DocumentNotFound(f"no session {ref!r}", hint="session ids and paths are shown by `tansaku search`")


def read_ref(
    conn: Any,
    ref: str,
    collections: Mapping[str, Collection],
    *,
    from_line: int = 1,
    limit: int | None = None,
    run: int | None = None,
    max_bytes: int | None = None,
    raw: bool = False,
) -> Any:
    """`session read REF`: the session ``ref`` names, read as :func:`read_session` reads it. Here
    an unset (or zero) ``limit`` or ``max_bytes`` means the default bound, never no bound."""
    session = resolve_session(conn, ref, collections)
    return read_session(
        conn,
        session,
        collections,
        from_line=from_line,
        limit=limit or DEFAULT_LIMIT,
        run=run,
        max_bytes=max_bytes or DEFAULT_MAX_BYTES,
        raw=raw,
    )


def read_session(
    conn: Any,
    session: tstore.StoredSession,
    collections: Mapping[str, Collection],
    *,
    from_line: int = 1,
    limit: int | None = DEFAULT_LIMIT,
    run: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    raw: bool = False,
) -> Any:
    from ..types import SessionMessage, SessionRead

    collection = collections[session.collection]
    turns = tstore.session_turns(
        conn, session.doc_id, from_line=from_line, run=run, limit=None if limit is None else limit + 1
    )
    warnings: list[Notice] = []
    texts: dict[str, str] | None = None
    if raw:
        texts = _raw_texts(collection, session)
        if texts is None:
            warnings.append(
                Notice("SOURCE_MISSING", "the source file cannot be read: showing the indexed text")
            )
    messages: list[Any] = []
    used = 0
    truncated = False
    next_line: int | None = None
    for position, turn in enumerate(turns):
        text = texts.get(turn.turn_id, turn.text) if texts is not None else turn.text
        size = len(text.encode("utf-8"))
        if (limit is not None and position >= limit) or used + size > max_bytes:
            truncated, next_line = True, turn.line
            if not messages:
                warnings.append(
                    Notice(
                        "MESSAGE_TOO_LARGE",
                        f"the message at line {turn.line} is {size} bytes, over --max-bytes {max_bytes}",
                    )
                )
            break
        used += size
        messages.append(
            SessionMessage(
                turn_id=turn.turn_id,
                line=turn.line,
                role=turn.role,
                kind=turn.kind,
                timestamp=turn.timestamp,
                run_index=turn.run_index,
                tool_name=turn.tool_name,
                text=text,
            )
        )
    prompts = tstore.run_prompts(conn, session.doc_id, {m.run_index for m in messages})
    return SessionRead(
        collection=session.collection,
        session_id=session.session_id,
        path=session.path,
        virtual_path=virtual_path(session.collection, session.path),
        disk_path=disk_path(collection, session.path),
        project=session.project,
        title=session.title or session.doc_title,
        parent_session_id=session.parent_session_id,
        source_format=session.source_format,
        first_timestamp=session.first_timestamp,
        last_timestamp=session.last_timestamp,
        total_turns=tstore.session_turn_count(conn, session.doc_id),
        messages=tuple(messages),
        runs=tuple(sorted(prompts.items())),
        truncated=truncated,
        next_line=next_line,
        max_bytes=max_bytes,
        raw=raw and texts is not None,
        warnings=tuple(warnings),
    )


def _raw_texts(collection: Collection, session: tstore.StoredSession) -> dict[str, str] | None:
    from ..sources.transcripts.formats import parser_for

    try:
        with open(disk_path(collection, session.path), "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    report = parser_for(collection.type)(data, session.path)
    return {turn.id: turn.text for turn in report.turns}
