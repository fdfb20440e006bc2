"""Retry policy shared by the chat and embeddings clients.

The ``openai`` SDK's own retries are switched off (``max_retries=0``) so that
one policy, driven by ``MEMSTRATA_LLM_MAX_RETRIES``, applies everywhere and
is visible in one place: retry what is transient (429, 5xx, timeouts, broken
connections) with exponential backoff and jitter; never retry another 4xx,
because sending the same bad request again only costs time and money. The
SDK still enforces each attempt's timeout (per role, passed per request).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import openai

T = TypeVar("T")


def is_transient(exc: BaseException) -> bool:
    """True for failures worth another try."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds asked for by a ``Retry-After`` header (numeric form only)."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def backoff_s(attempt: int, base_s: float, max_s: float) -> float:
    """Exponential delay with "equal jitter": half fixed, half random.

    The random half spreads out clients that failed together (a shared rate
    limit) so that they do not all come back at the same instant.
    """
    ceiling = min(max_s, base_s * 2.0**attempt)
    return float( ceiling / 2 + random.uniform(0, ceiling / 2))


def call_with_retries(
    fn: Callable[[], T],
    *,
    retries: int,
    base_s: float = 0.5,
    max_s: float = 20.0,
    sleep: Callable[[float], None] = time.sleep,
    remaining: Callable[[], float | None] | None = None,
) -> T:
    """Run ``fn``; on a transient error wait and run it again, up to ``retries`` more times.

    ``remaining`` (seconds left to the caller's deadline, None: no deadline): no
    retry is started when its wait would reach the deadline. The last error is
    re-raised unchanged so the caller can word it.
    """
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:
            if attempt >= retries or not is_transient(exc):
                raise
            asked = retry_after_s(exc)
            delay = backoff_s(attempt, base_s, max_s)
            wait = min(max_s, max(delay, asked)) if asked is not None else delay
            left = remaining() if remaining is not None else None
            if left is not None and left <= wait:
                raise
            sleep(wait)
            attempt += 1


def describe_error(exc: BaseException) -> str:
    """A short, secret-free description of an ``openai`` failure."""
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection failed ({exc.__cause__ or exc})"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


def failure_reason(exc: BaseException) -> str:
    """The bounded label (see ``memstrata.llm.types.FAILURE_REASONS``) for an ``openai`` failure."""
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    if isinstance(exc, openai.APIStatusError):
        return "http"
    return "error"
