"""Every setting with its value and source, for `status`, `models list` and `doctor`.

The values are those the commands use: each comes from the same function the command calls, so
what is shown cannot differ from what runs. Nothing here refuses a bad value: it is reported in
``problem`` (the commands that use the setting refuse it).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import TansakuError
from ..precedence import DEFAULT, SettingSource, choose


def model_settings(config_path: Path) -> list[SettingSource]:
    from ..models.registry import ROLES, env_var, resolve

    out = []
    for role in ROLES:
        env, key = env_var(role), f"[models] {role}"
        try:
            ref = resolve(role, config_path)
        except TansakuError as exc:
            out.append(SettingSource(f"{role}_model", "?", DEFAULT, env, key, problem=exc.message))
            continue
        out.append(SettingSource(f"{role}_model", ref.reference, ref.source, env, key))
    return out


def thread_setting(config_path: Path) -> SettingSource:
    from ..models.threads import ENV, resolve_threads

    try:
        setting = resolve_threads(config_path)
    except TansakuError as exc:
        return SettingSource("threads", "?", DEFAULT, ENV, "[models] threads", problem=exc.message)
    value = str(setting.value) if setting.value is not None else "auto"
    return SettingSource("threads", value, setting.source, ENV, "[models] threads")


def lock_timeout_setting() -> SettingSource:
    from ..store.db import LOCK_TIMEOUT_ENV, lock_timeout_setting

    value, source, problem = lock_timeout_setting()
    return SettingSource("lock_timeout", f"{value:g} s", source, LOCK_TIMEOUT_ENV, problem=problem)


def vector_memory_setting() -> SettingSource:
    from ..store.memory_budget import MEMORY_BUDGET_ENV, memory_budget_setting

    value, source, problem = memory_budget_setting()
    return SettingSource("vector_memory", f"{value:g} MB", source, MEMORY_BUDGET_ENV, problem=problem)


def rerank_budget_setting(flag: float | None = None) -> SettingSource:
    from ..hybrid.steps import DEFAULT_RERANK_BUDGET, RERANK_BUDGET_ENV, rerank_budget

    _raw, source = choose(default=DEFAULT_RERANK_BUDGET, env=RERANK_BUDGET_ENV, flag=flag)
    value = rerank_budget(flag)
    problem = None
    if source != "flag" and _raw != DEFAULT_RERANK_BUDGET:
        try:
            float(_raw)
        except ValueError:  # rerank_budget falls back to the default for it
            source, problem = DEFAULT, f"{RERANK_BUDGET_ENV}={_raw!r} is not a number of seconds"
    return SettingSource(
        "rerank_budget", f"{value:g} s", source, RERANK_BUDGET_ENV, flag="--rerank-budget", problem=problem
    )


def all_settings(config_path: Path) -> tuple[SettingSource, ...]:
    return (
        *model_settings(config_path),
        thread_setting(config_path),
        lock_timeout_setting(),
        vector_memory_setting(),
        rerank_budget_setting(),
    )
