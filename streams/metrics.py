"""The worker's Prometheus metrics, all built in one place (one registry per worker).

Freshness is event time (``ts``, set by the producer) to the moment the batch
holding the event has been flushed to the stores, i.e. is searchable (for a
session whose open window was held, the moment that window is built).
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

__all__ = ["StreamMetrics"]

_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)


@dataclass
class StreamMetrics:
    registry: CollectorRegistry
    events_in: Counter
    turns_indexed: Counter
    units_indexed: Counter
    provisional_replaced: Counter
    dlq_events: Counter
    l0_build_seconds: Histogram
    freshness_seconds: Histogram
    consumer_lag: Gauge
    control_applied: Counter
    control_after_cut: Counter
    held_sessions: Gauge
    records_refetched: Counter
    records_fenced: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry | None = None) -> "StreamMetrics":
        reg = registry or CollectorRegistry()
        p = "memstrata_stream_"
        return cls(
            registry=reg,
            events_in=Counter(p + "events_in_total", "Events read, by topic.", ["topic"],
                              registry=reg),
            turns_indexed=Counter(p + "turns_indexed_total",
                                  "Turns stored or replaced in L3.", registry=reg),
            units_indexed=Counter(p + "units_indexed_total",
                                  "L0 units upserted, by kind (final or provisional).",
                                  ["kind"], registry=reg),
            provisional_replaced=Counter(p + "provisional_replaced_total",
                                         "Provisional L0 units replaced under the same id.",
                                         registry=reg),
            dlq_events=Counter(p + "dlq_events_total", "Events sent to the DLQ, by reason.",
                               ["reason"], registry=reg),
            l0_build_seconds=Histogram(p + "l0_build_seconds",
                                       "Time to store, build, embed and index one batch.",
                                       buckets=_SECONDS, registry=reg),
            freshness_seconds=Histogram(p + "freshness_seconds",
                                        "Event time to searchable, per turn event.",
                                        buckets=_SECONDS, registry=reg),
            consumer_lag=Gauge(p + "consumer_lag", "Messages not yet read, by topic and partition.",
                               ["topic", "partition"], registry=reg),
            control_applied=Counter(p + "control_applied_total",
                                    "Control events applied, by type.", ["type"], registry=reg),
            control_after_cut=Counter(
                p + "control_after_cut_total",
                "Control events applied without waiting for all of their 'after' offsets: "
                "unreachable (past the partition's end, or no such partition; cut to what "
                "exists), stalled (no progress) or deadline (the absolute wait bound).",
                ["why"], registry=reg),
            held_sessions=Gauge(p + "held_sessions",
                                "Sessions whose last window waits for more messages "
                                "(the worker is behind its topic).", registry=reg),
            records_refetched=Counter(p + "records_refetched_total",
                                      "Times the consumer was sent back to a record it "
                                      "skipped, by topic (streams.gaps).", ["topic"],
                                      registry=reg),
            records_fenced=Counter(p + "records_fenced_total",
                                   "Turns handed again after a delete that covers them, not "
                                   "stored again (streams.fences).", registry=reg),
        )

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Expose /metrics on ``addr:port`` (a daemon thread)."""
        start_http_server(port, addr=addr, registry=self.registry)
