"""How many threads llama.cpp computes with: the user's setting, else chosen by the kind of work.

The setting comes from ``TANSAKU_THREADS``, else the index's config file's ``[models]`` table
(``threads = 4``), else the same table in the user-wide models file (``models.user.toml``,
``models/registry.py``), else automatic: the order of every setting (``tansaku.precedence``).
``"auto"`` in either place asks for the automatic choice explicitly, so ``TANSAKU_THREADS=auto``
undoes a count in the config file for one run.

Automatic, from ``evals/bench_threads.py`` (MiniLM, 2 cores; ``evals/RESULTS-threads.md``).
llama.cpp's threads wait for each other, spinning, at every step of a decode: when another
process holds a core, the thread that is not running holds all the others up.

* A query (one short text) uses 1 thread. Idle, 2 threads save 1.5-2.5 ms (2.8-4.2 against
  5.3-6.0 ms); under load they cost more than that: with two busy processes the 90th percentile
  was 16-1620 ms for 2 threads against 14-31 ms for 1.
* Batch work (``embed``) uses the usable CPUs less those other processes keep busy, judged again
  before every decode. Idle, 2 threads embed 1.6-1.9x as fast as 1; with one busy process 1
  thread is 1.3-1.9x as fast as 2, with two 1.8-5.5x. The measure of "busy" is the number of other
  processes' threads that are runnable now (Linux: ``/proc/loadavg``'s running count less this
  process's running threads), smoothed over the last few decodes, so a job that starts or ends
  mid-run is followed within a few decodes; the 1-minute load average would lag a minute behind
  and count this process's own threads. Elsewhere the load average is read once, at the start.

Stdlib only: resolving the setting costs no heavy import.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigInvalid, UsageError

__all__ = [
    "ENV",
    "MAX_THREADS",
    "QUERY_THREADS",
    "AutoThreads",
    "ThreadSetting",
    "others_running",
    "resolve_threads",
    "usable_cpus",
]

ENV = "TANSAKU_THREADS"
CONFIG_KEY = "threads"
AUTO = "auto"
QUERY_THREADS = 1
MAX_THREADS = 512  # llama.cpp's GGML_MAX_N_THREADS: more aborts the process


@dataclass(frozen=True)
class ThreadSetting:
    value: int | None  # None: automatic
    source: str  # "env" | "config" | "user" | "default" (tansaku.precedence)

    @property
    def batch(self) -> int | None:
        """Threads for batch work (``embed``); None lets the model choose by the machine's load."""
        return self.value

    @property
    def query(self) -> int:
        """Threads for embedding a query."""
        return self.value if self.value is not None else QUERY_THREADS

    def describe(self) -> str:
        shown = str(self.value) if self.value is not None else "auto (1 per query, free CPUs for embed)"
        return f"{shown} [{self.source}]"


def resolve_threads(config_path: Path) -> ThreadSetting:
    """The thread setting: ``TANSAKU_THREADS``, else config ``[models] threads``, else automatic.

    An invalid value is an error (exit code 2): ConfigInvalid in the config file (even when the
    environment variable overrides it, so a broken file does not wait to surface until the
    variable is unset), UsageError in the environment.
    """
    from ..precedence import ENV as FROM_ENV
    from ..precedence import choose
    from .registry import user_models_path

    configured = _configured(config_path)
    user = _configured(user_models_path(config_path))
    value, source = choose(default=None, env=ENV, config=configured, user=user)
    if source == FROM_ENV:
        raw_env = value
        value = _parse(raw_env)
        if value is False:
            raise UsageError(
                f'{ENV} must be a whole number from 1 to {MAX_THREADS} or "auto", not {raw_env!r}',
                hint=f"for example {ENV}=2, or unset it",
            )
    return ThreadSetting(value, source)


def _configured(path: Path) -> Any:
    """``[models] threads`` of one file: an int, None for "auto", or MISSING when it has none."""
    from ..precedence import MISSING
    from .registry import _load_toml

    models = _load_toml(path).get("models", {})
    if not isinstance(models, dict):
        raise ConfigInvalid(f"config {path}: [models] must be a table")
    if CONFIG_KEY not in models:
        return MISSING
    configured = _parse(models[CONFIG_KEY])
    if configured is False:
        raise ConfigInvalid(
            f"config {path}: [models] threads must be a whole number from 1 to {MAX_THREADS} "
            f'or "auto", not {models[CONFIG_KEY]!r}',
            hint='for example `threads = 2` under [models], or remove the line for "auto"',
        )
    return configured


def _parse(raw: object) -> int | bool | None:
    """The thread count in ``raw``; None for "auto"; False when it is not a valid setting."""
    if isinstance(raw, str):
        text = raw.strip()
        if text.lower() == AUTO:
            return None
        if not text.isdigit():  # also refuses "-1", "2.5" and "+2"
            return False
        raw = int(text)
    # TOML's true is a Python int: refuse it with the floats.
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_THREADS:
        return False
    return raw


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def others_running() -> int | None:
    """Runnable threads of other processes right now (Linux), or None where this cannot be read."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
        own = 0
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/stat", encoding="utf-8", errors="replace") as f:
                    # The state follows the command name, which may contain ") ".
                    own += f.read().rsplit(")", 1)[1].split()[0] == "R"
            except OSError:
                continue  # the thread ended meanwhile
    except (OSError, ValueError, IndexError):
        return None
    return max(0, running - own)


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


class AutoThreads:
    """Threads for batch work: the usable CPUs less the ones other processes keep busy.

    ``choose()`` is called before each decode. ``sample`` gives the other processes' runnable
    threads now (None when unknown: then the load average, once); tests may pass their own.
    """

    SMOOTHING = 0.3  # weight of the newest sample: a few decodes follow a change of load
    FIRST_SAMPLES = 5  # averaged for the first estimate, 1 ms apart, as one sample is noisy

    def __init__(self, cpus: int | None = None, sample: Callable[[], float | None] = others_running) -> None:
        self.cpus = cpus or usable_cpus()
        self._sample = sample
        self._busy: float | None = None
        self._live = True  # False once sampling failed: keep the load average's figure

    @property
    def busy(self) -> float | None:
        """The smoothed estimate of the CPUs other processes use, once ``choose`` has run."""
        return self._busy

    def choose(self) -> int:
        if self._busy is None:
            first = []
            for i in range(self.FIRST_SAMPLES):
                if i:
                    time.sleep(0.001)
                value = self._sample()
                if value is None:
                    break
                first.append(value)
            if first:
                self._busy = sum(first) / len(first)
            else:
                self._busy, self._live = _load_average(), False
        elif self._live:
            value = self._sample()
            if value is not None:
                self._busy += self.SMOOTHING * (value - self._busy)
        # Half a busy CPU or more counts as taken: with a core's worth of other work one thread
        # fewer was faster in every measurement, while with ~0.4 of a core taken all threads still
        # won (5.4 against 4.6 windows/s on 2 cores).
        return max(1, min(self.cpus, self.cpus - int(self._busy + 0.5)))
