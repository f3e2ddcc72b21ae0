"""Removing a whole collection from the index: its sessions, documents, chunks and vectors.

It sits above documents.py, transcripts.py, chunks.py and vectors.py, which it calls in order, so
none of those needs to import another to remove a collection.
"""

from __future__ import annotations

from typing import Any

from . import documents
from .chunks import prune_chunks
from .transcripts import delete_collection_sessions
from .vectors import prune_if_present as prune_vectors


def delete_collection(conn: Any, collection: str) -> int:
    """Delete every row of ``collection``; how many documents (sessions included) went."""
    sessions = delete_collection_sessions(conn, collection)  # their turns first, then their documents
    ids = documents.document_ids_in(conn, collection)
    for doc_id in ids:
        documents.delete_document(conn, doc_id)
    documents.forget_collection_state(conn, collection)
    documents.prune_content(conn)
    prune_chunks(conn)
    prune_vectors(conn)
    return sessions + len(ids)
