"""Reading members of a ZIP container (DOCX, EPUB) within a budget of inflated bytes.

The budget counts the bytes actually inflated, not the sizes the archive's headers claim: a
crafted archive can state any size. Reading stops at the first byte past the budget.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from . import MAX_ARCHIVE_MEMBERS, MAX_UNZIPPED_BYTES, ExtractionFailed

_READ_SIZE = 64 * 1024


class Archive:
    def __init__(self, raw: bytes, what: str, budget: int = MAX_UNZIPPED_BYTES) -> None:
        self.what = what
        self.left = budget
        self.budget = budget
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(raw))
            names = self._zip.namelist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
            raise ExtractionFailed("corrupt", f"not a readable {what} archive: {exc}") from exc
        if len(names) > MAX_ARCHIVE_MEMBERS:
            raise ExtractionFailed(
                "zip-bomb", f"{len(names)} members in the archive (limit {MAX_ARCHIVE_MEMBERS})"
            )
        self.names = set(names)

    def read(self, name: str) -> bytes:
        """A member's bytes; ``corrupt`` when missing or damaged, ``zip-bomb`` past the budget."""
        if name not in self.names:
            raise ExtractionFailed("corrupt", f"the {self.what} has no {name}")
        parts: list[bytes] = []
        try:
            with self._zip.open(name) as member:
                while True:
                    piece = member.read(min(_READ_SIZE, self.left + 1))
                    if not piece:
                        break
                    self.left -= len(piece)
                    if self.left < 0:
                        raise ExtractionFailed(
                            "zip-bomb",
                            f"{name} inflates past {self.budget // (1024 * 1024)} MiB"
                            f" (the limit for one {self.what}); stopped reading there",
                        )
                    parts.append(piece)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
            # RuntimeError: an encrypted member; NotImplementedError: an unknown compression.
            raise ExtractionFailed("corrupt", f"cannot read {name} in the {self.what}: {exc}") from exc
        return b"".join(parts)
