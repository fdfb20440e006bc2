"""Publishing chat events: a typed producer, and files turned into turn events.

A file holds finished conversations, so each session ends with
``close_session`` (unless asked not to, to replay live traffic). Messages are
sent in file order per session, keyed ``tenant/user/`` (one partition per
user, ADR 0005).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memstrata.ingest.formats import IngestIssue, read_file
from memstrata.config import defaults
from memstrata.kafka import clients
from memstrata.kafka.ends import log_end_offsets
from memstrata.kafka.security import start_checked
from memstrata.kafka.settings import KafkaSettings
from memstrata.model import Scope, Session
from memstrata.wire import user_key
from streams import topics
from memstrata.wire import ControlEvent, TurnEvent
from streams.events import utcnow

__all__ = ["ProduceReport", "StreamProducer", "produce_file", "session_events"]

log = logging.getLogger("memstrata.stream.produce")


def session_events(session: Session) -> list[TurnEvent]:
    """A stored-form session -> the turn events that rebuild it (same message ids, order).

    Messages without a source id get ``<session>:<n>``, as the LongMemEval reader does.
    """
    meta = session.meta
    out: list[TurnEvent] = []
    n = 0
    for turn in session.turns:
        for m in turn.messages:
            out.append(TurnEvent(
                tenant_id=meta.scope.tenant_id, user_id=meta.scope.user_id,
                session_id=meta.session_id, message_id=m.source_id or f"{meta.session_id}:{n}",
                role=m.role, content=m.content, speaker=m.speaker, ts=utcnow(),
                session_date=meta.session_date, labels=dict(meta.labels),
                redacted=list(m.redacted) or None))
            n += 1
    return out


class StreamProducer:
    """An aiokafka producer that speaks the memstrata contracts.

    It remembers the offset after the last turn it sent per partition, so a
    control event it sends carries ``after`` and is applied after those turns.
    No idempotent producer and no transactions (the embedded broker has
    neither): a retried send may duplicate a turn event, which the worker
    ignores by message id.
    """

    def __init__(self, brokers: str, request_timeout_s: float | None = None, *,
                 kafka: KafkaSettings | None = None) -> None:
        from aiokafka.partitioner import DefaultPartitioner

        #: The one Kafka settings class (turns topic, TLS/SASL); the defaults when not given.
        self.kafka = kafka or defaults(KafkaSettings)
        self.brokers = brokers
        self.turns_topic = self.kafka.topic_turns
        timeout_s = self.kafka.request_timeout_s if request_timeout_s is None else request_timeout_s
        #: The producer's partitioner, held here so a control's partition is computed
        #: exactly as the producer places the turns (public aiokafka API).
        self.partitioner = DefaultPartitioner()
        self._producer = clients.producer(
            self.kafka, brokers=brokers, acks=1, request_timeout_s=timeout_s,
            enable_idempotence=False, linger_ms=5, partitioner=self.partitioner)
        self.sent_after: dict[int, int] = {}
        self._inflight: list[asyncio.Future[object]] = []

    async def start(self) -> "StreamProducer":
        await start_checked(self._producer, self.brokers, self.kafka)
        return self

    async def stop(self) -> None:
        await self._producer.stop()

    async def __aenter__(self) -> "StreamProducer":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def send_turn(self, ev: TurnEvent) -> "asyncio.Future[object]":
        """Queue one turn event; await the returned future for the broker's ack."""
        fut = await self._producer.send(self.turns_topic, ev.to_bytes(), key=ev.key)
        self._inflight.append(fut)
        if len(self._inflight) > 10_000:
            await self._settle()
        return fut

    async def _settle(self) -> None:
        """Wait for every turn sent so far and note the offset after each partition's last."""
        inflight, self._inflight = self._inflight, []
        for fut in inflight:
            md = await fut
            p, o = md.partition, md.offset  # type: ignore[attr-defined]
            self.sent_after[p] = max(self.sent_after.get(p, 0), o + 1)

    async def send_raw(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        """Send bytes as they are (tests use it to send malformed events)."""
        await self._producer.send_and_wait(topic, value, key=key)

    async def flush(self) -> None:
        await self._producer.flush()

    async def partition_of(self, key: bytes) -> int:
        parts = await self._producer.partitions_for(self.turns_topic)
        return int(self.partitioner(key, list(parts), list(parts)))

    async def end_offsets(self) -> dict[int, int]:
        """End offset of every turns partition now (what a delete_user must follow)."""
        from aiokafka import TopicPartition

        consumer = clients.consumer(self.kafka, brokers=self.brokers)
        await consumer.start()
        try:
            parts = consumer.partitions_for_topic(self.turns_topic) or set()
            if not parts:
                await consumer.topics()
                parts = consumer.partitions_for_topic(self.turns_topic) or set()
            ends = await log_end_offsets(  # not end_offsets: see memstrata.kafka.ends
                consumer, [TopicPartition(self.turns_topic, p) for p in parts])
            return {tp.partition: off for tp, off in ends.items()}
        finally:
            await consumer.stop()

    async def control(self, type_: str, scope: Scope, session_id: str | None = None) -> None:
        """Send close_session / delete_session / delete_user after the turns already sent."""
        await self._producer.flush()
        await self._settle()
        if type_ == "delete_user":
            after = await self.end_offsets()
            after = {p: max(o, self.sent_after.get(p, 0)) for p, o in after.items()}
        else:
            p = await self.partition_of(user_key(scope.tenant_id, scope.user_id))
            if p not in self.sent_after:  # turns sent by someone else: follow all of them
                ends = await self.end_offsets()
                self.sent_after = {q: max(o, self.sent_after.get(q, 0)) for q, o in ends.items()}
            after = {p: self.sent_after[p]}
        ev = ControlEvent(type=type_, tenant_id=scope.tenant_id,  # type: ignore[arg-type]
                          user_id=scope.user_id, session_id=session_id, ts=utcnow(), after=after)
        await self._producer.send_and_wait(topics.CONTROL, ev.to_bytes(), key=ev.key)


@dataclass
class ProduceReport:
    """What a produce run did; filled in as it goes, so an interrupted run can say so."""

    sessions: int = 0
    #: Messages the broker acknowledged.
    messages: int = 0
    controls: int = 0
    seconds: float = 0.0
    issues: list[IngestIssue] = field(default_factory=list)
    format: str = ""
    #: Messages in the input (known before the first is sent).
    total: int = 0
    #: Sessions whose every message the broker acknowledged.
    finished: int = 0
    #: Ctrl-C stopped the run before every message was sent.
    interrupted: bool = False

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0


#: After Ctrl-C, how long a run may take to collect acks and close the finished sessions.
FINISH_S = 10.0


async def produce_sessions(
    producer: StreamProducer, sessions: list[Session], *, rate: float | None = None,
    close: bool = True, progress: Callable[[int], None] | None = None,
    stamp: bool = True, interleave: bool = False, report: ProduceReport | None = None,
) -> ProduceReport:
    """Send every session's messages in order, then (by default) close each session.

    ``rate`` caps messages per second overall; ``stamp`` sets each event's
    ``ts`` at send time (so freshness is measured from the send);
    ``interleave`` sends one message of each session in turn (live traffic of
    many users at once) instead of session after session. ``progress`` is
    called as the broker acknowledges messages. When the task is cancelled
    (Ctrl-C), the sessions whose messages were all acknowledged are still
    closed (within :data:`FINISH_S`), ``report`` (pass one to read it after
    the cancellation) says how far it got, and the cancellation goes on.
    """
    report = report if report is not None else ProduceReport()
    report.sessions = len(sessions)
    start = time.monotonic()
    pending: list[asyncio.Future[object]] = []
    sent = 0
    per_session = [session_events(s) for s in sessions]
    report.total = sum(len(evs) for evs in per_session)
    left = [len(evs) for evs in per_session]
    tagged = [[(i, ev) for ev in evs] for i, evs in enumerate(per_session)]
    if interleave:
        order = [pair for row in itertools.zip_longest(*tagged) for pair in row if pair]
    else:
        order = [pair for pairs in tagged for pair in pairs]

    def acked(i: int, fut: "asyncio.Future[object]") -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        report.messages += 1
        left[i] -= 1
        if left[i] == 0:
            report.finished += 1
        if progress:
            progress(1)

    try:
        for i, ev in order:
            if rate:
                delay = start + sent / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            if stamp:
                ev = ev.model_copy(update={"ts": utcnow()})
            fut = await producer.send_turn(ev)
            fut.add_done_callback(functools.partial(acked, i))
            pending.append(fut)
            sent += 1
            if len(pending) >= 500:
                await asyncio.gather(*pending)
                pending = []
        if pending:
            await asyncio.gather(*pending)
        if close:
            for session in sessions:
                await producer.control("close_session", session.scope, session.session_id)
                report.controls += 1
    except asyncio.CancelledError:
        report.interrupted = True
        try:
            await asyncio.wait_for(_finish(producer, sessions, pending, left, close, report),
                                   FINISH_S)
        except Exception as exc:  # noqa: BLE001 - the broker went away too: say what was done
            log.warning("after the interruption: %s", exc)
        raise
    finally:
        report.seconds = time.monotonic() - start
    return report


async def _finish(producer: StreamProducer, sessions: list[Session],
                  pending: list["asyncio.Future[object]"], left: list[int], close: bool,
                  report: ProduceReport) -> None:
    """After Ctrl-C: collect the acks in flight, close the sessions that were sent whole."""
    await asyncio.gather(*pending, return_exceptions=True)
    if not close:
        return
    closed = report.controls  # a cancelled close loop: those already closed stay closed
    done = [s for s, n in zip(sessions, left) if n == 0]
    for session in done[closed:]:
        await producer.control("close_session", session.scope, session.session_id)
        report.controls += 1


async def produce_file(
    path: Path, brokers: str, *, fmt: str = "auto", tenant_id: str = "default",
    rate: float | None = None, close: bool = True,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    report: ProduceReport | None = None,
    kafka: KafkaSettings | None = None,
) -> ProduceReport:
    """Read a LoCoMo, LongMemEval or JSONL file and publish it as turn events.

    ``kafka`` is the entry point's Kafka settings (turns topic, TLS/SASL).

    Cancelled (Ctrl-C), it returns what it did with ``interrupted`` set instead
    of raising: the finished sessions are closed, the count is in ``report``.
    """
    parsed = read_file(path, fmt, tenant_id=tenant_id)
    report = report if report is not None else ProduceReport()
    report.issues = parsed.issues
    report.format = parsed.format
    report.sessions = len(parsed.sessions)
    report.total = sum(len(t.messages) for s in parsed.sessions for t in s.turns)
    if on_total:
        on_total(report.total)
    try:
        async with StreamProducer(brokers, kafka=kafka) as producer:
            await produce_sessions(producer, parsed.sessions, rate=rate, close=close,
                                   progress=progress, report=report)
    except asyncio.CancelledError:
        if not report.interrupted:  # cancelled before the first send
            report.interrupted = True
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
    return report
