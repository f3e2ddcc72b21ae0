"""Agent session transcripts (Claude Code, Codex) as normalised units: sessions, runs, turns.

``claude.parse`` and ``codex.parse`` turn a file's bytes into a ``ParseReport``;
``redact_units.redact_report`` removes secrets from every text of a report before it is indexed.
"""
