"""Closing a llama.cpp model: once, explicitly or at exit, never raising from a finaliser."""

from __future__ import annotations

from typing import Any, Self


class ClosableModel:
    """Lifetime for the classes that own a llama.cpp model: ``close`` (idempotent), use as a
    context manager, refuse calls once closed. Subclasses set ``_closed = False`` once loaded
    and free their own resources in ``_release``."""

    _closed = True  # until loading succeeds, so a half-made object's finaliser does nothing
    _llm: Any
    closed_message = "the model is closed"

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(self.closed_message)

    def _release(self) -> None:
        self._llm.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # At interpreter exit llama_cpp (and even contextlib) may already be torn down; the
        # process frees everything anyway, and open models are closed before that (llama.OPEN_MODELS).
        try:  # noqa: SIM105 (contextlib itself may be gone by then)
            self.close()
        except Exception:
            pass
