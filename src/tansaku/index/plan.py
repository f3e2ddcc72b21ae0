"""What an update of one collection does (index/update.py plans it, then applies it; index/repeated.py
rewrites the HTML pages it read): its own module, so that both import it and neither the other."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..sources.reader import ReadDocument
from ..sources.walk import FoundFile
from ..store.backend import documents as store
from ..types import SkippedFile
from .extracting import ExtractionLog


@dataclass
class Plan:
    add: list[tuple[FoundFile, ReadDocument]] = field(default_factory=list)
    change: list[tuple[store.StoredDocument, FoundFile, ReadDocument]] = field(default_factory=list)
    touch: list[tuple[store.StoredDocument, FoundFile]] = field(default_factory=list)
    move: list[tuple[store.StoredDocument, FoundFile]] = field(default_factory=list)
    remove: list[store.StoredDocument] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    # Files whose front matter could not be read (found while the plan is applied).
    broken_front: list[tuple[str, int | None, str]] = field(default_factory=list)
    extractions: ExtractionLog = field(default_factory=ExtractionLog)
    # Files read and skipped for a reason that lasts while the file is unchanged.
    lasting_skips: list[store.SkippedRow] = field(default_factory=list)
    # Blocks a site repeats on its pages left out of the HTML pages read (index/repeated.py).
    repeated_blocks: int = 0
    repeated_pages: int = 0
