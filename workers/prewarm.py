"""Pre-warming: build L1 for sessions likely to be read soon, within a budget.

Fed by ``memstrata.l0.v1`` (the stream worker's report of units it indexed).
``recent`` warms every session that just got turns; ``hot`` only sessions with
at least ``prewarm_hot_events`` reports within ``prewarm_window_s`` (a
conversation in full flow). Off by default. Warming reads L1 through the owning
memory's :class:`~memstrata.layers.lazy.LazyLayers` (so the build goes wherever
its executor sends it and the cache is written as on a first read); the budget
caps sessions per minute and, with an LLM builder, estimated USD per hour.
Over budget, a session is skipped, not queued: its first read builds it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from memstrata.kafka import KafkaSettings
from memstrata.llm.usage import PriceTable
from memstrata.model import Scope
from memstrata.roles import HostedMemory
from memstrata.telemetry.genai import LAYER, TENANT
from memstrata.telemetry.kafka import child_span, record_span, span_context
from workers.metrics import WorkersMetrics
from workers.settings import WorkersSettings

log = logging.getLogger(__name__)

#: The topic the stream worker writes (``streams.topics.L0``; named here so that the
#: workers need no import of the stream service).
L0_TOPIC = "memstrata.l0.v1"

#: ``warm(scope, session_id) -> True when it built, False when the cache had it``.
Warm = Callable[[Scope, str], bool]
#: Total USD spent so far by the builder (None: the builder costs nothing).
Spend = Callable[[], float]


class Prewarmer:
    """Decides which sessions to warm and warms them, within the budget."""

    def __init__(self, settings: WorkersSettings, warm: Warm, *,
                 spend: Spend | None = None, metrics: WorkersMetrics | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = settings.prewarm
        self.settings = settings
        self.warm = warm
        self.spend = spend
        self.metrics = metrics or WorkersMetrics()
        self.clock = clock
        #: Sessions to warm, each with the trace context to warm it under (None: off).
        self._pending: OrderedDict[tuple[Scope, str], Any] = OrderedDict()
        self._events: dict[tuple[Scope, str], deque[float]] = {}
        self._tokens = float(self._capacity)
        self._refilled = clock()
        self._spent: deque[tuple[float, float]] = deque()  # (when, usd) of past hour
        self._lock = threading.Lock()
        self.warmed: list[tuple[Scope, str]] = []

    @property
    def _capacity(self) -> float:
        return max(1.0, self.settings.prewarm_sessions_per_min)

    # -- deciding ------------------------------------------------------------
    def offer(self, tenant_id: str, user_id: str, session_id: str, trace: Any = None) -> bool:
        """One L0 report for a session; True when the session is now queued to warm."""
        if self.policy == "off":
            return False
        key = (Scope(tenant_id=tenant_id, user_id=user_id), session_id)
        now = self.clock()
        with self._lock:
            if self.policy == "hot":
                seen = self._events.setdefault(key, deque())
                seen.append(now)
                while seen and now - seen[0] > self.settings.prewarm_window_s:
                    seen.popleft()
                if len(seen) < self.settings.prewarm_hot_events:
                    return False
                seen.clear()
            self._pending[key] = trace
            self._pending.move_to_end(key)
        return True

    def offer_record(self, value: bytes | str, trace: Any = None) -> bool:
        """A raw ``memstrata.l0.v1`` record (JSON); a malformed one is logged and ignored."""
        try:
            data = json.loads(value)
            return self.offer(str(data["tenant_id"]), str(data["user_id"]),
                              str(data["session_id"]), trace)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("pre-warm: ignored a malformed %s record: %s", L0_TOPIC, exc)
            return False

    # -- budget --------------------------------------------------------------
    def _take_token(self, now: float) -> bool:
        rate = self.settings.prewarm_sessions_per_min / 60.0
        self._tokens = min(self._capacity, self._tokens + (now - self._refilled) * rate)
        self._refilled = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def _spent_last_hour(self, now: float) -> float:
        while self._spent and now - self._spent[0][0] > 3600:
            self._spent.popleft()
        return sum(usd for _, usd in self._spent)

    # -- warming -------------------------------------------------------------
    def drain(self) -> int:
        """Warm what is queued, as far as the budget allows; returns sessions built."""
        built = 0
        while True:
            with self._lock:
                if not self._pending:
                    return built
                key, parent = self._pending.popitem(last=False)
            now = self.clock()
            if self.spend is not None and \
                    self._spent_last_hour(now) >= self.settings.prewarm_usd_per_hour:
                self.metrics.prewarm_sessions.labels(outcome="skipped_budget").inc()
                continue
            if not self._take_token(now):
                self.metrics.prewarm_sessions.labels(outcome="skipped_budget").inc()
                continue
            before = self.spend() if self.spend is not None else 0.0
            try:
                with child_span("memstrata.prewarm", parent, {  # tracing on only
                        TENANT: key[0].tenant_id, LAYER: 1}):
                    made = self.warm(*key)
            except Exception as exc:  # noqa: BLE001 - a failed warm-up is the first read's problem
                log.warning("pre-warm of %s %s failed: %s", key[0], key[1], exc)
                self.metrics.prewarm_sessions.labels(outcome="failed").inc()
                continue
            if self.spend is not None:
                usd = max(0.0, self.spend() - before)
                self._spent.append((now, usd))
                self.metrics.prewarm_spend.inc(usd)
            self.metrics.prewarm_sessions.labels(outcome="built" if made else "cached").inc()
            self.warmed.append(key)
            built += int(made)


def memory_warmer(memory: HostedMemory) -> Warm:
    """Warm L1 through ``memory``'s lazy layers (the cache is written as on a read)."""

    def warm(scope: Scope, session_id: str) -> bool:
        return memory.warm_facts(scope, session_id)

    return warm


