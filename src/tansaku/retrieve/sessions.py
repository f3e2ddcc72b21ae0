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
from ..store.backend import transcripts as tstore
from ..types import Collection, Notice

DEFAULT_LIMIT = 50
DEFAULT_MAX_BYTES = 64 * 1024
DEFAULT_CONTEXT = 3  # turns before and after the one `get` shows
# How many turns before a page a tool result's call is looked for, when the page starts among
# a batch of results.
CALL_LOOKBACK = 16


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
    collection = collections[session.collection]
    turns = tstore.session_turns(
        conn, session.doc_id, from_line=from_line, run=run, limit=None if limit is None else limit + 1
    )
    warnings: list[Notice] = []
    texts = _source_texts(collection, session, warnings) if raw else None
    answered = answered_tools(conn, session.doc_id, turns)
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
        messages.append(_message(turn, text, answered.get(turn.seq)))
    if truncated and messages and messages[-1].line == next_line:
        # The page would end inside a source line (a record holds several blocks), and the next
        # page, starting at that line, would repeat its first blocks: end the page before it.
        # When that line's blocks alone overflow the page, the next page starts after the line
        # (a page never repeats one) and a warning names the blocks left out.
        whole = [m for m in messages if m.line != next_line]
        if whole:
            messages = whole
        else:
            rest = tstore.session_turns(conn, session.doc_id, from_line=next_line + 1, run=run, limit=1)
            left = sum(1 for t in turns[len(messages) :] if t.line == next_line)
            warnings.append(
                Notice(
                    "LINE_SPLIT",
                    f"line {next_line} holds more blocks than fit one page: {len(messages)} shown, at least"
                    f" {left} more left out; raise --limit or --max-bytes to read them all",
                )
            )
            next_line = rest[0].line if rest else None
            truncated = next_line is not None
    return _result(conn, session, collection, messages, truncated, next_line, max_bytes, raw, texts, warnings)


def answered_tools(conn: Any, doc_id: int, turns: list[tstore.TurnView]) -> dict[int, str]:
    """seq -> the tool a result without a tool name answers, for the results among ``turns``.

    A transcript links a result to its call by an id the index does not keep, but the calls
    come just before their results (one call, or a batch of calls and then their results). A
    result is given the calls' tool only when every call of its batch names the same one: with
    Bash and Read called together, which result is whose is a guess, and a wrong tool name is
    worse than none.
    """
    by_seq = {turn.seq: turn for turn in turns}
    fetched = False
    answered: dict[int, str] = {}
    for turn in turns:
        if turn.kind != "tool_result" or turn.tool_name:
            continue
        names: set[str] = set()
        calls = 0
        seq = turn.seq - 1
        while seq >= 0:
            before = by_seq.get(seq)
            if before is None:
                if fetched:
                    calls = 0  # the batch starts before what was looked at: unknown
                    break
                first = turns[0].seq
                earlier = tstore.turns_by_seq(conn, doc_id, max(0, first - CALL_LOOKBACK), first - 1)
                by_seq.update((t.seq, t) for t in earlier)
                fetched = True
                continue
            if before.kind == "tool_call":
                calls += 1
                names.add(before.tool_name or "")  # a call without a name makes the batch unknown
            elif not (before.kind == "tool_result" and not calls):
                break  # past the batch: an earlier result, or a turn that is not a call
            seq -= 1
        if calls and len(names) == 1 and "" not in names:
            answered[turn.seq] = next(iter(names))
    return answered


def _message(turn: tstore.TurnView, text: str, answers: str | None = None) -> Any:
    from ..types import SessionMessage

    return SessionMessage(
        turn_id=turn.turn_id,
        line=turn.line,
        role=turn.role,
        kind=turn.kind,
        timestamp=turn.timestamp,
        run_index=turn.run_index,
        tool_name=turn.tool_name or answers,
        text=text,
    )


def _result(
    conn: Any,
    session: tstore.StoredSession,
    collection: Collection,
    messages: list[Any],
    truncated: bool,
    next_line: int | None,
    max_bytes: int,
    raw: bool,
    texts: dict[str, str] | None,
    warnings: list[Notice],
    focus_line: int | None = None,
) -> Any:
    from ..types import SessionRead

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
        focus_line=focus_line,
    )


def _source_texts(collection: Collection, session: tstore.StoredSession, warnings: list[Notice]) -> Any:
    texts = _raw_texts(collection, session)
    if texts is None:
        warnings.append(Notice("SOURCE_MISSING", "the source file cannot be read: showing the indexed text"))
    return texts


