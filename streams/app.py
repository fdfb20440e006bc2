"""The Faust application: two agents over raw bytes, a session table, an idle timer.

Values arrive as raw bytes (``value_serializer="raw"``) and are decoded by
:mod:`streams.events` inside the agent: Faust's own decoding would crash the
agent on a poison message. Turns are taken in batches
(up to ``batch_max``, cut ``freshness_s / 2`` after the previous cut:
:mod:`streams.batching`), written through
:class:`~streams.processor.Processor`, and acknowledged only after the stores
have them and the L0 / DLQ notices are sent; offsets are committed from acks.
(``take_events`` would acknowledge a batch in its ``finally`` even when the
agent is stopped half way through it, and the stop then commits offsets whose
records were never stored.)

:class:`StreamApp` is the wiring: built once per worker (by
:class:`streams.runtime.StreamRuntime`), it makes the Faust app, its topics and
session table, and registers its own methods as the agents, the timers and
the rebalance hook, so each reads as one method with the state it shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import faust
from faust.exceptions import NotReady

from memstrata.kafka.offsets import committed_offsets, topic_ends
from memstrata.kafka.security import faust_credentials
from memstrata.limits import TurnLimits
from memstrata.roles import MemoryWriter
from memstrata.telemetry.kafka import batch_span
from memstrata.telemetry.writer import traced_writer
from streams import topics
from streams.batching import paced
from streams.faust_compat import ReadOffsets
from streams.metrics import StreamMetrics
from streams.outage import StoreUnavailable, settle_outage
from streams.outbox import Outbox, publish
from streams.gaps import SkipGuard
from streams.processor import Processor, Quiesced
from streams.progress import TurnProgress, within
from streams.records import Record
from streams.recycle import forget_changelog_offsets
from streams.replay import read_range
from streams.sessions import route_of
from memstrata.kafka import KafkaSettings
from streams.settings import StreamSettings

__all__ = ["ExtraService", "SessionTable", "StreamApp", "faust_app", "idle_round"]

log = logging.getLogger("memstrata.stream")
#: How often events move from Faust's take buffer to the batcher (seconds).
TAKE_TICK_S = 0.05
#: How often a partition the group has never committed is asked for again (StreamApp._seed).
SEED_RETRY_S = 60.0

#: An extra asyncio service started on the worker's event loop (e.g. the gRPC
#: server in embedded mode). It receives the worker's Memory, runs until
#: cancelled at shutdown, and must not block the loop.
ExtraService = Callable[[Any], Awaitable[None]]


class SessionTable(faust.Table):
    """The session table, each entry on the partition of its session's turns.

    Its keys are escaped (:func:`streams.sessions.session_key`), so hashing
    them would scatter entries over other partitions than their turns; each
    is placed as the producer places the session's turns (the record key,
    aiokafka's default partitioner), and moves with them on a rebalance.
    """

    def partition_for_key(self, key: Any) -> int | None:
        from aiokafka.partitioner import DefaultPartitioner

        text = key.decode() if isinstance(key, bytes) else str(key)
        parts = list(range(int(self.partitions or self.app.conf.topic_partitions)))
        return int(DefaultPartitioner()(route_of(text), parts, parts))


async def idle_round(processor: Processor, deliver: Callable[[Outbox], Awaitable[None]], *,
                     stopping: Callable[[], bool],
                     outage: Callable[[StoreUnavailable], Awaitable[None]],
                     fatal: Callable[[BaseException], None]) -> None:
    """One run of the idle timer: close idle sessions and send their notices.

    While the worker stops, nothing starts, a sweep under way ends after its
    chunk, and a failure (the producer is stopped before the timers: Faust's
    ``NotReady``) is logged, not fatal: the stores hold the closes, and the
    sessions left open are closed by the next worker.
    """
    if stopping():
        return
    notes: list[Any] = []
    try:
        notes = await processor.close_idle(stopping=stopping)
        if notes:
            await deliver(Outbox(l0=notes))
    except asyncio.CancelledError:
        raise
    except StoreUnavailable as down:
        await outage(down)
    except BaseException as exc:  # noqa: BLE001
        if not (stopping() or isinstance(exc, NotReady)):
            fatal(exc)
            return
        log.warning("stopping: idle closes interrupted, %d notices not sent (%s: %s); "
                    "the stores hold the closes made", len(notes), type(exc).__name__, exc)


def faust_app(kafka: KafkaSettings, brokers: str, work_dir: Path | None = None) -> faust.App:
    """The Faust app of the worker: raw bytes in and out, at-least-once, no web server.

    The group (the Faust app id) is ``kafka``'s, the one the service's producer
    and the lag checks use too.
    """
    return faust.App(
        kafka.group,
        broker=[f"kafka://{b.strip()}" for b in brokers.split(",") if b.strip()],
        broker_credentials=faust_credentials(kafka),
        store="memory://",
        datadir=str(work_dir) if work_dir else None,
        autodiscover=False,
        value_serializer="raw",
        key_serializer="raw",
        topic_partitions=kafka.partitions,
        topic_replication_factor=kafka.replication,
        topic_allow_declare=True,
        producer_acks=1,
        producer_max_request_size=kafka.max_request_bytes,
        broker_session_timeout=kafka.session_timeout_s,
        broker_heartbeat_interval=kafka.heartbeat_s,
        broker_commit_interval=kafka.commit_interval_s,
        broker_request_timeout=max(kafka.request_timeout_s, kafka.session_timeout_s + 5),
        broker_rebalance_timeout=max(kafka.session_timeout_s * 2, 10),
        consumer_auto_offset_reset="earliest",
        processing_guarantee="at_least_once",
        web_enabled=False,
        stream_wait_empty=True,
        table_standby_replicas=0,
    )


def _record(event: Any) -> Record:
    m = event.message
    return Record(m.topic, m.partition, m.offset, m.key, m.value, m.timestamp)


async def _ack_all(stream_: Any, events: Sequence[Any]) -> None:
    """Acknowledge a batch the stores hold (noack_take acknowledges nothing itself)."""
    for e in events:
        await stream_.ack(e)


class StreamApp:
    """The Faust app wired around a writer; its agents and timers are its methods.

    Run it with :func:`streams.worker.run_worker`. ``stream`` and ``kafka`` are
    the entry point's loaded settings; the turns topic and the group (the Faust
    app id) are ``kafka``'s, the ones the service's producer uses too.
    """

    def __init__(
        self,
        writer: MemoryWriter,
        brokers: str,
        *,
        turns: TurnLimits,
        stream: StreamSettings,
        kafka: KafkaSettings,
        work_dir: Path | None = None,
        services: Sequence[ExtraService] = (),
        service_arg: Any = None,
        metrics: StreamMetrics | None = None,
    ) -> None:
        self.metrics = metrics or StreamMetrics.create()
        self.brokers = brokers
        #: The Kafka settings the app was built with (the worker's lag checks use them).
        self.kafka = kafka
        self.stream = stream
        #: Called before the process exits on a fatal error (stops the embedded broker).
        self.on_fatal: list[Callable[[], None]] = []
        self.services = tuple(services)
        self.service_arg = service_arg
        self.turns_name = kafka.topic_turns
        self.app = app = faust_app(kafka, brokers, work_dir)
        self.turns_topic = self._raw_topic(self.turns_name)
        self.control_topic = self._raw_topic(topics.CONTROL)
        # Open sessions: last event time and provisional turns. On the partition of the
        # session's turns (SessionTable), so it moves with that partition on a rebalance;
        # the stores stay the truth.
        self.sessions = app.tables.add(SessionTable(
            app, name="sessions", default=None, beacon=app.tables.beacon,
            partitions=kafka.partitions, use_partitioner=True,
            schema=faust.Schema(key_type=str, key_serializer="raw", value_serializer="json")))
        progress = TurnProgress(self.committed, self.ends)
        # traced_writer: with tracing on, each store write is a span (create_memory...).
        self.processor = Processor(traced_writer(writer), stream, turns=turns,
                                   metrics=self.metrics, sessions=self.sessions,
                                   progress=progress, owned=self.owned, replay=self.replay,
                                   dead_letter_max_bytes=kafka.dead_letter_max_bytes())
        self.read_offsets = ReadOffsets()
        #: Records the consumer skipped are held back and fetched again (streams.gaps),
        #: per topic: turns and control.
        self.gaps = {kafka.topic_turns: SkipGuard(), topics.CONTROL: SkipGuard()}
        #: Partitions the group has never committed: asked again for a start at most
        #: every SEED_RETRY_S (each ask is a broker connection), (topic, partition) -> when.
        self._seed_retry_at: dict[tuple[str, int], float] = {}
        self._register()
        app.memstrata = self  # type: ignore[attr-defined]

    def _raw_topic(self, name: str) -> Any:
        return self.app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw",
                              value_serializer="raw", partitions=self.kafka.partitions)

    def _register(self) -> None:
        """Hand the methods to Faust as its agents, hook, timers and tasks."""
        app = self.app
        app.agent(self.turns_topic, name="memstrata-turns")(self.turns_agent)
        app.agent(self.control_topic, name="memstrata-control")(self.control_agent)
        app.on_rebalance_complete.connect(self.sessions_moved)
        app.timer(interval=max(0.5, min(self.stream.idle_s / 4, 5.0)),
                  on_leader=False)(self.idle_sessions)
        app.timer(interval=1.0, on_leader=False)(self.crashed_services)
        app.sensors.add(self.read_offsets)
        app.timer(interval=5.0, on_leader=False)(self.consumer_lag)
        if self.services:
            app.task(self.extra_services)

    def fatal(self, exc: BaseException) -> None:
        """An error the worker cannot handle: exit at once so no offset is committed past it.

        The batch in hand has not been acknowledged; a restarted worker reads it again.
        """
        log.critical("stream worker stopping on an unexpected error: %r", exc, exc_info=exc)
        for hook in self.on_fatal:
            try:
                hook()
            except Exception:  # noqa: BLE001
                pass
        os._exit(70)

    # -- what the processor asks of the broker ------------------------------
    def owned(self, partition: int) -> bool:
        try:
            assigned = self.app.consumer.assignment()
        except Exception:  # noqa: BLE001 - not started yet
            return True
        return any(tp.topic == self.turns_name and tp.partition == partition
                   for tp in assigned)

    async def committed(self, partitions: list[int]) -> dict[int, int]:
        got = await self._committed_of(self.turns_name, partitions)
        return self.gaps[self.turns_name].cap(got)  # not past a hole (streams.gaps)

    async def replay(self, ranges: dict[int, tuple[int, int]]) -> list[Record]:
        return await read_range(self.brokers, self.turns_name, ranges, self.kafka)

    async def ends(self) -> dict[int, int]:
        got = await topic_ends(self.brokers, [self.turns_name], kafka=self.kafka)
        return {p: end for (_, p), end in got.items()}

    # -- publishing and stopping -------------------------------------------
    async def send(self, topic: str, value: bytes, key: bytes | None) -> None:
        # send_and_wait: with Faust's buffered send, records of one burst went missing
        # on this broker (seen in the DLQ test).
        await self.app.producer.send_and_wait(topic, key, value, None, None, None)

    async def deliver(self, out: Outbox) -> None:
        from aiokafka.errors import MessageSizeTooLargeError

        await publish(out, self.send, too_large=(MessageSizeTooLargeError,))

    async def stop_on_outage(self, down: StoreUnavailable, stream_: Any,
                             events: Sequence[Any]) -> None:
        try:
            await settle_outage(down, events, deliver=self.deliver,
                                ack=stream_.ack if stream_ is not None else None,
                                commit=self.app.consumer.commit, turns_topic=self.turns_name)
        except Exception as exc:  # noqa: BLE001 - stopping anyway; a restart reads it again
            log.warning("could not commit the stored offsets before stopping: %r", exc)
        self.fatal(down)

    async def outage(self, down: StoreUnavailable) -> None:  # commit earlier batches only
        await self.stop_on_outage(StoreUnavailable(str(down)), None, ())

    def stopping(self) -> bool:
        return bool(self.app.should_stop)

    def waiting_after(self, events: Sequence[Any]) -> int | None:
        """Records still in the topic past ``events``, over their partitions (None: unknown).

        From the consumer's high-water marks as of its last fetch: a lower
        bound, which is all the hold decision needs.
        """
        last: dict[Any, int] = {}
        for e in events:
            m = e.message
            last[m.tp] = max(last.get(m.tp, -1), int(m.offset))
        total = 0
        try:
            for tp, offset in last.items():
                high = self.app.consumer.highwater(tp)
                if high is None:
                    return None
                total += max(0, int(high) - offset - 1)
        except Exception:  # noqa: BLE001 - a missing mark only means "not known"
            return None
        return total

    # -- agents ---------------------------------------------------------------
    async def turns_agent(self, stream_: Any) -> None:
        """Turn events: stored a batch at a time, acknowledged once stored."""
        stream, processor = self.stream, self.processor
        # Cut every freshness_s / 2 counted from the previous cut (streams.batching): the
        # chunks come from noack_take on a short tick.
        within = max(0.05, stream.freshness_s / 2)
        tick = min(within, TAKE_TICK_S)
        async with contextlib.aclosing(paced(stream_.noack_take(stream.batch_max, within=tick),
                                             stream.batch_max, within)) as batches:
            async for events in batches:
                try:
                    events = await self._in_order(self.turns_name, events)
                    if not events:
                        continue
                    with batch_span(self.turns_name, events,
                                    group=self.kafka.group):  # tracing on only
                        await self.deliver(await processor.handle_turns(
                            [_record(e) for e in events], self.waiting_after(events)))
                    await _ack_all(stream_, events)
                except asyncio.CancelledError:
                    raise
                except Quiesced:  # stopping: left unacknowledged for the next owner
                    continue
                except StoreUnavailable as down:
                    await self.stop_on_outage(down, stream_, events)
                except BaseException as exc:  # noqa: BLE001
                    self.fatal(exc)

    async def control_agent(self, stream_: Any) -> None:
        """Close and delete events: applied in order, acknowledged once applied."""
        stream = self.stream
        # Closes come in bursts (a file ends many sessions): apply them in order, flush once.
        within = max(0.02, min(0.2, stream.freshness_s / 4))
        async for events in stream_.noack_take(stream.batch_max, within=within):
            try:
                events = await self._in_order(topics.CONTROL, events)
                if not events:
                    continue
                with batch_span(topics.CONTROL, events, group=self.kafka.group):  # tracing on only
                    await self.deliver(await self.processor.handle_controls(
                        [_record(e) for e in events]))
                await _ack_all(stream_, events)
            except asyncio.CancelledError:
                raise
            except Quiesced:  # stopping: left unacknowledged for the next owner
                continue
            except StoreUnavailable as down:  # commit earlier batches only
                await self.stop_on_outage(StoreUnavailable(str(down)), stream_, ())
            except BaseException as exc:  # noqa: BLE001
                self.fatal(exc)

    async def quiesce(self, timeout_s: float) -> bool:
        """Finish the work in hand while the partitions are still ours, then commit
        (:meth:`Processor.quiesce`); False when it did not finish within ``timeout_s``."""
        try:
            notes = await asyncio.wait_for(self.processor.quiesce(), timeout_s)
            if notes:
                await self.deliver(Outbox(l0=notes))
            await self.app.consumer.commit()
        except TimeoutError:
            log.warning("stopping: the batch in hand was not stored within %.0fs "
                        "(MEMSTRATA_STREAM_STOP_FINISH_S); the partitions' next owner stores "
                        "it again", timeout_s)
            return False
        except Exception as exc:  # noqa: BLE001 - stopping anyway: the next owner re-reads
            log.warning("stopping: could not finish the work in hand (%s: %s); the "
                        "partitions' next owner stores it again", type(exc).__name__, exc)
            return False
        return True

    async def _in_order(self, topic: str, events: Sequence[Any]) -> list[Any]:
        """The events to handle now: none past a record the consumer skipped (those are
        held back, unacknowledged, and the consumer is sent back to the hole)."""
        guard = self.gaps[topic]
        first = {e.message.partition for e in events} - set(guard.next)
        if first:  # where the group left off: a hole right after it counts too
            await self._watch_from_committed(topic, sorted(first), 5.0)
        keep, rewind = guard.admit([(e.message.partition, e.message.offset) for e in events])
        for p, offset in rewind.items():
            await self._rewind(topic, p, offset, "a record after it arrived first")
        return [e for e, k in zip(events, keep, strict=True) if k]

    async def _watch_from_committed(self, topic: str, partitions: list[int],
                                    timeout_s: float) -> dict[int, int] | None:
        """Start the skip guard of ``partitions`` at the group's committed offsets; what the
        broker said (partitions never committed are left out), None when it did not answer
        (unknown start: checked from the first record handed on)."""
        try:
            got = await within(self._committed_of(topic, partitions), timeout_s)
        except Exception as exc:  # noqa: BLE001
            log.debug("committed offsets unavailable: %s", exc)
            return None
        self.gaps[topic].start(got)
        return got

    async def _committed_of(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return await committed_offsets(self.brokers, self.kafka.group, topic, partitions,
                                       kafka=self.kafka)

    async def _rewind(self, topic: str, partition: int, offset: int, why: str) -> None:
        from faust.types import TP

        self.metrics.records_refetched.labels(topic).inc()
        log.warning("%s partition %d: record %d was skipped by the consumer (%s); "
                    "fetching again from it", topic, partition, offset, why)
        # seek_wait runs on the consumer's own thread (Faust's plain seek touches the
        # aiokafka consumer from this loop's thread: seen to send nothing again).
        await self.app.consumer.seek_wait({TP(topic, partition): offset})

    def forget_offsets(self) -> None:
        """After a recycle of the embedded broker (a fresh one numbers from 0): every
        offset this app noted meant the old broker."""
        self.processor.progress.forget()
        self.processor.fences.clear()
        for guard in self.gaps.values():
            guard.reset()
        forget_changelog_offsets(self.app)

    async def sessions_moved(self, sender: Any = None, **kwargs: Any) -> None:
        """Partitions moved (their table entries recovered): the idle index is rebuilt,
        and the consumer starts again from the committed offsets."""
        for guard in self.gaps.values():
            guard.reset()
        self._seed_retry_at.clear()
        self.processor.sessions_moved()

    # -- timers and tasks -----------------------------------------------------
    async def idle_sessions(self) -> None:
        await idle_round(self.processor, self.deliver, stopping=self.stopping,
                         outage=self.outage, fatal=self.fatal)

    async def crashed_services(self) -> None:
        """Exit when one of Faust's services crashed rather than idle on without it.

        A crashed table recovery (seen after a rebalance: a changelog high-water
        mark reported below an offset already read) leaves its partitions paused
        for good, so the worker would hold them and consume nothing. Exiting lets
        the group hand them to a live worker, and a restart reads on from the
        committed offsets (at-least-once, idempotent writes).
        """
        app = self.app
        for service in (app, app.tables, app.tables.recovery):
            if service.crashed:
                self.fatal(service.crash_reason or RuntimeError(f"{service!r} crashed"))

    async def consumer_lag(self) -> None:
        """The lag metric per partition of turns and control; from the same reads, the
        records the consumer went past without handing them over (:meth:`_stalled`)."""
        ends: dict[str, dict[int, int]] = {t: {} for t in self.gaps}
        positions: dict[str, dict[int, int]] = {t: {} for t in self.gaps}
        unseeded: dict[str, list[int]] = {t: [] for t in self.gaps}
        try:
            consumer = self.app.consumer
            for tp in consumer.assignment():
                guard = self.gaps.get(tp.topic)
                if guard is None:
                    continue
                if tp.partition not in guard.next:
                    unseeded[tp.topic].append(tp.partition)
                high = consumer.highwater(tp)
                read = self.read_offsets.read.get((tp.topic, tp.partition))
                position: int | None = None
                if read is None or (high is not None and tp.partition in guard.next):
                    at = await asyncio.wait_for(consumer.position(tp), 2.0)
                    position = None if at is None else int(at)
                # Nothing read since the assignment: the lag counts from where it starts.
                nxt = int(read) + 1 if read is not None else position
                if high is not None:
                    lag = max(0, int(high) - int(nxt or 0))
                    self.metrics.consumer_lag.labels(tp.topic, str(tp.partition)).set(lag)
                    if tp.partition in guard.next and position is not None:
                        ends[tp.topic][tp.partition] = int(high)
                        positions[tp.topic][tp.partition] = position
        except Exception:
            log.debug("lag metric unavailable", exc_info=True)
            return
        await self._stalled(ends, positions)
        await self._seed(unseeded)

    async def _seed(self, unseeded: dict[str, list[int]]) -> None:
        """Partitions assigned but not handed a record since: watched from the group's
        committed offset, so that their only record, when the consumer went past it, is
        fetched again too (a delete alone on its control partition waited out its caller's
        deadline: nothing after it showed the hole, and nothing before it started the watch)."""
        now = time.monotonic()
        for topic, partitions in unseeded.items():
            due = sorted(p for p in partitions
                         if self._seed_retry_at.get((topic, p), 0.0) <= now)
            if not due:
                continue
            got = await self._watch_from_committed(topic, due, 2.0)
            if got is None:  # the next look tries again
                continue
            for p in due:  # never committed: no start to watch from until it is
                if p not in got:
                    self._seed_retry_at[(topic, p)] = now + SEED_RETRY_S

    async def _stalled(self, ends: dict[str, dict[int, int]],
                       positions: dict[str, dict[int, int]]) -> None:
        """A record the consumer went past without handing it to the stream, with nothing
        after it to show the hole (the last of its partition): fetched again."""
        for topic, guard in self.gaps.items():
            handed = {p: o for (t, p), o in self.read_offsets.read.items() if t == topic}
            for p, offset in guard.stalled(ends[topic], positions[topic], handed).items():
                try:
                    await self._rewind(topic, p, offset, "the consumer went past it")
                except Exception:
                    log.debug("could not send the consumer back on %s[%d]", topic, p,
                              exc_info=True)

    async def extra_services(self) -> None:
        await asyncio.gather(*(factory(self.service_arg) for factory in self.services))
