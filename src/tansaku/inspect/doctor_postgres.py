"""`tansaku doctor` for an index in PostgreSQL: the config (as for SQLite), the server, its
pgvector, the schema, and the keyword statistics update keeps (BM25 ranks by them, so a drift
would change rankings silently), then the model and device checks SQLite's index has (the
vector dimensions read from the database; no disk check: the database's disk is the server's).
Read-only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TansakuError
from .checks import FAIL, OK, WARN, check

if TYPE_CHECKING:
    from ..types import DoctorCheck

# A round trip slower than this makes every search slow (a search makes about a dozen).
SLOW_ROUND_TRIP_MS = 20.0
_REBUILD = "tansaku collection remove NAME && tansaku collection add PATH --name NAME"


def run_doctor(
    config_path: Path, index: Any, *, deep: bool = False, listed: Callable[[], Any] | None = None
) -> list[DoctorCheck]:
    """``listed`` reads the database's own collections and contexts (api's listed_config), whose
    folders are checked; it is asked only once the server has answered (an unreachable one costs
    its connect timeout once), and the config file's stand in when it cannot be read."""
    from . import doctor_machine
    from .doctor import config_checks

    checks: list[DoctorCheck] = []
    try:
        server: Any = index.describe()
    except TansakuError as exc:
        server = exc
    config = config_checks(config_path, checks, None if isinstance(server, TansakuError) else _read(listed))
    _index_checks(config, index, server, checks, deep=deep)
    doctor_machine.model_checks(config_path, index, checks, deep=deep)
    doctor_machine.device_checks(config_path, index, checks)
    return checks


def _read(listed: Callable[[], Any] | None) -> Any:
    try:
        return None if listed is None else listed()
    except TansakuError:
        return None  # no tansaku tables yet, or an old schema: the index checks say so


def _index_checks(config: Any, index: Any, server: Any, checks: list[DoctorCheck], *, deep: bool) -> None:
    """``server``: what index.describe() gave, or the error it raised."""
    if isinstance(server, TansakuError):
        checks.append(check("index.server", FAIL, server.message, server.hint))
        return
    digits = 1 if server.round_trip_ms >= 0.095 else 2  # a Unix socket's is a few hundredths
    trip = f"round trip {server.round_trip_ms:.{digits}f} ms"
    slow = server.round_trip_ms > SLOW_ROUND_TRIP_MS
    checks.append(
        check(
            "index.server",
            WARN if slow else OK,
            f"{index.location}: {server.product}, {trip}",
            "a server nearer to this machine, or a read replica beside it" if slow else None,
        )
    )
    checks.append(_pgvector_check(server))
    if not index.exists():
        has_collections = bool(config and config.collections)
        fix = "tansaku update" if has_collections else "tansaku collection add PATH"
        checks.append(check("index", FAIL if has_collections else WARN, f"no index in {index.location}", fix))
        return
    try:
        with index.reading() as conn:
            checks.append(check("index", OK, f"{index.location} (schema {index.schema_version})"))
            checks.append(_totals_check(conn))
            checks.append(_turn_totals_check(conn))
            if deep:
                checks.append(_terms_check(conn))
    except TansakuError as exc:
        checks.append(check("index", FAIL, exc.message, exc.hint))


def _pgvector_check(server: Any) -> DoctorCheck:
    if server.pgvector:
        return check("index.pgvector", OK, f"pgvector {server.pgvector} installed")
    if server.pgvector_available:
        return check(
            "index.pgvector",
            OK,
            f"pgvector {server.pgvector_available} available on the server, not installed in the database"
            " (keyword search does not need it)",
        )
    return check(
        "index.pgvector",
        WARN,
        "the server has no pgvector: vector search will not work on it (keyword search does)",
        "install pgvector on the server (https://github.com/pgvector/pgvector#installation)",
    )


def _totals_check(conn: Any) -> DoctorCheck:
    from ..store.postgres.health import keyword_totals_drift

    units = ("documents", "documents")
    return _drift_check("index.keyword_totals", keyword_totals_drift(conn), units, "BM25's averages")


def _turn_totals_check(conn: Any) -> DoctorCheck:
    from ..store.postgres.health import turn_totals_drift

    units = ("transcript turns", "turns")
    return _drift_check("index.turn_totals", turn_totals_drift(conn), units, "the turns' BM25 averages")


def _drift_check(
    name: str, drift: tuple[tuple[int, int], tuple[int, int]], units: tuple[str, str], averages: str
) -> DoctorCheck:
    """OK when the (count, tokens) update kept equal a count now; else FAIL: BM25 ranks by them.
    ``units``: what is counted, as the OK line and the FAIL line name it; ``averages``: whose
    BM25 averages a drift puts off."""
    kept, counted = drift
    if kept == counted:
        return check(name, OK, f"{counted[0]} {units[0]}, {counted[1]} tokens")
    return check(
        name,
        FAIL,
        f"update kept {kept[0]} {units[1]} and {kept[1]} tokens, the index holds {counted[0]} and"
        f" {counted[1]}: {averages} are off",
        _REBUILD,
    )


def _terms_check(conn: Any) -> DoctorCheck:
    from ..store.postgres.health import term_stats_drift

    wrong, first = term_stats_drift(conn)
    if not wrong:
        return check("index.term_stats", OK, "every term's document frequency matches its postings")
    return check(
        "index.term_stats",
        FAIL,
        f"{wrong} terms have a document frequency that differs from their postings"
        f" ({', '.join(first)}{', ...' if wrong > len(first) else ''}): their IDF is off",
        _REBUILD,
    )
