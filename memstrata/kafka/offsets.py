"""How far a consumer group is behind its topics: committed offsets against end offsets.

The stream worker commits a batch's offsets only once the stores hold it, so a
group whose committed offsets have reached the topics' end offsets has stored
every record produced before. Two parts need that answer and both ask here:

- the stream worker, to drain before it stops (``memstrata up`` on Ctrl-C),
  and anyone checking that what was produced is stored (tests, benches);
- the query service, before a close or a delete it applies to the stores
  directly: turns still in the topic would otherwise land after it (and bring
  a deleted session back).

Read with aiokafka's admin client and consumer (the ``kafka`` and ``grpc``
extras); nothing is imported until a function runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from memstrata.config import defaults
from memstrata.kafka import clients
from memstrata.kafka.ends import log_end_offsets
from memstrata.kafka.settings import KafkaSettings

__all__ = ["committed_offsets", "group_lag", "topic_ends", "wait_committed",
           "wait_committed_to"]

log = logging.getLogger(__name__)


@asynccontextmanager
async def _clients(brokers: str, kafka: KafkaSettings | None
                   ) -> AsyncIterator[tuple[Any, Any]]:
    """An admin client (committed offsets) and a consumer (end offsets), closed on exit."""
    settings = kafka or defaults(KafkaSettings)
    admin = clients.admin(settings, brokers=brokers)
    consumer = clients.consumer(settings, brokers=brokers)
    try:  # closed even when cancelled half-started (a second Ctrl-C during a drain)
        await admin.start()
        await consumer.start()
        yield admin, consumer
    finally:
        await consumer.stop()
        await admin.close()


async def _ends(consumer: Any, topic_names: Sequence[str]) -> dict[Any, int]:
    """End offsets of every partition of ``topic_names`` (a missing topic has none)."""
    from aiokafka import TopicPartition

    await consumer.topics()  # refresh the metadata: partitions created since are seen
    tps = [TopicPartition(t, p) for t in topic_names
           for p in sorted(consumer.partitions_for_topic(t) or ())]
    return await log_end_offsets(consumer, tps)  # not end_offsets: see memstrata.kafka.ends


async def topic_ends(brokers: str, topic_names: Sequence[str], *,
                     kafka: KafkaSettings | None = None) -> dict[tuple[str, int], int]:
    """The end offset (records produced so far) of every partition of ``topic_names``."""
    consumer = clients.consumer(kafka or defaults(KafkaSettings), brokers=brokers)
    try:
        await consumer.start()
        ends = await _ends(consumer, topic_names)
    finally:
        await consumer.stop()
    return {(tp.topic, tp.partition): end for tp, end in ends.items()}


async def _lag(admin: Any, group: str, ends: dict[Any, int]) -> dict[tuple[str, int], int]:
    """Records of each partition in ``ends`` that ``group`` has not committed."""
    try:
        done = await admin.list_consumer_group_offsets(group, partitions=list(ends))
    except Exception:  # noqa: BLE001 - no such group yet: nothing committed
        done = {}
    out = {}
    for tp, end in ends.items():
        meta = done.get(tp)
        committed = meta.offset if meta is not None and meta.offset >= 0 else 0
        out[(tp.topic, tp.partition)] = max(0, end - committed)
    return out


async def committed_offsets(brokers: str, group: str, topic: str, partitions: Sequence[int],
                            *, kafka: KafkaSettings | None = None) -> dict[int, int]:
    """The group's committed offsets (the next offset to read) for some partitions of a topic.

    Partitions the group has not committed are left out.
    """
    from aiokafka import TopicPartition

    admin = clients.admin(kafka or defaults(KafkaSettings), brokers=brokers)
    await admin.start()
    try:
        got = await admin.list_consumer_group_offsets(
            group, partitions=[TopicPartition(topic, p) for p in partitions])
        return {tp.partition: meta.offset for tp, meta in got.items()
                if meta is not None and meta.offset >= 0}
    finally:
        await admin.close()


async def group_lag(brokers: str, group: str, topic_names: Sequence[str], *,
                    kafka: KafkaSettings | None = None) -> dict[tuple[str, int], int]:
    """Records not yet committed by ``group``, per (topic, partition)."""
    async with _clients(brokers, kafka) as (admin, consumer):
        return await _lag(admin, group, await _ends(consumer, topic_names))


async def wait_committed_to(admin: Any, group: str, targets: Mapping[Any, int],
                            timeout_s: float, *, poll_s: float = 0.05) -> bool:
    """Wait until ``group`` has committed each ``TopicPartition`` up to its target offset
    (the next offset to read is at least the target); False on timeout.

    For a caller that holds a started aiokafka admin client for its lifetime (the
    service waits for one control event at a time this way).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        try:
            got = await admin.list_consumer_group_offsets(group, partitions=list(targets))
            if all((meta := got.get(tp)) is not None and meta.offset >= target
                   for tp, target in targets.items()):
                return True
        except Exception as exc:  # noqa: BLE001 - no such group yet, or the broker is busy
            log.debug("committed offsets of %s: %s", group, exc)
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(poll_s)


async def wait_committed(brokers: str, group: str, topic_names: Sequence[str],
                         timeout_s: float, *, poll_s: float = 0.25, follow: bool = False,
                         kafka: KafkaSettings | None = None) -> bool:
    """Wait until ``group`` has committed the records of ``topic_names``; False on timeout.

    ``follow=False`` waits for the records on the topics when it is called (the
    end offsets are read once: a delete waits for what was published before it,
    not for what keeps arriving); ``follow=True`` reads them again at every poll,
    so records produced meanwhile are waited for too (draining before a stop).
    A broker that is busy or restarting is asked again until ``timeout_s``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    ends: dict[Any, int] | None = None
    while True:
        try:
            async with _clients(brokers, kafka) as (admin, consumer):
                while True:
                    if ends is None or follow:
                        ends = await _ends(consumer, topic_names)
                    if not any((await _lag(admin, group, ends)).values()):
                        return True
                    if loop.time() >= deadline:
                        return False
                    await asyncio.sleep(poll_s)
        except Exception as exc:  # noqa: BLE001 - the broker is busy: ask again
            log.debug("committed offsets of %s: %s", group, exc)
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(poll_s)
