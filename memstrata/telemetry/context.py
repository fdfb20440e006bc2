"""Work handed to a thread keeps the caller's trace context (so its spans nest).

``loop.run_in_executor`` and ``ThreadPoolExecutor.submit`` run a function in
the worker thread's own context: a span opened there would start a new trace.
:func:`bind` runs it in a copy of the caller's context instead, only while
tracing is on; off, it returns the function itself.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from memstrata.telemetry.state import STATE

__all__ = ["bind"]

P = ParamSpec("P")
T = TypeVar("T")


def bind(fn: Callable[P, T]) -> Callable[P, T]:
    """``fn``, to run in a copy of the current context when tracing is on."""
    if STATE.tracer is None:
        return fn
    return functools.partial(contextvars.copy_context().run, fn)  # type: ignore[return-value]
