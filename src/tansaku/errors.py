"""The error tree. Library code raises these; only the CLI turns them into messages and exit codes.

Every error has a stable ``code`` (part of the JSON contract) and an ``exit_code``, one of
EXIT_CODES below.
"""

from __future__ import annotations

from typing import Any

# Every exit code tansaku uses, and what it means: the one table. README's "Exit codes" table and
# docs/cli-reference.md (written from this) say the same; test_exit_codes runs every command
# against it, so an error class or a command that strays from it fails a test.
EXIT_CODES: dict[int, str] = {
    0: "done, including a search with no results",
    1: "not found: a named collection, document, context, path, line, page, model or daemon does not exist",
    2: "bad input or usage: the command line, an option's value, a name, a glob, the config file",
    3: "cannot work: the index is missing, locked, damaged, read-only or of another version, or the"
    " model, its download or its endpoint cannot be used",
    4: "a step of the work failed: a pre-update hook, an update of a collection, an embedded chunk, a"
    " doctor check, a server that cannot start",
    70: "internal error: a tansaku bug (TANSAKU_DEBUG=1 shows the traceback)",
    130: "interrupted (Ctrl-C)",
}


class TansakuError(Exception):
    code = "ERROR"
    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            data["hint"] = self.hint
        if self.details:
            data["details"] = self.details
        return data


class UsageError(TansakuError):
    code = "USAGE"


class ConfigInvalid(TansakuError):
    code = "CONFIG_INVALID"


class InvalidName(TansakuError):
    code = "INVALID_NAME"


class BadGlob(TansakuError):
    code = "BAD_GLOB"


class PathNotFound(TansakuError):
    code = "PATH_NOT_FOUND"
    exit_code = 1


class CollectionExists(TansakuError):
    code = "COLLECTION_EXISTS"


class CollectionNotFound(TansakuError):
    code = "COLLECTION_NOT_FOUND"
    exit_code = 1


class ContextNotFound(TansakuError):
    code = "CONTEXT_NOT_FOUND"
    exit_code = 1


class DocumentNotFound(TansakuError):
    code = "DOC_NOT_FOUND"
    exit_code = 1


class LineOutOfRange(TansakuError):
    """A first line past the end of the document: nothing there to read."""

    code = "LINE_OUT_OF_RANGE"
    exit_code = 1


class PageOutOfRange(TansakuError):
    """``get REF:page=N`` past the document's last page."""

    code = "PAGE_OUT_OF_RANGE"
    exit_code = 1


class AmbiguousDocid(TansakuError):
    code = "DOCID_AMBIGUOUS"


class EmptyQuery(TansakuError):
    code = "QUERY_EMPTY"


class IndexError_(TansakuError):
    """Base of the errors that mean the index itself cannot be used."""

    code = "INDEX_ERROR"
    exit_code = 3


class NoVectors(IndexError_):
    """No vectors of the configured embedding model in the searched collections."""

    code = "NO_VECTORS"


class IndexMissing(IndexError_):
    code = "INDEX_MISSING"


class IndexLocked(IndexError_):
    code = "INDEX_LOCKED"


class IndexCorrupt(IndexError_):
    """The file is damaged or not a tansaku index: the only index error whose hint is a rebuild."""

    code = "INDEX_CORRUPT"


class IndexReadOnly(IndexError_):
    """The index cannot be written (read-only mount, immutable file, permissions); it is sound,
    and reading it still works."""

    code = "INDEX_READ_ONLY"


class IndexDiskFull(IndexError_):
    """The disk ran out during a write, which was rolled back; the index is as it was."""

    code = "INDEX_DISK_FULL"


class IndexIOError(IndexError_):
    """The disk failed to read or write, and the file itself checks sound."""

    code = "INDEX_IO_ERROR"


class IndexSchemaMismatch(IndexError_):
    code = "INDEX_SCHEMA_MISMATCH"


class IndexUnreachable(IndexError_):
    """The index's database server cannot be reached or refused the connection (a PostgreSQL
    index: down, wrong address, wrong credentials, no such database)."""

    code = "INDEX_UNREACHABLE"


class BackendUnsupported(IndexError_):
    """The command does not work on this kind of index yet (docs/backends.md lists what does)."""

    code = "BACKEND_UNSUPPORTED"


class BackendMissing(IndexError_):
    """The index is on a backend whose extra is not installed (``tansaku[postgres]``)."""

    code = "BACKEND_MISSING"


class HookFailed(TansakuError):
    code = "HOOK_FAILED"
    exit_code = 4


# Model errors. A missing model is "not found" (1); a hub that cannot be reached or a download that
# fails leaves the command unable to work at all, which scripts treat like an unusable index (3).
class ModelMissing(TansakuError):
    code = "MODEL_MISSING"
    exit_code = 1


class ModelDownloadFailed(TansakuError):
    code = "MODEL_DOWNLOAD_FAILED"
    exit_code = 3


class OfflineError(TansakuError):
    code = "OFFLINE"
    exit_code = 3


# Remote model endpoints (models/remote): each failure has its own code, so a script can tell a
# server that is down from one that is busy, slow, or serves another model. An endpoint that
# cannot do the work leaves the command unable to work (3); a model it does not serve is not found (1).
class EndpointError(TansakuError):
    """The endpoint as a whole failed: every further request would fail the same way."""

    code = "ENDPOINT_ERROR"
    exit_code = 3


class EndpointUnreachable(EndpointError):
    code = "ENDPOINT_UNREACHABLE"


class EndpointTimeout(EndpointError):
    code = "ENDPOINT_TIMEOUT"


class EndpointRateLimited(EndpointError):
    code = "ENDPOINT_RATE_LIMITED"


class EndpointAuth(EndpointError):
    code = "ENDPOINT_AUTH"


class EndpointBadResponse(EndpointError):
    code = "ENDPOINT_BAD_RESPONSE"


class EndpointModelMissing(EndpointError):
    code = "ENDPOINT_MODEL_MISSING"
    exit_code = 1


class EndpointDimensions(EndpointError):
    """The endpoint's vectors do not have the dimensions they had (or that the index holds)."""

    code = "ENDPOINT_DIMENSIONS"


class RemoteConsentNeeded(TansakuError):
    """The first `embed` to a machine other than this one: the person must agree to send the text."""

    code = "REMOTE_CONSENT_NEEDED"
    exit_code = 2
