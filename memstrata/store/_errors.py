"""Turning backend exceptions into :class:`StoreError` with backend and operation named.

Callers above the store layer handle one exception type; the message still
says which backend failed doing what, which is what an operator needs.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager

from memstrata.config import ConfigError
from memstrata.store.types import StoreError


class TLSVerifyError(StoreError, ConfigError):
    """The server's TLS certificate is not trusted: a setting to fix, not a backend fault.

    A :class:`StoreError` for the store layer's handlers and a :class:`ConfigError`
    (a ``ValueError``) for whoever reports configuration mistakes.
    """


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


def cert_verify_failure(exc: BaseException) -> str | None:
    """The reason of a certificate verification failure in ``exc``'s chain, if there is one.

    Client libraries wrap :class:`ssl.SSLCertVerificationError` (urllib3 and
    opensearch-py ``SSLError``, httpx ``ConnectError``, qdrant-client's
    ``ResponseHandlingException``), linking it through ``__cause__``/``__context__``,
    ``reason`` or ``args``; a wrapper that kept only its text is matched by the text.
    """
    todo: list[object] = [exc]
    seen: set[int] = set()
    text = None
    while todo:
        e = todo.pop()
        if not isinstance(e, BaseException) or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ssl.SSLCertVerificationError):
            return str(e)
        if text is None and "CERTIFICATE_VERIFY_FAILED" in str(e):
            text = str(e)
        todo.extend([e.__cause__, e.__context__, getattr(e, "reason", None), *e.args])
    return text


@contextmanager
def tls_setting(url: str | None, setting: str) -> Iterator[None]:
    """Turn a certificate verification failure against ``url`` into :class:`TLSVerifyError`.

    The message names the URL and ``setting`` (the CA bundle variable) and keeps the reason.
    """
    try:
        yield
    except Exception as exc:
        reason = cert_verify_failure(exc)
        if reason is None or url is None:
            raise
        raise TLSVerifyError(
            f"{url}: the server's TLS certificate is not trusted ({reason}); set {setting} to "
            f"the CA bundle that signed it (a PEM file)"
        ) from exc
