"""Which ledger counts a service's rates, caps and budgets (``MEMSTRATA_SERVICE_LEDGER``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from query_service.ledger import LedgerUnavailable
from query_service.ledger_caps import CapLeases
from query_service.ledger_lease import RateLeases, SharedSpendLedger
from query_service.limits import SpendLedger
from query_service.settings import ServiceSettings

_log = logging.getLogger(__name__)


def shared_url(settings: ServiceSettings, app: Any) -> str | None:
    """The OpenSearch URL of the shared ledger, or None for the per-process one.

    ``app``: the memory's :class:`memstrata.config.Settings` (the stores' backends).
    """
    mode = settings.ledger
    if mode == "auto":
        mode = "opensearch" if getattr(app, "doc_backend", "sqlite") == "opensearch" else "local"
    if mode == "local":
        return None
    url = settings.ledger_url or getattr(app, "opensearch_url", None)
    if not url:
        raise ValueError("MEMSTRATA_SERVICE_LEDGER=opensearch needs MEMSTRATA_SERVICE_LEDGER_URL "
                         "or MEMSTRATA_OPENSEARCH_URL")
    return str(url)


def open_ledgers(settings: ServiceSettings, app: Any, spend_file: Path
                 ) -> tuple[SpendLedger | SharedSpendLedger, RateLeases | None,
                            CapLeases | None]:
    """The spend ledger, the shared rate and the shared concurrency caps (None: per
    process) the service counts with."""
    url = shared_url(settings, app)
    if url is None:
        return SpendLedger(spend_file), None, None
    from query_service.ledger_opensearch import OpenSearchLedger

    password = getattr(app, "opensearch_password", None)
    ca_file = getattr(app, "opensearch_ca_file", None)
    ledger = OpenSearchLedger(
        url, index_prefix=getattr(app, "opensearch_index_prefix", "memstrata"),
        user=getattr(app, "opensearch_user", None),
        password=password.get_secret_value() if password is not None else None,
        ca_file=str(ca_file) if ca_file is not None else None,
        timeout_s=settings.ledger_timeout_s)
    try:  # at start, not on the first call's event loop; a store down now is retried later
        ledger.ensure()
    except LedgerUnavailable as exc:
        _log.warning("shared ledger not ready at start (%s); it is retried per call", exc)
    spend = SharedSpendLedger(ledger, slice_fraction=settings.ledger_slice,
                              retry_s=settings.ledger_retry_s)
    rate = RateLeases(ledger, window_s=settings.ledger_window_s,
                      slice_fraction=settings.ledger_slice,
                      outage_share=settings.ledger_outage_share,
                      retry_s=settings.ledger_retry_s)
    caps = CapLeases(ledger, slice_fraction=settings.ledger_slice,
                     ttl_s=settings.ledger_lease_ttl_s,
                     outage_share=settings.ledger_outage_share,
                     retry_s=settings.ledger_retry_s)
    return spend, rate, caps