def read_around(
    conn: Any,
    session: tstore.StoredSession,
    collections: Mapping[str, Collection],
    line: int,
    *,
    context: int = DEFAULT_CONTEXT,
    max_messages: int | None = None,
    max_bytes: int,
    raw: bool = False,
) -> Any:
    """`get` on a turn's path (``SESSION.jsonl:LINE``): the turns at source line ``line`` (the
    blocks of one record share it), with up to ``context`` turns before and after them, nearest
    first while they fit ``max_messages`` and ``max_bytes``. The focused turns are always shown;
    one larger than ``max_bytes`` alone is cut there (MESSAGE_CUT). Without a turn at ``line``
    the nearest turn is focused (NO_TURN_AT_LINE)."""
    collection = collections[session.collection]
    warnings: list[Notice] = []
    found = tstore.focus_seqs(conn, session.doc_id, line)
    if found is None:
        raise DocumentNotFound(f"session {session.session_id} has no turns", hint="nothing was indexed in it")
    first, last, focus = found
    if focus != line:
        warnings.append(
            Notice("NO_TURN_AT_LINE", f"line {line} holds no turn: showing line {focus}, the nearest")
        )
    turns = tstore.turns_by_seq(conn, session.doc_id, max(0, first - context), last + context)
    texts = _source_texts(collection, session, warnings) if raw else None

    def text_of(turn: tstore.TurnView) -> str:
        return texts.get(turn.turn_id, turn.text) if texts is not None else turn.text

    focused = [t for t in turns if first <= t.seq <= last]
    before = [t for t in turns if t.seq < first][::-1]
    after = [t for t in turns if t.seq > last]
    chosen: dict[int, str] = {}
    used = 0
    for turn in focused:
        text = text_of(turn)
        room = max_bytes - used
        if len(text.encode("utf-8")) > room:
            text = _cut(text, room)
            warnings.append(
                Notice(
                    "MESSAGE_CUT",
                    f"the message at line {turn.line} is over --max-bytes {max_bytes}: cut there;"
                    " read it whole with `tansaku session read` and a larger --max-bytes",
                )
            )
        chosen[turn.seq] = text
        used += len(text.encode("utf-8"))
    limit = max_messages if max_messages is not None else len(turns)
    for turn in (t for pair in _alternate(before, after) for t in pair):
        text = text_of(turn)
        size = len(text.encode("utf-8"))
        if len(chosen) >= limit or used + size > max_bytes:
            break
        chosen[turn.seq] = text
        used += size
    shown = [t for t in turns if t.seq in chosen]
    answered = answered_tools(conn, session.doc_id, turns)
    messages = [_message(t, chosen[t.seq], answered.get(t.seq)) for t in shown]
    next_seq = shown[-1].seq + 1
    more = tstore.turns_by_seq(conn, session.doc_id, next_seq, next_seq)
    next_line = more[0].line if more else None
    return _result(
        conn,
        session,
        collection,
        messages,
        next_line is not None,
        next_line,
        max_bytes,
        raw,
        texts,
        warnings,
        focus_line=focus,
    )


def turn_window(
    conn: Any,
    doc: Any,  # store.documents.StoredDocument
    collections: Mapping[str, Collection],
    bounds: Any,  # retrieve.get.LineRange: from_line is the source line, max_lines caps the messages
    *,
    context: int | None,
    raw: bool,
) -> Any:
    """`get` on a document of a transcript collection with a line: :func:`read_around` its session."""
    session = tstore.session_at(conn, doc.collection, doc.path)
    if session is None:
        raise DocumentNotFound(f"{virtual_path(doc.collection, doc.path)} is not an indexed session")
    return read_around(
        conn,
        session,
        collections,
        bounds.from_line,
        context=DEFAULT_CONTEXT if context is None else context,
        max_messages=bounds.max_lines,
        max_bytes=bounds.max_bytes,
        raw=raw,
    )


def _alternate(before: list[Any], after: list[Any]) -> list[list[Any]]:
    """[b1, a1], [b2, a2], ...: the nearest turn on each side first."""
    pairs: list[list[Any]] = []
    for i in range(max(len(before), len(after))):
        pairs.append([*before[i : i + 1], *after[i : i + 1]])
    return pairs


def _cut(text: str, max_bytes: int) -> str:
    """At most ``max_bytes`` UTF-8 bytes of ``text``, ending at a line break when there is one."""
    head = text.encode("utf-8")[: max(max_bytes, 0)].decode("utf-8", errors="ignore")
    return head.rsplit("\n", 1)[0] if "\n" in head else head


def _raw_texts(collection: Collection, session: tstore.StoredSession) -> dict[str, str] | None:
    from ..sources.transcripts.formats import parser_for

    try:
        with open(disk_path(collection, session.path), "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    report = parser_for(collection.type)(data, session.path)
    return {turn.id: turn.text for turn in report.turns}
