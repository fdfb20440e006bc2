"""Turning backend exceptions into :class:`StoreError` with backend and operation named.

Callers above the store layer handle one exception type; the message still
says which backend failed doing what, which is what an operator needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from memstrata.store.types import StoreError


def _is_rust_panic(exc: BaseException) -> bool:
    # PyO3 panics derive from BaseException, so ``except Exception`` misses them.
    return type(exc).__name__ == "PanicException"


@contextmanager
def guard(backend: str, operation: str) -> Iterator[None]:
    """Re-raise any backend failure in the block as ``StoreError("<backend>: <operation> ...")``."""
    try:
        yield
    except StoreError:
        raise
    except BaseException as exc:
        if not isinstance(exc, Exception) and not _is_rust_panic(exc):
            raise
        raise StoreError(f"{backend}: {operation} failed: {type(exc).__name__}: {exc}") from exc
