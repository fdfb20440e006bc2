"""Settings of the query service, read from ``MEMSTRATA_SERVICE_*`` variables.

The service owns this class; core's ``load_settings`` learns about the
namespace from the ``memstrata.settings`` entry point in pyproject.toml, so
core config never lists it by hand.
"""

from __future__ import annotations

import os

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstrata.limits import MAX_TOP_K, SERVICE_MAX_TOP_K

ENV_PREFIX = "MEMSTRATA_SERVICE_"


class ServiceSettings(BaseSettings):
    """How the gRPC server listens, whom it lets in, and how much each tenant may ask."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid",
                                      validate_default=True, case_sensitive=False)

    host: str = "127.0.0.1"
    port: int = Field(50051, ge=0, le=65535)
    #: Prometheus /metrics port; None: no metrics endpoint.
    metrics_port: int | None = Field(None, ge=0, le=65535)
    #: API keys (hashed) and per-tenant limits; see ``memstrata keys add``.
    keys_file: Path | None = None
    #: Both set: TLS. Neither: plaintext (loopback or behind a TLS-terminating proxy).
    tls_cert: Path | None = None
    tls_key: Path | None = None
    #: PEM CA bundle: with TLS on, every client must present a certificate it signs
    #: (mutual TLS). Unset: any client may connect (the API key still authenticates).
    tls_client_ca: Path | None = None
    #: Seconds in-flight calls get to finish on SIGTERM.
    grace_s: float = Field(10.0, ge=0, le=600)
    #: With Ingest going through Kafka, a delete first waits this long for the stream
    #: worker to store every turn published before it (else UNAVAILABLE, retry).
    delete_wait_s: float = Field(30.0, ge=0, le=600)
    #: On the embedded broker (memory only), when Ingest answers: ``stored`` (default)
    #: once the stream worker has written and flushed the turns, so an acknowledged
    #: message survives a crash; ``broker`` once the broker holds them (faster, and
    #: lost if the process dies before the worker stores them). Kafka mode is always
    #: ``broker`` at acks=all.
    ingest_ack: Literal["stored", "broker"] = "stored"
    #: With ``ingest_ack=stored``, the longest Ingest waits for the worker (the call's
    #: deadline, if shorter, wins); past it the call fails with UNAVAILABLE.
    ingest_wait_s: float = Field(30.0, gt=0, le=600)
    #: Messages published to the turns topic and not yet seen stored, kept so that a replay
    #: counts as a duplicate and a delete waits for them: at most this many (oldest dropped
    #: first), each for at most ``pending_keep_s``; every ``pending_sweep_s`` the stores are
    #: read to drop the ones they hold. Memory is bounded by what is in flight.
    pending_max: int = Field(100_000, ge=1, le=10_000_000)
    pending_keep_s: float = Field(600.0, gt=0, le=86_400)
    pending_sweep_s: float = Field(1.0, gt=0, le=3600)

    # -- threads (the stores and the controller are synchronous and hold the GIL) --
    #: Threads for Search and Read* calls; default: one per core, at most 4. The stores
    #: release the GIL for part of each call only (tantivy, onnxruntime, SQLite), so
    #: threads beyond the cores add queueing, not throughput: bench/service_load.py
    #: --pool-sweep on a quiet 2-core machine gave 107/112/87/86 Search calls/s with
    #: 1/2/4/8 threads at 8 callers (under heavy load 4 came out ahead, within noise).
    read_threads: int = Field(default_factory=lambda: _per_core(), ge=1, le=256)
    #: Threads for Answer calls: a separate pool, so slow answers never starve reads.
    answer_threads: int = Field(default_factory=lambda: _per_core(), ge=1, le=256)

    # -- default per-tenant limits (the keys file may override them per tenant) --
    rate_per_s: float = Field(200.0, gt=0)
    burst: int = Field(400, ge=1)
    max_concurrent: int = Field(64, ge=1)

    # -- fair shares and self-protection (query_service/scheduler.py) --
    #: ``fair``: per-tenant queues served by weighted fair queuing in front of the read and
    #: answer pools, an adaptive concurrency limit and load shedding. ``fifo``: the old
    #: behaviour (every call straight into the pool's FIFO queue; nothing shed), kept so
    #: ``bench/service_load.py --noisy`` can compare both in one run.
    scheduler: Literal["fair", "fifo"] = "fair"
    #: A call expected to wait longer than this in the queue is refused at once
    #: (RESOURCE_EXHAUSTED with ``retry-after-ms``), as is one that would wait past its deadline.
    queue_max_wait_s: float = Field(5.0, gt=0, le=3600)
    #: Calls waiting per pool; when full, the newest call of the tenant with the largest
    #: backlog (per unit of weight) is refused.
    queue_max: int = Field(1000, ge=1, le=1_000_000)
    #: Floor and ceiling of the adaptive concurrency limit (calls a pool works on at once).
    #: Ceiling default: the pool's thread count less ``spare_slots``, so no call waits in
    #: the pool's FIFO queue.
    limit_min: int = Field(1, ge=1, le=256)
    limit_max: int | None = Field(None, ge=1, le=256)
    #: The limit is cut when recent service times exceed their long-run average this many times.
    limit_tolerance: float = Field(2.0, gt=1.0, le=100.0)
    #: Keep one slot of a pool free for the other tenants while another tenant has sent a
    #: call within this many seconds (0: off). Measured (bench.service_load --noisy): a
    #: quiet tenant's p99 beside a flood 3.25x -> 1.99x its p99 alone, but the flood's own
    #: throughput 111% -> 69% of what it gets alone, as the quiet tenant is served faster.
    share_window_s: float = Field(0.0, ge=0, le=3600)
    #: Threads of each pool kept for tenants with no call running (the fair scheduler's
    #: spare slots; the limit's default ceiling is then the pool's threads less these, at
    #: least 1): a quiet tenant's call starts at once beside a flood that fills the limit.
    #: Measured (bench.service_load --noisy, 2 cores, 2 threads, query cache off): a quiet
    #: tenant's Search p99 beside a 64-caller flood 2.14x its p99 alone with 1 spare slot,
    #: 2.11-3.48x without; beside a retry storm at the default limits (--storm, 5 runs,
    #: load 1-19) 1.07-3.01x with 1 spare slot, 3.40-14.3x without. The cost: one busy
    #: tenant alone gets about 10-25% fewer Searches/s, as it keeps one thread of two.
    #: 1 by default (isolation first); 0: off, every thread for whoever asks.
    spare_slots: int = Field(1, ge=0, le=16)
    #: Refusals answered late (query_service/interceptors/refusals.py): a call refused by its
    #: tenant's rate or concurrency limit is held (a timer on the event loop, no thread) until
    #: its retry-after, with a tenant's refusals spaced by ``refusal_rate_per_s``, for at most
    #: this many seconds and never past the call's deadline, so a caller that retries at once
    #: cannot flood the server with refused calls. 0: every refusal answered at once.
    refusal_hold_max_s: float = Field(2.0, ge=0, le=60)
    #: A tenant's refusals answered per second, at most (nor faster than its own rate limit).
    refusal_rate_per_s: float = Field(20.0, gt=0, le=100_000)
    #: Refused calls held at once, all tenants together; beyond it refusals are answered at once.
    refusals_held_max: int = Field(1000, ge=0, le=100_000)

    # -- input limits --
    max_question_chars: int = Field(2000, ge=1, le=100_000)
    max_batch_events: int = Field(500, ge=1, le=100_000)
    # A turn event's own limits (content, speaker, labels) are MEMSTRATA_TURN_*
    # (memstrata.limits.TurnLimits), shared with the stream worker.
    #: The largest top_k a Search may ask for (memstrata.limits owns the numbers and the check).
    max_top_k: int = Field(SERVICE_MAX_TOP_K, ge=1, le=MAX_TOP_K)
    max_answer_steps: int = Field(50, ge=1, le=200)
    #: Largest request in bytes: a larger one gets INVALID_ARGUMENT naming its largest field
    #: and this limit. The gRPC transport's own limits (both directions) are set a little
    #: above it (an eighth, at least 64 KiB; ``query_service.transport``); beyond those gRPC
    #: itself answers RESOURCE_EXHAUSTED ("Received message larger than max") before the
    #: service sees the call.
    max_message_bytes: int = Field(4 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)

    # -- metrics --
    #: Add a ``tenant`` label to metrics (bounded by the tenants in the keys file).
    metrics_tenant_label: bool = False

    #: ``offline``: answer with the offline controller once the budget is spent; ``refuse``:
    #: RESOURCE_EXHAUSTED. A tenant's entry in the keys file may say otherwise.
    on_budget_exhausted: Literal["offline", "refuse"] = "offline"
    #: Where each tenant's spend today is kept across restarts with the ``local`` ledger;
    #: default ``<data dir>/service/spend.json`` (per replica: see ``ledger``).
    spend_file: Path | None = None
    #: Where rates, concurrency caps and spend budgets are counted (``ledger_lease``,
    #: ``ledger_caps``): ``local`` per process (N replicas allow N times a limit);
    #: ``opensearch`` in the index ``<prefix>-ledger`` of MEMSTRATA_OPENSEARCH_URL, shared
    #: by every replica; ``auto``: ``opensearch`` when the document store is OpenSearch,
    #: else ``local``.
    ledger: Literal["auto", "local", "opensearch"] = "auto"
    #: The OpenSearch the shared ledger lives in; unset: MEMSTRATA_OPENSEARCH_URL (with its
    #: user, password and CA file).
    ledger_url: str | None = None
    #: Share of a limit one replica leases at a time: the error across replicas is at most
    #: this share of the limit per replica (and one round trip to the ledger per slice).
    ledger_slice: float = Field(0.05, gt=0, le=1)
    #: The shared rate counts calls in fixed windows of this many seconds.
    ledger_window_s: float = Field(1.0, ge=0.1, le=60)
    #: Seconds one ledger request may take (it runs on the event loop, once per slice; a
    #: count takes a few ms, so a slower ledger counts as down).
    ledger_timeout_s: float = Field(0.25, gt=0, le=30)
    #: Seconds the ledger is left alone after it failed: budgets then fail safe (UNAVAILABLE
    #: or the offline answer, per ``on_budget_exhausted``), rates use the outage share.
    ledger_retry_s: float = Field(5.0, gt=0, le=600)
    #: Share of a tenant's rate (and concurrency cap) each replica admits on its own while
    #: the ledger is down.
    ledger_outage_share: float = Field(0.5, ge=0, le=1)
    #: The audit log (deletes, exports, key changes, admin calls; append-only JSONL, 0600);
    #: default ``<data dir>/audit.jsonl``. ``memstrata audit verify`` checks its hash chain.
    audit_file: Path | None = None
    #: Seconds a replica's lease of a tenant's concurrency slots lasts in the shared ledger
    #: unless renewed (renewed each third of it, unused slots given back then): a replica
    #: that dies frees its slots after this long (``query_service.ledger_caps``).
    ledger_lease_ttl_s: float = Field(15.0, ge=1, le=600)

    @model_validator(mode="after")
    def _tls_pair(self) -> "ServiceSettings":
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("MEMSTRATA_SERVICE_TLS_CERT and MEMSTRATA_SERVICE_TLS_KEY go together")
        if self.tls_client_ca is not None and self.tls_cert is None:
            raise ValueError("MEMSTRATA_SERVICE_TLS_CLIENT_CA needs MEMSTRATA_SERVICE_TLS_CERT "
                             "and MEMSTRATA_SERVICE_TLS_KEY (mutual TLS is TLS first)")
        if self.limit_max is not None and self.limit_min > self.limit_max:
            raise ValueError(f"MEMSTRATA_SERVICE_LIMIT_MIN ({self.limit_min}) must not exceed "
                             f"MEMSTRATA_SERVICE_LIMIT_MAX ({self.limit_max})")
        return self


def _per_core(cap: int = 4) -> int:
    """One thread per core, at most ``cap``."""
    return max(1, min(cap, os.cpu_count() or 1))
