"""Create or check every Kafka topic memstrata uses (``memstrata topics create|check``).

A managed cluster usually turns topic auto-creation off, and a topic that a
client creates by accident gets the broker's defaults (one partition, the
default retention): turns and control must have the same partition count, so
that is drift that breaks ordering. This module plans the topics from the
settings, compares them with what the brokers report and creates the missing
ones. It never changes an existing topic: adding partitions moves keys to other
partitions, so a wrong count is reported for an operator to act on.

Topic names come in from the caller (the command line, the composition root,
knows the stream worker's names); this module only talks to the brokers.

Broker gotcha (tansu): describing a topic that does not exist creates it, so the
existing topics are listed first and only those are described.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memstrata.kafka import clients
from memstrata.kafka.security import start_checked
from memstrata.kafka.settings import KafkaSettings

__all__ = ["Drift", "TopicPlan", "TopicReport", "apply_topics", "check_topics", "plan_topics"]

_HOUR_MS = 3_600_000
#: Kafka error code of CreateTopics when the topic exists (a concurrent creator won).
_TOPIC_EXISTS = 36


@dataclass(frozen=True)
class TopicPlan:
    """One topic as the settings want it."""

    role: str  # turns, control, l0, dlq, changelog, leader
    name: str
    partitions: int
    replication: int
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Drift:
    """One difference between the plan and the cluster."""

    topic: str
    what: str  # missing, partitions, replication, config:<name>
    want: str
    have: str

    def line(self) -> str:
        if self.what == "missing":
            return f"{self.topic}: missing"
        return f"{self.topic}: {self.what} is {self.have}, want {self.want}"


@dataclass
class TopicReport:
    """What a check or a create found: the drift left and the topics created."""

    drift: list[Drift] = field(default_factory=list)
    created: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.drift


def plan_topics(kafka: KafkaSettings, *, control: str, l0: str, dlq: str,
                changelogs: Sequence[str], leader: str | None,
                others: Sequence[str] = ()) -> list[TopicPlan]:
    """Every topic of the service, with partitions, replication and retention from ``kafka``.

    turns, control and l0 share the partition count (co-partitioned by key) and the
    retention ``MEMSTRATA_KAFKA_RETENTION_HOURS``; the DLQ keeps records for
    ``MEMSTRATA_KAFKA_DLQ_RETENTION_HOURS``; table changelogs are compacted (their
    last value per key is the table) with the same partitions; Faust's leader topic
    has one partition. ``others`` (topics the worker declares beyond these) are
    planned like turns.
    """
    p, r = kafka.partitions, kafka.replication

    def retention(hours: int) -> dict[str, str]:
        return {"cleanup.policy": "delete", "retention.ms": str(hours * _HOUR_MS)}

    plans = [TopicPlan("turns", kafka.topic_turns, p, r, retention(kafka.retention_hours)),
             TopicPlan("control", control, p, r, retention(kafka.retention_hours)),
             TopicPlan("l0", l0, p, r, retention(kafka.retention_hours)),
             TopicPlan("dlq", dlq, p, r, retention(kafka.dlq_retention_hours))]
    plans += [TopicPlan("other", name, p, r, retention(kafka.retention_hours))
              for name in others if name not in {kafka.topic_turns, control, l0, dlq}]
    plans += [TopicPlan("changelog", name, p, r, {"cleanup.policy": "compact"})
              for name in changelogs]
    if leader:
        plans.append(TopicPlan("leader", leader, 1, r))
    return plans


async def _connect(kafka: KafkaSettings) -> Any:
    admin = clients.admin(kafka, request_timeout_s=kafka.request_timeout_s)
    await start_checked(admin, str(kafka.brokers), kafka)
    return admin


async def _configs(admin: Any, names: Sequence[str]) -> dict[str, dict[str, str]]:
    """Topic configs as the brokers report them (empty where they report none)."""
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    if not names:
        return {}
    out: dict[str, dict[str, str]] = {n: {} for n in names}
    responses = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
    for resp in responses:
        for code, _msg, _type, name, entries in resp.resources:
            if code == 0 and name in out:
                out[name] = {e[0]: str(e[1]) for e in entries if e[1] is not None}
    return out


async def _drift(admin: Any, plans: Sequence[TopicPlan]) -> list[Drift]:
    have = set(await admin.list_topics())
    drift = [Drift(t.name, "missing", "present", "absent") for t in plans if t.name not in have]
    present = [t for t in plans if t.name in have]  # describe only these (see the docstring)
    if not present:
        return drift
    described = {d["topic"]: d for d in await admin.describe_topics([t.name for t in present])}
    configs = await _configs(admin, [t.name for t in present])
    for t in present:
        parts = described.get(t.name, {}).get("partitions", [])
        if len(parts) != t.partitions:
            drift.append(Drift(t.name, "partitions", str(t.partitions), str(len(parts))))
        replicas = min((len(p.get("replicas", [])) for p in parts), default=0)
        if parts and replicas != t.replication:
            drift.append(Drift(t.name, "replication", str(t.replication), str(replicas)))
        got = configs.get(t.name, {})
        for key, want in t.configs.items():
            # A broker that reports nothing for a key gives no evidence of drift.
            if key in got and got[key] != want:
                drift.append(Drift(t.name, f"config:{key}", want, got[key]))
    return drift


async def check_topics(kafka: KafkaSettings, plans: Sequence[TopicPlan]) -> TopicReport:
    """Compare ``plans`` with the cluster; nothing is changed."""
    admin = await _connect(kafka)
    try:
        return TopicReport(drift=await _drift(admin, plans))
    finally:
        await admin.close()


async def apply_topics(kafka: KafkaSettings, plans: Sequence[TopicPlan]) -> TopicReport:
    """Create the missing topics of ``plans``, then report the drift that is left.

    Existing topics are never altered (see the module docstring).
    """
    from aiokafka.admin import NewTopic

    admin = await _connect(kafka)
    try:
        have = set(await admin.list_topics())
        missing = [t for t in plans if t.name not in have]
        created: list[str] = []
        if missing:
            resp = await admin.create_topics(
                [NewTopic(t.name, t.partitions, t.replication, topic_configs=dict(t.configs))
                 for t in missing])
            for name, code, *rest in getattr(resp, "topic_errors", []):
                if code == 0:
                    created.append(name)
                elif code != _TOPIC_EXISTS:
                    raise RuntimeError(f"cannot create topic {name}: Kafka error {code} "
                                       f"{rest[0] if rest else ''}".strip())
        return TopicReport(drift=await _drift(admin, plans), created=created)
    finally:
        await admin.close()
