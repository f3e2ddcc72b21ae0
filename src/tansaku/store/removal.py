"""Removing a whole collection from the index: its sessions, documents, chunks and vectors.

It sits above documents.py, transcripts.py, chunks.py and vectors.py, which it calls in order
through store/routed.py's modules, so none of those needs to import another to remove a
collection, and the one function serves both backends (store/dialect.py).
"""

from __future__ import annotations

from typing import Any

from .dialect import both
from .routed import chunks, documents, transcripts, vectors


@both
def delete_collection(conn: Any, collection: str) -> int:
    """Delete every row of ``collection``, its vectors included; how many documents (sessions
    included) went."""
    sessions = transcripts.delete_collection_sessions(conn, collection)  # turns first, then documents
    ids = documents.document_ids_in(conn, collection)
    for doc_id in ids:
        documents.delete_document(conn, doc_id)
    documents.forget_collection_state(conn, collection)
    documents.prune_content(conn)
    chunks.prune_chunks(conn)
    vectors.prune_if_present(conn)
    return sessions + len(ids)
