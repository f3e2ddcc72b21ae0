"""Agent session transcripts (Claude Code, Codex) as normalised units: sessions, runs, turns.

Not yet wired to collections or the indexer: ``claude.parse`` and ``codex.parse`` turn a file's
bytes into a ``ParseReport``; ``redact.redact_turn`` removes secrets before text is indexed.
"""
