"""The "cli" text of the non-search results: update, status, collections, ls, contexts, messages."""

from __future__ import annotations

import unicodedata
from typing import Any

from tansaku.render.shared import RenderOptions, duration_words, show_docid
from tansaku.render.terminal import clean, warning_lines
from tansaku.types import (
    Collection,
    CollectionInfo,
    CollectionUpdate,
    Context,
    DoctorCheck,
    EmbedReport,
    FileEntry,
    HookRun,
    StatusReport,
    UpdateReport,
)


def render(result: object, opts: RenderOptions) -> str:
    if isinstance(result, UpdateReport):
        lines = _update(result)
    elif isinstance(result, EmbedReport):
        lines = _embed(result)
    elif isinstance(result, StatusReport):
        lines = _status(result)
    elif isinstance(result, CollectionInfo):
        lines = _collection(result)
    elif isinstance(result, dict):
        lines = _message(result)
    elif not result:
        lines = ["(none)"]
    elif isinstance(result[0], CollectionInfo):  # type: ignore[index]
        lines = _collections(list(result))  # type: ignore[arg-type]
    elif isinstance(result[0], FileEntry):  # type: ignore[index]
        lines = _files(list(result))  # type: ignore[arg-type]
    elif isinstance(result[0], DoctorCheck):  # type: ignore[index]
        from tansaku.render.doctor import doctor_lines

        lines = doctor_lines(list(result), opts)  # type: ignore[arg-type]
    else:
        lines = _contexts(list(result))  # type: ignore[arg-type]
    return "\n".join(lines) + "\n"


