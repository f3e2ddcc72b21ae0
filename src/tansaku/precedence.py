"""One order for every setting: command-line flag, then environment variable, then config file,
then (for the settings a person holds across indexes, such as models) the user-wide file, then
default (as pip and git do).

The nearest, most short-lived statement of intent wins: a flag is typed for this one run, an
environment variable for this shell or job, an index's config file for every run on that index,
the user-wide file for every index that does not say otherwise. Each setting is looked
up through ``choose`` so that the order cannot drift between settings, and every caller learns
where the value came from (``status``, ``models list`` and ``doctor`` show it).

Stdlib only and no tansaku imports: the store, the models and the CLI all use it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

FLAG, ENV, CONFIG, USER, DEFAULT = "flag", "env", "config", "user", "default"
SOURCES = (FLAG, ENV, CONFIG, USER, DEFAULT)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # "the config file does not set it", as None may be a real value


def choose(
    *, default: Any, env: str | None = None, config: Any = MISSING, user: Any = MISSING, flag: Any = None
) -> tuple[Any, str]:
    """The raw value that wins and its source (one of SOURCES).

    An environment variable that is unset or blank counts as unset: ``VAR= tansaku ...`` is how a
    shell clears a variable for one command.
    """
    if flag is not None:
        return flag, FLAG
    if env is not None:
        raw = os.environ.get(env, "").strip()
        if raw:
            return raw, ENV
    if config is not MISSING:
        return config, CONFIG
    if user is not MISSING:
        return user, USER
    return default, DEFAULT


@dataclass(frozen=True)
class SettingSource:
    """One setting as shown to a person: its value, where it came from and how to change it."""

    name: str  # e.g. "threads", "lock_timeout"
    value: str  # as shown
    source: str  # one of SOURCES
    env: str | None = None  # the environment variable that sets it
    config_key: str | None = None  # e.g. "[models] threads"; None when the config file has no key
    flag: str | None = None  # e.g. "--rerank-budget"
    problem: str | None = None  # a value that was ignored or refused, and why

    def describe(self) -> str:
        return f"{self.value} [{self.source}]"
