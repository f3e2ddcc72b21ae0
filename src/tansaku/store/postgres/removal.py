"""Removing a whole collection from a PostgreSQL index, its sessions too (store/removal.py's function)."""

from __future__ import annotations

from typing import Any

from . import documents
from .chunks import prune_chunks
from .transcripts import delete_collection_sessions
from .vectors import prune_if_present as prune_vectors


def delete_collection(conn: Any, collection: str) -> int:
    """Delete every row of ``collection``, its vectors included; how many documents (sessions
    included) went."""
    sessions = delete_collection_sessions(conn, collection)  # their turns first, then their documents
    ids = documents.document_ids_in(conn, collection)
    for doc_id in ids:
        documents.delete_document(conn, doc_id)
    documents.forget_collection_state(conn, collection)
    documents.prune_content(conn)
    prune_chunks(conn)
    prune_vectors(conn)
    return sessions + len(ids)