def _width(text: str) -> int:
    # CJK characters take two terminal columns; padding by len() would skew the columns.
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def table(rows: list[list[str]], right: frozenset[int] = frozenset()) -> list[str]:
    widths = [max(_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - _width(cell))
            last = i == len(row) - 1
            cells.append(pad + cell if i in right else cell + ("" if last else pad))
        out.append("  ".join(cells).rstrip())
    return out


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"  # unreachable; keeps type checkers content


def when(iso: str | None) -> str:
    # "2024-05-01T12:34:56Z" -> "2024-05-01 12:34": minutes are enough to read, and it is UTC.
    if not iso:
        return "never"
    return iso[:16].replace("T", " ") if len(iso) >= 16 and iso[10] == "T" else iso


def _hook_lines(hook: HookRun, indent: str) -> list[str]:
    lines = [f"{indent}hook: {clean(hook.command)} (exit {hook.exit_code})"]
    lines += [f"{indent}  | {clean(line)}" for line in hook.stdout.splitlines()]
    lines += [f"{indent}  ! {clean(line)}" for line in hook.stderr.splitlines()]
    return lines


def _update_one(c: CollectionUpdate, dry_run: bool) -> list[str]:
    lines = [f"{c.name}: FAILED: {clean(c.failed)}" if c.failed else c.name]
    if c.hook:
        lines += _hook_lines(c.hook, "  ")
    if c.hook_pending:
        lines.append(f"  would run hook: {clean(c.hook_pending)}")
    if dry_run:
        lines += [f"  would add: {clean(p)}" for p in c.added]
        lines += [f"  would update: {clean(p)}" for p in c.updated]
        lines += [f"  would move: {clean(a)} -> {clean(b)}" for a, b in c.moved]
        lines += [f"  would remove: {clean(p)}" for p in c.removed]
        lines += [f"  would read on: {clean(p)}" for p in c.appended]
    if not c.failed:
        lines.append(f"  {update_counts(c, dry_run)}")
    if c.turns:
        lines.append(f"  indexed {c.turns} turns")
    if c.redactions:
        kinds = ", ".join(f"{kind} {n}" for kind, n in c.redactions.items())
        lines.append(f"  redacted {sum(c.redactions.values())} secrets ({kinds})")
    if not dry_run and not c.failed and (c.chunked or (c.chunks and _changed(c))):
        lines.append(f"  {chunk_counts(c)}")
    lines += [f"  chunking: {clean(w)}" for w in c.chunk_warnings]
    if c.repeated_blocks:
        left = "would leave" if dry_run else "left"
        pages = "1 HTML page" if c.repeated_pages == 1 else f"{c.repeated_pages} HTML pages"
        lines.append(
            f"  {left} out {c.repeated_blocks} blocks the collection's pages repeat"
            f" (menus, banners, footers) from {pages}"
        )
    if not dry_run:
        lines += [f"  moved: {clean(a)} -> {clean(b)}" for a, b in c.moved]
    repaired = "would repair" if dry_run else "repaired"
    lines += [f"  {repaired} (invalid UTF-8 replaced with U+FFFD): {clean(p)}" for p in c.repaired]
    skipped = "would skip" if dry_run else "skipped"
    lines += [f"  {skipped} {clean(s.path)}: {s.reason}" for s in c.skipped]
    lines += ["  " + line for line in warning_lines(c.warnings)]
    return lines


def update_counts(c: CollectionUpdate, dry_run: bool) -> str:
    """``added 3, updated 1, ...``; in a dry run ``would add 3, update 1, ...``: nothing was done."""
    if dry_run:
        counts = (
            f"would add {len(c.added)}, update {len(c.updated)}, move {len(c.moved)}, "
            f"leave {c.unchanged} unchanged, remove {len(c.removed)}, skip {len(c.skipped)}"
        )
        return counts + (f", read on {len(c.appended)}" if c.appended else "")
    counts = (
        f"added {len(c.added)}, updated {len(c.updated)}, moved {len(c.moved)}, "
        f"unchanged {c.unchanged}, removed {len(c.removed)}, skipped {len(c.skipped)}"
    )
    return counts + (f", appended {len(c.appended)}" if c.appended else "")


def chunk_counts(c: CollectionUpdate) -> str:
    """The collection's chunks, the number `status` and `collection show` give, and what is new."""
    if not c.chunked:
        return f"chunks: {c.chunks} (none new)"
    texts = "1 text" if c.chunked == 1 else f"{c.chunked} texts"
    return f"chunks: {c.chunks} ({c.new_chunks} new, from the {texts} chunked in this run)"


def _changed(c: CollectionUpdate) -> bool:
    return bool(c.added or c.updated or c.moved or c.removed or c.appended)


def _update(report: UpdateReport) -> list[str]:
    blocks = [["dry run: nothing was changed"]] if report.dry_run else []
    blocks += [_update_one(c, report.dry_run) for c in report.collections]
    if not report.collections:
        blocks.append(["No collections to update."])
    if report.warnings:
        blocks.append(warning_lines(report.warnings))
    return "\n\n".join("\n".join(block) for block in blocks).split("\n")


def _embed(report: EmbedReport) -> list[str]:
    lines = [f"model: {clean(report.model_path)} ({report.prompt_format} prompts)"]
    if report.dims:
        budget = ""
        if report.budget_tokens:
            budget = f"; each chunk's first {report.budget_tokens} tokens embedded"
        lines.append(f"  {report.dims} dimensions, window {report.window_tokens} tokens{budget}")
    for c in report.collections:
        line = f"{c.name}: {c.pending} chunks pending; embedded {c.embedded}, reused {c.reused}"
        if c.windows:
            line += f", {c.windows} extra windows for long chunks"
        if c.quick:
            line += f"; {c.quick} quick vectors first"
        lines.append(line)
        lines += [f"  failed {clean(f)}" for f in c.failed]
        if c.state_note:
            lines.append(f"  now {clean(c.state_note)}")
    seconds = report.took_ms / 1000
    quick = sum(c.quick for c in report.collections)
    if quick and not any(c.embedded or c.reused for c in report.collections):
        rate = f"{quick / seconds if seconds > 0 else 0.0:.1f} quick vectors/s"  # no full pass ran
    else:
        rate = f"{report.chunks_per_second:.1f} chunks/s ({report.vectors_per_second:.1f} vectors/s)"
    lines.append(f"{rate}, {seconds:.1f} s, peak {report.peak_memory_mb:.0f} MB")
    if report.remote is not None:
        lines.append(_remote_line(report.remote))
    if report.interrupted:
        lines.append("interrupted: finished batches are kept; run `tansaku embed` again to continue")
    if not report.interrupted and any(c.quick and not (c.embedded or c.reused) for c in report.collections):
        lines.append("only quick vectors so far: run `tansaku embed` again to compute the full ones")
    return lines + warning_lines(report.warnings)


def _server(server: Any) -> str:
    if server.pgvector:
        vectors = f"pgvector {server.pgvector}"
    elif server.pgvector_available:
        vectors = f"pgvector {server.pgvector_available} available, not installed in this database"
    else:
        vectors = "no pgvector on the server"
    digits = 1 if server.round_trip_ms >= 0.095 else 2  # a Unix socket's is a few hundredths
    return f"{server.product}, {vectors}, round trip {server.round_trip_ms:.{digits}f} ms"


def _remote_line(spent: dict[str, Any]) -> str:
    """What went to an endpoint and what it cost, as counted here (tokens as the server counted)."""
    tokens = spent.get("prompt_tokens")
    counted = f"{tokens} tokens" if tokens is not None else "tokens not reported by the server"
    retries = spent.get("retries") or 0
    again = f", {retries} retried" if retries else ""
    where = "this machine" if spent.get("loopback") else "another machine"
    return (
        f"sent {spent.get('texts', 0)} texts ({human_size(int(spent.get('bytes_sent', 0)))}) to"
        f" {clean(str(spent.get('endpoint')))} ({where}) in {spent.get('requests', 0)} requests{again};"
        f" {counted}; {float(spent.get('seconds', 0.0)):.1f} s waiting on it"
    )


def _status(s: StatusReport) -> list[str]:
    if not s.index_exists:
        index = f"{s.index_path} (not created yet)"
    else:
        schema = "unknown" if s.schema_version is None else str(s.schema_version)
        if s.schema_version != s.code_schema_version:
            schema += f"; this tansaku expects {s.code_schema_version}"
        index = f"{s.index_path} ({human_size(s.index_bytes)}, schema {schema})"
    lines = [f"index:  {clean(index)}"]
    if s.server is not None:
        lines.append(f"server: {clean(_server(s.server))}")
    lines += [f"config: {clean(s.config_path)}", ""]
    if s.collections:
        rows = [["NAME", "TYPE", "DOCS", "CHUNKED", "CHUNKS", "VECTORS", "LAST UPDATE", "PATH"]]
        rows += [
            [
                i.collection.name,
                i.collection.type,
                str(i.documents),
                str(i.chunked),
                str(i.chunks),
                str(i.vectors)
                + (f" (+{i.quick_vectors} quick)" if i.quick_vectors else "")
                + (f" (+{i.stale_vectors} stale)" if i.stale_vectors else ""),
                when(i.last_update),
                clean(i.collection.path),
            ]
            for i in s.collections
        ]
        lines += ["collections:", *("  " + row for row in table(rows, right=frozenset({2, 3, 4, 5})))]
        notes = [i for i in s.collections if i.chunks and i.vector_state_note]
        if notes:
            lines += ["vectors:", *(f"  {i.collection.name}: {clean(i.vector_state_note)}" for i in notes)]
    else:
        lines.append("collections: (none)")
    if s.contexts:
        lines += ["contexts:", *("  " + line for line in _contexts(list(s.contexts)))]
    lines += ["pending:", *(f"  - {clean(p)}" for p in s.pending)] if s.pending else ["pending: (nothing)"]
    skipping = [info for info in s.collections if info.skipped]
    if skipping:
        # Not pending: `update` would skip them again. A change to one makes it pending.
        lines += [
            "skipped (unchanged since `update` skipped them; `tansaku update --dry-run` lists them):",
            *(f"  - {info.collection.name}: {skipped_words(info)}" for info in skipping),
        ]
    if s.embed_model:
        window = f"{s.embed_window}-token windows" if s.embed_window else "not used by embed yet"
        if s.embed_budget:
            window += f", each chunk's first {s.embed_budget} tokens"
        lines.append(f"embedding model: {clean(s.embed_model)} ({window})")
        if not s.embed_remote:
            lines.append(f"embedding speed: {_speed(s)}")
    else:
        lines.append(
            "embedding model: none on this machine (`tansaku models pull embed` or `models add embed PATH`)"
        )
    if s.model_threads:
        lines.append(f"model threads: {clean(s.model_threads)}")
    if s.settings:
        lines += [
            "settings (flag > env > config > default):",
            *("  " + row for row in setting_rows(s.settings)),
        ]
    if s.grammars:
        have = [name for name, ok in s.grammars if ok]
        missing = [name for name, ok in s.grammars if not ok]
        lines.append("code grammars (--chunk-strategy auto): " + (", ".join(have) or "none installed"))
        if missing:
            lines.append(f"  missing (regex is used for these): {', '.join(missing)}")
    return lines + warning_lines(s.warnings)


def _speed(s: StatusReport) -> str:
    speed = s.embed_speed
    if speed is None:
        return "not measured on this machine yet (`tansaku embed` measures it, and shows an ETA)"
    line = (
        f"{speed.chunks_per_second:.2f} chunks/s ({speed.vectors_per_second:.2f} vectors/s),"
        f" measured {when(speed.measured_at)} over {speed.chunks} chunks"
    )
    pending = sum(info.unembedded for info in s.collections)
    if pending and s.embed_pending_seconds is not None:
        chunks = f"{pending} chunk{'s' if pending != 1 else ''}"
        line += f"; {chunks} without a vector: {duration_words(s.embed_pending_seconds)} at this speed"
    return line


def setting_rows(settings: Any) -> list[str]:
    """One row per setting: name, value, source, and how to set it; an ignored value is flagged."""
    rows = [["NAME", "VALUE", "SOURCE", "SET BY"]]
    for item in settings:
        how = [h for h in (item.flag, item.env, item.config_key) if h]
        value = clean(item.value) + (f" ({clean(item.problem)})" if item.problem else "")
        rows.append([item.name, value, item.source, ", ".join(how)])
    return table(rows)


def _collection(info: CollectionInfo) -> list[str]:
    c = info.collection
    fields = [
        ("name", c.name),
        ("type", _type(c)),
        ("path", clean(c.path)),
        ("masks", ", ".join(c.masks) or "(none)"),
        ("ignore", ", ".join(c.ignore) or "(none)"),
        ("update hook", clean(c.update) if c.update else "(none)"),
        ("included", "yes (searched by default)" if c.include else "no (searched only when named)"),
        ("chunking", c.chunk_strategy),
        ("documents", str(info.documents)),
        ("chunked", f"{info.chunked} documents, {info.chunks} chunks" + _fallbacks(info)),
        ("size", human_size(info.bytes)),
        ("last update", when(info.last_update)),
    ]
    if info.skipped:
        fields.insert(-2, ("skipped", f"{skipped_words(info)}, unchanged since `update` skipped them"))
    return [f"{name + ':':<13}{value}" for name, value in fields]


def skipped_words(info: CollectionInfo) -> str:
    """``2 skipped (corrupt 1, too-large 1)``."""
    reasons = ", ".join(f"{code} {n}" for code, n in info.skipped_reasons.items())
    return f"{info.skipped} skipped ({reasons})"


def _type(c: Collection) -> str:
    if c.type == "files":
        return "files"
    agent = {"claude": "Claude Code", "codex": "Codex"}.get(c.type, c.type)
    redaction = "secrets redacted" if c.redact else "secrets NOT redacted (--no-redact)"
    return f"{c.type} ({agent} session transcripts; {redaction})"


def _fallbacks(info: CollectionInfo) -> str:
    return f" ({info.chunk_fallbacks} fell back to regex)" if info.chunk_fallbacks else ""


def _collections(infos: list[CollectionInfo]) -> list[str]:
    rows = [["NAME", "TYPE", "DOCS", "PATH", "INCLUDED", "MASKS"]]
    for info in infos:
        c = info.collection
        rows.append(
            [
                c.name,
                c.type,
                str(info.documents),
                clean(c.path),
                "yes" if c.include else "no",
                " ".join(c.masks),
            ]
        )
    return table(rows, right=frozenset({2}))


def _files(entries: list[FileEntry]) -> list[str]:
    rows = [[str(e.size), when(e.modified), show_docid(e.docid), clean(e.virtual_path)] for e in entries]
    return table(rows, right=frozenset({0}))


def _contexts(contexts: list[Context]) -> list[str]:
    lines = []
    for ctx in contexts:
        path = "/ (global)" if ctx.path == "/" else clean(ctx.path)
        text = ctx.text.splitlines() or [""]
        lines.append(f"{path} → {clean(text[0])}")
        lines += [f"    {clean(more)}" for more in text[1:]]
    return lines


def _message(data: dict[str, Any]) -> list[str]:
    # Small confirmations: the other keys are there for JSON, the message says it all for a person.
    if "message" in data:
        return [clean(line) for line in str(data["message"]).splitlines()] or [""]
    return [f"{key}: {clean(str(value))}" for key, value in data.items()] or ["ok"]