def memory_spend(memory: HostedMemory, prices: PriceTable | None = None) -> Spend | None:
    """The builder's USD so far from the memory's usage meter (None for the offline builder).

    Shared meter: answers and pre-warming count together, so in a busy process the
    estimate errs on the side of stopping early.
    """
    if memory.builder.name == "extractive":
        return None
    table = prices or PriceTable.example()
    meter = memory.meter

    def spend() -> float:
        return float(meter.cost_usd(table, strict=False))

    return spend


async def consume_l0(brokers: str, prewarmer: Prewarmer, *,
                     group: str | None = "memstrata-prewarm", stop: threading.Event | None = None,
                     topic: str = L0_TOPIC, offset_reset: str = "latest",
                     kafka: KafkaSettings | None = None) -> None:
    """Read ``memstrata.l0.v1`` and warm what the policy picks until ``stop`` is set.

    ``kafka`` gives TLS/SASL (the service's loaded settings; the defaults without it).

    One consumer group across service replicas splits the sessions among them
    (``group=None``: this consumer reads every partition, committing nothing).
    Warming runs in a thread so a slow build never stalls the consumer's heartbeats.
    """
    import asyncio

    from memstrata.config import defaults
    from memstrata.kafka import clients

    consumer = clients.consumer(kafka or defaults(KafkaSettings), topic, brokers=brokers,
                                group=group, enable_auto_commit=group is not None,
                                auto_offset_reset=offset_reset)
    await consumer.start()
    try:
        while stop is None or not stop.is_set():
            batch = await consumer.getmany(timeout_ms=500)
            queued = sum(_offer(prewarmer, rec, topic, group) for recs in batch.values()
                         for rec in recs)
            if queued:
                await asyncio.to_thread(prewarmer.drain)
    finally:
        await consumer.stop()


def _offer(prewarmer: Prewarmer, rec: Any, topic: str, group: str | None) -> bool:
    """One L0 record; with tracing on, under a span that continues the stream worker's trace."""
    with record_span(topic, rec.headers, group=group) as span:
        return prewarmer.offer_record(rec.value, trace=span_context(span))
