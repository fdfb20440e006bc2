"""The caller's trace context, carried with each call to a Ray actor and restored there.

A Ray actor runs in another process: without help its spans start new traces.
The caller puts its W3C context (``traceparent``, ``tracestate``) in a small
dict sent with the call (:func:`carrier`); the actor switches tracing on from
its node's ``OTEL_*`` environment once (:func:`actor_tracing`) and runs the
call under that context (:func:`restored`), so the rollout's or the build's
spans are children of the service's span in the same trace. With tracing off
on either side the carrier is empty or ignored, and nothing is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

from memstrata.telemetry.kafka import extract
from memstrata.telemetry.setup import setup_from_env
from memstrata.telemetry.state import propagating

T = TypeVar("T")

#: The service name of spans recorded inside actors.
ACTOR_SERVICE = "memstrata-workers"


def carrier() -> dict[str, str]:
    """The current trace context as W3C headers ({} when nothing propagates)."""
    if not propagating():
        return {}
    from opentelemetry import propagate

    out: dict[str, str] = {}
    propagate.inject(out)
    return out


def actor_tracing() -> bool:
    """Switch tracing on in this actor process when its environment asks for it."""
    return setup_from_env(ACTOR_SERVICE)


@contextmanager
def restored(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Run the block under the trace context ``headers`` carry (no-op when none)."""
    ctx = extract(dict(headers)) if headers else None
    if ctx is None:
        yield
        return
    from opentelemetry import context

    token = context.attach(ctx)
    try:
        yield
    finally:
        context.detach(token)


def call_in(headers: Mapping[str, str] | None, fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` under ``headers``' trace context (for a thread pool inside an actor)."""
    with restored(headers):
        return fn(*args)
