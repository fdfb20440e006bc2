"""The shared ledger in OpenSearch: one document per counter, changed by compare-and-set.

Each change reads the counter, computes the new count and writes it back with
``if_seq_no``/``if_primary_term``: a write that lost a race to another replica
is refused (409) and retried on the fresh count, so no grant is ever lost or
doubled. Compare-and-set was chosen over scripted updates because both real
OpenSearch and osmem-server (the test stand-in, which rejects update scripts)
support it; one change costs a GET and an index request (about 3 ms on
loopback against osmem-server, ``bench/ledger.py``).

Leases (:meth:`OpenSearchLedger.hold`) live in the same index, one document per
key holding every holder's lease as a JSON string (not indexed, so holders never
add fields to the mapping), changed by the same compare-and-set.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConflictError, NotFoundError, OpenSearchException

from memstrata.store._opensearch import ensure_index, make_client
from query_service.ledger import Leases, LedgerUnavailable, grant, lease

T = TypeVar("T")

_MAPPING: dict[str, Any] = {
    "settings": {"number_of_shards": 1},
    "mappings": {"properties": {"key": {"type": "keyword"}, "period": {"type": "keyword"},
                                "used": {"type": "double"},
                                "leases": {"type": "keyword", "index": False,
                                           "doc_values": False}}},
}


class OpenSearchLedger:
    """Counters in the index ``<prefix>-ledger`` (created at start-up, else on first use).

    ``attempts``: how many lost races one change retries before it gives up
    (LedgerUnavailable); ``timeout_s`` bounds each request.
    """

    def __init__(self, url: str, *, index_prefix: str = "memstrata", user: str | None = None,
                 password: str | None = None, ca_file: str | None = None,
                 timeout_s: float = 1.0, attempts: int = 50,
                 client: OpenSearch | None = None) -> None:
        self.url = url
        self.index = f"{index_prefix}-ledger"
        self.timeout_s = timeout_s
        self.attempts = attempts
        self._client = client or make_client(url, user=user, password=password,
                                             timeout=timeout_s, max_retries=0, ca_file=ca_file)
        self._ready = False

    def _ensure(self) -> None:
        if not self._ready:
            # Once per process, and slower than a count (osmem-server: over a second).
            ensure_index(self._client, self.index, _MAPPING, max(self.timeout_s, 30.0),
                         url=self.url)
            self._ready = True

    def ensure(self) -> None:
        """Create the index now (at start-up) rather than on the first count."""
        try:
            self._ensure()
        except (OpenSearchException, OSError) as exc:
            raise self._unreachable(exc) from exc

    @staticmethod
    def _id(key: str) -> str:
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]

    def _unreachable(self, exc: Exception) -> LedgerUnavailable:
        return LedgerUnavailable(
            f"the shared ledger at {self.url} is unreachable ({type(exc).__name__})")

    def _compare_and_set(self, key: str, doc_id: str,
                         step: Callable[[dict[str, Any] | None], tuple[T, dict[str, Any] | None]]
                         ) -> T:
        """Read the document, let ``step`` turn its source (None: none yet) into a result
        and the body to write (None: leave it), and write that body only if nobody wrote
        since; a lost race is retried on the fresh document."""
        try:
            self._ensure()
            for attempt in range(self.attempts):
                try:
                    got = self._client.get(index=self.index, id=doc_id,
                                           request_timeout=self.timeout_s)
                except NotFoundError:
                    got = None
                result, body = step(got["_source"] if got is not None else None)
                if body is None:
                    return result
                try:
                    if got is None:
                        self._client.index(index=self.index, id=doc_id, body=body,
                                           op_type="create", request_timeout=self.timeout_s)
                    else:
                        self._client.index(index=self.index, id=doc_id, body=body,
                                           if_seq_no=got["_seq_no"],
                                           if_primary_term=got["_primary_term"],
                                           request_timeout=self.timeout_s)
                    return result
                except ConflictError:
                    time.sleep(random.uniform(0, 0.002 * min(attempt + 1, 10)))
        except LedgerUnavailable:
            raise
        except (OpenSearchException, OSError) as exc:
            raise self._unreachable(exc) from exc
        raise LedgerUnavailable(f"the shared ledger kept conflicting on {key!r} "
                                f"({self.attempts} attempts)")

    def _change(self, key: str, period: str, amount: float, cap: float | None,
                sign: float) -> float:
        """Add ``sign * grant`` to the counter; return the grant."""

        def step(src: dict[str, Any] | None) -> tuple[float, dict[str, Any] | None]:
            have = src or {}
            used = float(have.get("used", 0.0)) if have.get("period") == period else 0.0
            added = grant(used, amount, cap) if sign > 0 else min(used, max(0.0, amount))
            if added == 0.0 and src is not None:
                return 0.0, None
            return added, {"key": key, "period": period, "used": used + sign * added}

        return self._compare_and_set(key, self._id(key), step)

    def take(self, key: str, period: str, amount: float, cap: float | None) -> float:
        return self._change(key, period, amount, cap, 1.0)

    def give(self, key: str, period: str, amount: float) -> None:
        self._change(key, period, amount, None, -1.0)

    def hold(self, key: str, holder: str, want: float, cap: float, now: float,
             ttl_s: float) -> float:
        """Compare-and-set over the key's leases (see :meth:`Ledger.hold`)."""

        def step(src: dict[str, Any] | None) -> tuple[float, dict[str, Any] | None]:
            raw = src.get("leases") if src is not None else None
            try:
                stored: Leases = {h: (float(v[0]), float(v[1]))
                                  for h, v in json.loads(raw or "{}").items()}
            except ValueError as exc:  # a damaged document: as good as unreachable
                raise self._unreachable(exc) from exc
            held, leases = lease(stored, holder, want, cap, now, ttl_s)
            if leases == stored:
                return held, None
            return held, {"key": key, "leases": json.dumps(leases, sort_keys=True)}

        return self._compare_and_set(key, self._id(f"lease/{key}"), step)

    def used(self, key: str, period: str) -> float:
        try:
            self._ensure()
            got = self._client.get(index=self.index, id=self._id(key),
                                   request_timeout=self.timeout_s)
        except NotFoundError:
            return 0.0
        except (OpenSearchException, OSError) as exc:
            raise self._unreachable(exc) from exc
        src = got["_source"]
        return float(src.get("used", 0.0)) if src.get("period") == period else 0.0

    def close(self) -> None:
        self._client.close()
