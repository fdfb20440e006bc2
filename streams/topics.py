"""Topic names and how they are declared.

``turns`` and ``control`` share their key (``tenant/user/``, ADR 0005) and their
partition count, so every event of a user, turns and deletes alike, lands on
partition *p* of both, owned by one worker: a control event waits for the
turns it follows on that one partition, whatever the number of workers.
"""

from __future__ import annotations

from dataclasses import dataclass

from memstrata.wire import CONTROL_TOPIC, L0_TOPIC, TURNS_TOPIC

TURNS = TURNS_TOPIC  # the contract lives in the core (memstrata.wire)
CONTROL = CONTROL_TOPIC
L0 = L0_TOPIC
DLQ = "memstrata.dlq.v1"

ALL: tuple[str, ...] = (TURNS, CONTROL, L0, DLQ)


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication: int = 1


def specs(partitions: int, replication: int = 1, *,
          turns: str = TURNS) -> list[TopicSpec]:
    """Every memstrata topic with the same partition count (co-partitioned).

    ``turns`` is the configured turns topic (``MEMSTRATA_KAFKA_TOPIC_TURNS``).
    """
    names = (turns, *(n for n in ALL if n != TURNS))
    return [TopicSpec(name, partitions, replication) for name in names]
