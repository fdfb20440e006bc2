"""``memstrata.v1.MemoryService`` over one memory: each method checks its input, runs the
synchronous core in the right pool, and converts the result to its wire form."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import grpc

from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from memstrata.rpc.answers import answer_to_wire
from memstrata.rpc.convert import (
    date_from_wire,
    facts_to_wire,
    hit_to_wire,
    meta_to_wire,
    notes_to_wire,
    receipt_to_wire,
    stats_to_wire,
    step_to_wire,
    turn_to_wire,
    unit_to_wire,
)
from memstrata.controller.config import ControllerSettings
from memstrata.contract import Answer
from memstrata.controller.run import Controller
from memstrata.evidence.trace import MEMORY_ROLE
from memstrata.limits import TurnLimits, TurnRefused, check_top_k, validate_turn
from memstrata.unit_caches import forget_everywhere
from memstrata.llm.usage import PriceTable
from memstrata.model import Scope, SessionMeta, TraceStep
from memstrata.redact.redactor import Redactor
from memstrata.lifecycle.export import USERS_PAGE, read_session
from memstrata.lifecycle.records import ExportedSession
from memstrata.roles import DeleteReceipt, HostedMemory, MemoryReader
from memstrata.rpc.export import chunks_of
from memstrata.rpc.profiles import entities_to_wire, profiles_to_wire
from memstrata.profile_records import MAX_ENTITY_CHARS
from memstrata.telemetry.genai import search_span
from memstrata.wire import TurnEvent
from query_service import controls, writes
from query_service.audit import AuditLog
from query_service.audit import page as audit_page
from query_service.calls import count_records, current_grant, current_tenant
from query_service.errors import (
    Exhausted,
    InvalidArgument,
    NotFound,
    check_id,
    check_range,
    check_text,
    rpc_errors,
    rpc_stream_errors,
)
from query_service.limits import SpendBook, TenantGate
from query_service.metrics import ServiceMetrics
from query_service.publish import (
    NotStored,
    Refused,
    StoredPublisher,
    StoreFailed,
    TurnPublisher,
    now_utc,
)
from query_service.settings import ServiceSettings
from query_service.work import GuardedReader, Pools, WorkToken, call_end_reason

if TYPE_CHECKING:
    from memstrata.executor import RolloutRequest
    from memstrata.llm.openai_compat import ChatClient

log = logging.getLogger(__name__)
T = TypeVar("T")
#: Audit entries per ReadAudit page, at most (and by default).
AUDIT_PAGE = 500

_DONE = object()
_DURABILITY = {"stored": pb.DURABILITY_STORED, "broker": pb.DURABILITY_BROKER}


def _date(field: str, text: str) -> datetime | None:
    try:
        return date_from_wire(text)
    except ValueError:
        raise InvalidArgument(f"{field}: not an ISO 8601 date ({text[:40]!r})") from None


class Rollouts(Protocol):
    """Answers one question on a worker pool (``workers.rollout.RayRolloutExecutor``)."""

    def answer_one(self, request: RolloutRequest) -> Answer: ...


class MemoryServicer(pb_grpc.MemoryServiceServicer):
    """The service's methods; the tenant of each call comes from :func:`current_tenant`."""

    def __init__(self, memory: HostedMemory, settings: ServiceSettings,
                 controller_settings: ControllerSettings, chat: ChatClient | None, pools: Pools,
                 metrics: ServiceMetrics, gate: TenantGate, ledger: SpendBook,
                 publisher: TurnPublisher | None = None,
                 prices: PriceTable | None = None, *, turn_limits: TurnLimits) -> None:
        self.memory = memory
        self.settings = settings
        #: Limits of a turn event (``MEMSTRATA_TURN_*``), shared with the stream worker.
        self.turn_limits = turn_limits
        #: The memory's redaction step, applied again here before the replay check and the
        #: publish (memstrata.redact): the topic never carries a masked value, and a replay
        #: is compared with what the stores hold, both masked.
        self.redactor: Redactor | None = memory.redactor
        self.controller_settings = controller_settings
        self.chat = chat
        self.prices = prices or controller_settings.prices()
        self.pools = pools
        self.metrics = metrics
        self.gate = gate
        self.ledger = ledger
        self.publisher = publisher
        #: A batch published to Kafka is wholly before or wholly after a delete (writes.py).
        self.user_locks = writes.UserLocks()
        #: Messages published to the topic and not yet seen stored (only those in flight).
        self.pending = writes.PendingWrites(settings.pending_max, settings.pending_keep_s)
        self._sweeps: set[asyncio.Task[int]] = set()
        self._next_sweep: asyncio.TimerHandle | None = None
        self._closed = False
        #: Kafka mode: closes and deletes go through memstrata.control.v1 (set by build_server).
        self.controls: controls.TopicControls | None = None
        #: The audit log ReadAudit reads (set by build_server; None: no log kept).
        self.audit: AuditLog | None = None
        #: Ray rollout pool (set by ``workers`` when MEMSTRATA_WORKERS_BACKEND=ray) and the
        #: tenants its actors can read; other answers run in this process.
        self.rollouts: Rollouts | None = None
        self.rollout_tenants: set[str] = set()
        # The controller sees only a MemoryReader, so the query limit travels as an argument.
        self._controller_kwargs: dict[str, Any] = {
            "max_query_chars": memory.max_query_chars}

    # -- helpers ------------------------------------------------------------
    @staticmethod
    def _scope(user_id: str) -> Scope:
        return Scope(tenant_id=current_tenant(), user_id=check_id("user_id", user_id))

    async def _read(self, context: Any, fn: Callable[[WorkToken], T]) -> T:
        return await self.pools.run(self.pools.read, context, fn,
                                    method=context_method(context))

    def _user_exists(self, reader: MemoryReader, scope: Scope) -> None:
        if not reader.sessions(scope):
            raise NotFound(f"user_id: no memory for user {scope.user_id!r}")

    # -- answers --------------------------------------------------------------
    def _prepare_answer(self, request: pb.AnswerRequest) -> tuple[
            Scope, str, datetime | None, ControllerSettings, ChatClient | None, bool]:
        scope = self._scope(request.user_id)
        question = check_text("question", request.question, self.settings.max_question_chars)
        asked_on = _date("asked_on", request.asked_on)
        s = self.controller_settings
        opts = request.options
        if opts.max_steps:
            s = s.model_copy(update={"max_steps": check_range(
                "options.max_steps", opts.max_steps, 1, self.settings.max_answer_steps)})
        if opts.HasField("max_depth"):
            depth = check_range("options.max_depth", opts.max_depth, 0, 3)
            s = s.model_copy(update={f"use_l{n}": False for n in range(depth + 1, 4)})
        if opts.without:
            s = s.without(list(opts.without))  # ConfigError names the unknown ablation
        chat, fallback = self.chat, False
        if chat is not None and s.policy != "rules":
            lim = self.gate.limits(scope.tenant_id)
            why = self.ledger.exhausted(scope.tenant_id, lim)
            if why is not None:
                if lim.on_budget_exhausted == "refuse":
                    raise Exhausted(f"tenant {scope.tenant_id}: {why}")
                chat, fallback = None, True
                s = s.model_copy(update={"policy": "rules"})
        return scope, question, asked_on, s, chat, fallback

    def _answer_work(self, scope: Scope, question: str, asked_on: datetime | None,
                     settings: ControllerSettings, chat: ChatClient | None, token: WorkToken,
                     on_step: Callable[[TraceStep], None] | None = None) -> Answer:
        reader = GuardedReader(self.memory, token)
        self._user_exists(reader, scope)

        def step(entry: TraceStep) -> None:
            token.check()
            if on_step is not None:
                on_step(entry)

        if (self.rollouts is not None and chat is self.chat
                and scope.tenant_id in self.rollout_tenants):
            remote = self._remote_answer(scope, question, asked_on, settings)
            if remote is not None:
                for entry in remote.steps:  # AnswerStream replays the actor's trace
                    step(entry)
                return remote

        controller = Controller(reader, settings, chat, self.prices,
                                **self._controller_kwargs)
        # The call's deadline bounds the answer too (the LLM path gives way to the offline
        # answer in time), when it is shorter than MEMSTRATA_CONTROLLER_ANSWER_BUDGET_S.
        return controller.answer(scope, question, asked_on, on_step=step,
                                 deadline=token.deadline)

    def _remote_answer(self, scope: Scope, question: str, asked_on: datetime | None,
                       settings: ControllerSettings) -> Answer | None:
        """The answer of a Ray rollout actor; None when Ray is lost (answer in-process)."""
        from memstrata.executor import ExecutorBusy, ExecutorUnavailable, RolloutRequest

        if self.rollouts is None:
            return None
        own = None if settings == self.controller_settings else settings  # call's options
        try:
            return self.rollouts.answer_one(RolloutRequest(scope, question, asked_on, own))
        except ExecutorBusy as exc:
            raise Exhausted(str(exc)) from None
        except ExecutorUnavailable as exc:
            log.error("Ray rollout pool unavailable (%s): answering in-process", exc)
            return None

    def _account(self, tenant: str, answer: Answer, fallback: bool) -> None:
        tokens = sum(t.tokens_in + t.tokens_out for role, t in answer.summary.tokens.items()
                     if role != MEMORY_ROLE)
        self.ledger.record(tenant, tokens, answer.summary.cost_usd)
        self.metrics.observe_answer(answer, self.prices, tenant, fallback=fallback)

    @rpc_errors
    async def Answer(self, request: pb.AnswerRequest, context: Any) -> pb.AnswerReply:
        scope, question, asked_on, s, chat, fallback = self._prepare_answer(request)
        answer = await self.pools.run(
            self.pools.answer, context,
            lambda token: self._answer_work(scope, question, asked_on, s, chat, token),
            method="Answer")
        self._account(scope.tenant_id, answer, fallback)
        return answer_to_wire(answer, budget_fallback=fallback)

    @rpc_stream_errors
    async def AnswerStream(self, request: pb.AnswerRequest,
                           context: Any) -> AsyncIterator[pb.AnswerEvent]:
        scope, question, asked_on, s, chat, fallback = self._prepare_answer(request)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def on_step(entry: TraceStep) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, entry)

        token = WorkToken(context.time_remaining())
        task = asyncio.ensure_future(self.pools.run(
            self.pools.answer, context,
            lambda t: self._answer_work(scope, question, asked_on, s, chat, t, on_step),
            method="AnswerStream", token=token))
        task.add_done_callback(lambda _: loop.call_soon(queue.put_nowait, _DONE))
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    break
                yield pb.AnswerEvent(step=step_to_wire(item))
            answer = await task
        finally:
            if not task.done():  # the client went away: stop the controller
                token.cancel(call_end_reason(context))
                task.cancel()
        self._account(scope.tenant_id, answer, fallback)
        yield pb.AnswerEvent(answer=answer_to_wire(answer, budget_fallback=fallback))

    # -- reads ----------------------------------------------------------------
    @rpc_errors
    async def Search(self, request: pb.SearchRequest, context: Any) -> pb.SearchReply:
        scope = self._scope(request.user_id)
        queries = list(request.queries)
        for i, q in enumerate(queries):
            check_text(f"queries[{i}]", q, self.memory.max_query_chars)
        top_k = (check_top_k(request.top_k, self.settings.max_top_k,
                             "MEMSTRATA_SERVICE_MAX_TOP_K") if request.top_k else None)

        def work(token: WorkToken) -> pb.SearchReply:
            with search_span(scope.tenant_id, queries, top_k) as span:  # tracing on only
                hits = self.memory.search(scope, queries, top_k=top_k)
                if span is not None:
                    span.set_attribute("memstrata.hits", len(hits))
            if not hits:
                self._user_exists(self.memory, scope)
            # Built here, not on the event loop: the loop thread carries every
            # call's I/O, so it is kept to the work only it can do.
            return pb.SearchReply(tenant_id=scope.tenant_id, user_id=scope.user_id,
                                  hits=[hit_to_wire(h) for h in hits])

        reply: pb.SearchReply = await self._read(context, work)
        return reply

    @rpc_errors
    async def ListSessions(self, request: pb.ListSessionsRequest,
                           context: Any) -> pb.ListSessionsReply:
        scope = self._scope(request.user_id)

        def work(token: WorkToken) -> list[SessionMeta]:
            metas = self.memory.sessions(scope)
            if not metas:
                raise NotFound(f"user_id: no memory for user {scope.user_id!r}")
            return metas

        metas = await self._read(context, work)
        return pb.ListSessionsReply(sessions=[meta_to_wire(m) for m in metas])

    def _session_args(self, request: pb.SessionRequest | pb.ReadRawRequest) -> tuple[Scope, str]:
        return (self._scope(request.user_id),
                check_id("session_id", request.session_id))

    @rpc_errors
    async def GetSession(self, request: pb.SessionRequest, context: Any) -> pb.SessionInfo:
        scope, sid = self._session_args(request)
        meta = await self._read(context, lambda t: self.memory.session(scope, sid))
        return meta_to_wire(meta)

    @rpc_errors
    async def ReadUnits(self, request: pb.SessionRequest, context: Any) -> pb.UnitsReply:
        scope, sid = self._session_args(request)
        units = await self._read(context, lambda t: self.memory.l0(scope, sid))
        return pb.UnitsReply(tenant_id=scope.tenant_id, user_id=scope.user_id,
                             units=[unit_to_wire(u) for u in units])

    @rpc_errors
    async def ReadFacts(self, request: pb.SessionRequest, context: Any) -> pb.FactsReply:
        scope, sid = self._session_args(request)
        facts = await self._read(context, lambda t: self.memory.facts(scope, sid))
        return facts_to_wire(facts)

    @rpc_errors
    async def ReadTurns(self, request: pb.SessionRequest, context: Any) -> pb.NotesReply:
        scope, sid = self._session_args(request)
        notes = await self._read(context, lambda t: self.memory.notes(scope, sid))
        return notes_to_wire(notes)

    @rpc_errors
    async def ReadRaw(self, request: pb.ReadRawRequest, context: Any) -> pb.RawReply:
        scope, sid = self._session_args(request)
        wanted = [check_range(f"turns[{i}]", t, 1, 1_000_000)
                  for i, t in enumerate(request.turns)] or None
        turns = await self._read(context, lambda t: self.memory.raw(scope, sid, wanted))
        return pb.RawReply(turns=[turn_to_wire(t) for t in turns])

    # -- profiles ---------------------------------------------------------------
    @rpc_errors
    async def GetProfile(self, request: pb.GetProfileRequest,
                         context: Any) -> pb.GetProfileReply:
        """The profiles ``entity`` names; none: NOT_FOUND naming it."""
        scope = self._scope(request.user_id)
        entity = check_text("entity", request.entity, MAX_ENTITY_CHARS)
        found = await self._read(context, lambda t: self.memory.profile(scope, entity))
        return profiles_to_wire(found)

    @rpc_errors
    async def ListEntities(self, request: pb.ListEntitiesRequest,
                           context: Any) -> pb.ListEntitiesReply:
        """The user's entities; an unknown user is NOT_FOUND, as for ListSessions."""
        scope = self._scope(request.user_id)

        def work(token: WorkToken) -> pb.ListEntitiesReply:
            found = self.memory.entities(scope, everything=request.all)
            if not found:
                self._user_exists(self.memory, scope)
            whole = (self.memory.entity_profiles(scope, everything=request.all)
                     if request.profiles and found else [])
            return entities_to_wire(found, whole)

        reply: pb.ListEntitiesReply = await self._read(context, work)
        return reply

    # -- writes ---------------------------------------------------------------
    def _record(self, field: str, e: pb.TurnEvent, tenant: str) -> TurnEvent:
        # The core's one check of a turn event, the one the stream worker's decoder runs:
        # an event accepted here is one the worker stores.
        # An event's own tenant was checked against the key's by the interceptor.
        data = {"tenant_id": e.tenant_id or tenant, "user_id": e.user_id,
                "session_id": e.session_id,
                "message_id": e.message_id, "role": e.role, "content": e.content,
                "ts": _date(f"{field}.ts", e.ts) or now_utc(),
                "session_date": _date(f"{field}.session_date", e.session_date),
                "speaker": e.speaker or None, "labels": dict(e.labels)}
        try:
            return validate_turn(data, self.turn_limits, where=field)
        except TurnRefused as exc:
            raise InvalidArgument(str(exc)) from None

    async def _ingest_redacted(self, records: Sequence[TurnEvent], fields: Sequence[str],
                               context: Any) -> pb.IngestReply:
        """:meth:`_ingest` of the records the tenant's redaction rule keeps, masked.

        A message the rule drops is never published or stored, and counts as accepted
        (the service took it; the policy decided), so a client's retry logic sees it done.
        """
        redactor = self.redactor
        if redactor is None or not redactor.active:
            return await self._ingest(records, fields, context)
        limit = self.turn_limits.max_content_chars  # the worker checks the masked text again
        kept: list[TurnEvent] = []
        kept_fields: list[str] = []
        for record, field in zip(records, fields):
            out = redactor.event(record, max_chars=limit)
            if out is not None:
                kept.append(out)
                kept_fields.append(field)
        reply = await self._ingest(kept, kept_fields, context)
        reply.accepted += len(records) - len(kept)
        return reply

    async def _ingest(self, records: Sequence[TurnEvent], fields: Sequence[str],
                      context: Any) -> pb.IngestReply:
        """Publish or write ``records``; the reply says what the acknowledgement promises.

        ``STORED``: in the stores, flushed (direct writes, and the embedded broker,
        whose publisher waits for the worker). ``BROKER``: acknowledged by Kafka at
        ``acks=all``. A publisher that cannot confirm in time fails the call with
        UNAVAILABLE: nothing is acknowledged, and a retry with the same message ids
        adds nothing twice. On every route ``accepted`` counts the messages that were
        new and ``duplicates`` the replays (an id the session holds, has in flight or
        saw earlier in the request, with the same content); an id that comes back with
        other content refuses the request (INVALID_ARGUMENT naming the event).
        """
        if self.publisher is None:
            dups = await self.pools.run(
                self.pools.write, context,
                lambda t: writes.append_direct(self.memory, records, fields), method="Ingest")
            return pb.IngestReply(accepted=len(records) - dups, route="direct",
                                  duplicates=dups, durability=pb.DURABILITY_STORED)
        left = context.time_remaining()
        timeout = None if left is None else max(0.0, left - 0.05)
        publisher = self.publisher
        two_phase = isinstance(publisher, StoredPublisher)
        async with self.user_locks.hold(Scope(tenant_id=r.tenant_id, user_id=r.user_id)
                                        for r in records):
            # Under the users' locks: no other Ingest of these users runs between the
            # look at what is known and the publish, and a delete waits for what was
            # published before it (in flight: ``self.pending``).
            sorted_ = await self._sort_for_publish(records, fields, context)
            new = sorted_.new
            if new and isinstance(publisher, StoredPublisher):
                metas = await publisher.send(new)
                self.pending.add(new)  # until the worker has stored them (just below)
            elif new:
                await publisher.publish(new, timeout_s=timeout)
                self.pending.add(new)  # stored later, by the stream workers
                self._schedule_sweep()
        if two_phase:
            assert isinstance(publisher, StoredPublisher)
            # Outside the locks: calls of one user wait for the worker side by side.
            if new:
                await self._confirm(publisher, sorted_, metas, timeout, context)
            if sorted_.in_flight:  # STORED promises them too: wait for the call that sent them
                await self._wait_in_flight(sorted_.in_flight, timeout, context)
        return pb.IngestReply(accepted=len(new), route=publisher.route,
                              duplicates=sorted_.duplicates,
                              durability=_DURABILITY[publisher.durability])

    async def _confirm(self, publisher: StoredPublisher, sorted_: writes.Sorted,
                       metas: Sequence[Any], timeout: float | None, context: Any) -> None:
        """Wait until the worker stored what was published; settle the in-flight entries."""
        new = sorted_.new
        try:
            await publisher.confirm(new, metas, timeout_s=timeout)
        except NotStored as exc:  # still in the broker: the entries stay until stored
            self._schedule_sweep()
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except (StoreFailed, Refused) as exc:
            # The refused ones are never stored: a retry must not count them as duplicates.
            self.pending.discard(new)
            if isinstance(exc, Refused):  # named as the request names the event
                raise InvalidArgument(sorted_.fields[exc.index] + str(exc).removeprefix(
                    f"events[{exc.index}]")) from None
            raise
        self.pending.discard(new)  # stored

    async def _wait_in_flight(self, records: Sequence[TurnEvent], timeout: float | None,
                              context: Any, poll_s: float = 0.01) -> None:
        """Until the calls that published ``records`` have seen them stored (or refused).

        Then the stores are read: a message they do not hold was refused, and this
        call fails as that one did (UNAVAILABLE, retry), never acknowledging it.
        """
        loop = asyncio.get_running_loop()
        limit = self.settings.ingest_wait_s if timeout is None else min(
            self.settings.ingest_wait_s, timeout)
        deadline = loop.time() + limit
        while [r for r in records if self.pending.holds(r)]:
            if loop.time() >= deadline:
                await context.abort(grpc.StatusCode.UNAVAILABLE, (
                    f"{len(records)} event(s) of this call repeat events an earlier call sent, "
                    f"which the stream worker has not stored within {limit:g} s; nothing is "
                    f"acknowledged: retry with the same message_id values"))
            await asyncio.sleep(poll_s)
        keys = list(writes.group_by_session(records))
        stored = await self.pools.run(self.pools.read, context,
                                      lambda t: writes.known_messages(self.memory, keys),
                                      method="Ingest")
        missing = [r for r in records if r.message_id not in stored.get(
            (Scope(tenant_id=r.tenant_id, user_id=r.user_id), r.session_id), {})]
        if missing:
            raise StoreFailed(len(missing), len(records))

    async def _sort_for_publish(self, records: Sequence[TurnEvent], fields: Sequence[str],
                                context: Any) -> writes.Sorted:
        """New and duplicate messages of a request bound for the topic.

        Known: what the stores hold, read now, and what this service published that
        is still in flight. The read also settles the in-flight entries it finds stored.
        """
        keys = list(writes.group_by_session(records))
        stored = await self.pools.run(self.pools.read, context,
                                      lambda t: writes.known_messages(self.memory, keys),
                                      method="Ingest")
        flying: writes.Known = {}
        for (scope, sid), ids in stored.items():
            now = self.pending.lookup(scope, sid)
            if now:
                self.pending.settle(scope, {sid: set(now) & set(ids)})
                flying[(scope, sid)] = {k: v for k, v in now.items() if k not in ids}
        return writes.sort_events(records, fields, stored, flying)

    def _schedule_sweep(self, *, again: bool = False) -> None:
        """Now and then, drop the in-flight entries the stores hold (bounded memory).

        Asked by Ingest; a sweep starts at most every ``pending_sweep_s`` (else a timer
        asks again then), and while entries remain the next one follows
        ``pending_sweep_s`` later, so the table drains without further traffic.
        """
        if self._closed or not len(self.pending):
            return
        if not self.pending.sweep_due(0.0 if again else self.settings.pending_sweep_s):
            self._timer()
            return
        loop = asyncio.get_running_loop()

        def run(fn: Callable[[], Any]) -> Any:
            return loop.run_in_executor(self.pools.read, fn)

        task = loop.create_task(self.pending.sweep(self.memory, run))
        self._sweeps.add(task)
        task.add_done_callback(self._sweep_done)

    def _timer(self) -> None:
        """One timer at a time asks for the next sweep ``pending_sweep_s`` from now."""
        if self._next_sweep is None and not self._closed:
            self._next_sweep = asyncio.get_running_loop().call_later(
                self.settings.pending_sweep_s, self._on_timer)

    def _on_timer(self) -> None:
        self._next_sweep = None
        self._schedule_sweep(again=True)

    def _sweep_done(self, task: asyncio.Task[int]) -> None:
        self._sweeps.discard(task)
        if task.cancelled() or self._closed:
            return
        if task.exception() is not None:
            log.warning("sweep of in-flight messages failed (%s); the next Ingest retries",
                        type(task.exception()).__name__)
        elif task.result():
            self._timer()

    def close(self) -> None:
        """Stop sweeping (the server is stopping; its pools go next)."""
        self._closed = True
        if self._next_sweep is not None:
            self._next_sweep.cancel()
        for task in list(self._sweeps):
            task.cancel()

    @rpc_errors
    async def Ingest(self, request: pb.IngestRequest, context: Any) -> pb.IngestReply:
        if not request.HasField("event"):
            raise InvalidArgument("event: required")
        return await self._ingest_redacted(
            [self._record("event", request.event, current_tenant())], ["event"], context)

    @rpc_errors
    async def IngestBatch(self, request: pb.IngestBatchRequest, context: Any) -> pb.IngestReply:
        n = len(request.events)
        if n == 0:
            raise InvalidArgument("events: at least one event is required")
        if n > self.settings.max_batch_events:
            raise InvalidArgument(f"events: {n} events, limit is {self.settings.max_batch_events}")
        tenant = current_tenant()
        fields = [f"events[{i}]" for i in range(n)]
        records = [self._record(f, e, tenant) for f, e in zip(fields, request.events)]
        return await self._ingest_redacted(records, fields, context)

    @rpc_errors
    async def CloseSession(self, request: pb.SessionRequest,
                           context: Any) -> pb.CloseSessionReply:
        scope, sid = self._session_args(request)
        if self.controls is not None:
            async with self.user_locks.hold([scope]):
                return await self._close_via_topic(context, self.controls, scope, sid)
        await self._wait_stored("close")
        n = await self.pools.run(self.pools.write, context,
                                 lambda t: writes.close_session(self.memory, scope, sid),
                                 method="CloseSession")
        return pb.CloseSessionReply(units_written=n)

    async def _wait_stored(self, what: str) -> None:
        """With Ingest going through Kafka, let the worker store earlier turns first.

        Closes and deletes act on the stores directly; a turn still in the topic
        would otherwise land after them (and bring a deleted session back).
        """
        if self.publisher is not None and not await self.publisher.wait_stored(
                self.settings.delete_wait_s):
            raise writes.DeleteIncomplete(
                f"the stream worker has not stored the turns published before this {what} "
                f"within {self.settings.delete_wait_s:g} s (MEMSTRATA_SERVICE_DELETE_WAIT_S); "
                f"nothing was changed: retry")

    async def _delete(self, context: Any, scope: Scope, sid: str | None) -> pb.DeleteReply:
        async with self.user_locks.hold([scope]):  # no batch of this user half-stored meanwhile
            if self.controls is not None:
                reply = await self._delete_via_topic(context, self.controls, scope, sid)
            else:
                reply = await self._delete_now(context, scope, sid)
        count_records(sum(c.removed for c in reply.removed))  # for the audit log
        return reply

    # -- Kafka mode: closes and deletes through memstrata.control.v1 (controls.py) --------
    async def _held(self, context: Any, scope: Scope, sid: str | None,
                    what: str) -> controls.Held:
        """What the stores hold for the call; nothing there yet: first let the worker store
        the turns published before (the user may be only in the topic), then NotFound."""
        def read(fn: Any) -> Any:
            return self.pools.run(self.pools.read, context, lambda t: fn(),
                                  method=context_method(context))

        held = await read(lambda: controls.held(self.memory, scope, sid))
        if not held:
            await self._wait_stored(what)
            await self.pending.wait(self.memory, scope, self.settings.delete_wait_s, read)
            held = await read(lambda: controls.held(self.memory, scope, sid))
        if not held:
            if sid is not None:
                await read(lambda: self.memory.session(scope, sid))  # SessionNotFound
            raise NotFound(f"user_id: no memory for user {scope.user_id!r}")
        return held

    async def _close_via_topic(self, context: Any, route: controls.TopicControls, scope: Scope,
                               sid: str) -> pb.CloseSessionReply:
        await self._held(context, scope, sid, "close")
        n = await route.close(scope, sid, self.settings.delete_wait_s)
        return pb.CloseSessionReply(units_written=n)

    async def _delete_via_topic(self, context: Any, route: controls.TopicControls,
                                scope: Scope, sid: str | None) -> pb.DeleteReply:
        before = await self._held(context, scope, sid, "delete")

        def read(fn: Any) -> Any:
            return self.pools.run(self.pools.read, context, lambda t: fn(), method="Delete")

        receipt = await route.delete(self.memory, scope, sid, before, read,
                                     self.settings.delete_wait_s)
        self.pending.forget(scope, sid)
        forget_everywhere(scope, sid)  # applied by a worker, maybe in another process
        return pb.DeleteReply(removed=[pb.StoreCount(store=k, removed=v)
                                       for k, v in sorted(receipt.removed.items())],
                              complete=receipt.complete)

    async def _delete_now(self, context: Any, scope: Scope, sid: str | None) -> pb.DeleteReply:
        await self._wait_stored("delete")
        if self.publisher is not None and not await self.pending.wait(
                self.memory, scope, self.settings.delete_wait_s,
                lambda fn: self.pools.run(self.pools.read, context, lambda t: fn())):
            self.pending.forget(scope)  # never stored (refused by the worker?): do not block
            raise writes.DeleteIncomplete(
                f"the stream worker has not stored every turn this service published for "
                f"user {scope.user_id!r} within {self.settings.delete_wait_s:g} s "
                f"(MEMSTRATA_SERVICE_DELETE_WAIT_S); nothing was changed: retry")

        def work(token: WorkToken) -> DeleteReceipt:
            if sid is None:
                self._user_exists(self.memory, scope)
            else:
                self.memory.session(scope, sid)
            return writes.delete(self.memory, scope, sid)

        receipt = await self.pools.run(self.pools.write, context, work, method="Delete")
        self.pending.forget(scope, sid)
        return receipt_to_wire(receipt)

    @rpc_errors
    async def DeleteSession(self, request: pb.SessionRequest, context: Any) -> pb.DeleteReply:
        scope, sid = self._session_args(request)
        return await self._delete(context, scope, sid)

    @rpc_errors
    async def DeleteUser(self, request: pb.UserRequest, context: Any) -> pb.DeleteReply:
        return await self._delete(context, self._scope(request.user_id), None)

    @rpc_errors
    async def GetStats(self, request: pb.GetStatsRequest, context: Any) -> pb.StatsReply:
        tenant = current_tenant()
        st = await self._read(context, lambda t: writes.stats(self.memory, tenant))
        return stats_to_wire(st)

    # -- export ---------------------------------------------------------------
    @rpc_stream_errors
    async def ExportUser(self, request: pb.ExportRequest,
                         context: Any) -> AsyncIterator[pb.ExportChunk]:
        """A user's sessions (or every user's of the key's tenant), read one session at a
        time from the doc store (``memstrata.lifecycle.export``), as chunks."""
        tenant = current_tenant()
        docs = self.memory.docs
        if request.all_users and request.user_id:
            raise InvalidArgument("user_id: leave it empty with all_users (the whole tenant)")
        one = None if request.all_users else self._scope(request.user_id)
        async for scope in self._export_scopes(context, docs, tenant, one):
            metas = await self._read(context, partial(_sessions_of, docs, scope))
            if not metas and one is not None:
                raise NotFound(f"user_id: no memory for user {scope.user_id!r}")
            for meta in metas:
                session = await self._read(context, partial(
                    _export_session, docs, meta, request.layers))
                count_records(session.messages)  # for the audit log
                for chunk in chunks_of(session):
                    yield chunk

    # -- keys, users and audit -----------------------------------------------------
    @rpc_errors
    async def DescribeKey(self, request: pb.DescribeKeyRequest, context: Any) -> pb.KeyInfo:
        grant = current_grant()
        return pb.KeyInfo(key_id=grant.key_id, tenant_id=grant.tenant,
                          tenants=sorted(grant.tenants), scopes=grant.shown_scopes(),
                          user_id=grant.user or "")

    @rpc_errors
    async def ListUsers(self, request: pb.ListUsersRequest,
                        context: Any) -> pb.ListUsersReply:
        """A page of the call tenant's users from the doc store, in id order."""
        tenant = current_tenant()
        limit = (check_range("limit", request.limit, 1, USERS_PAGE) if request.limit
                 else USERS_PAGE)
        after = check_id("after", request.after, required=False) or None
        docs = self.memory.docs
        # One more than asked: a full page says whether another follows.
        users = await self._read(context, partial(_users_after, docs, tenant, after,
                                                  limit + 1))
        page, more = users[:limit], len(users) > limit
        count_records(len(page))
        return pb.ListUsersReply(user_ids=page, next_after=page[-1] if more else "")

    @rpc_errors
    async def ReadAudit(self, request: pb.ReadAuditRequest,
                        context: Any) -> pb.ReadAuditReply:
        """A page of the audit entries about the call's tenant (the interceptor checked the
        admin scope); the file is read in the read pool."""
        tenant = current_tenant()
        limit = (check_range("limit", request.limit, 1, AUDIT_PAGE) if request.limit
                 else AUDIT_PAGE)
        log_ = self.audit
        if log_ is None:
            return pb.ReadAuditReply()
        entries, next_seq = await self._read(context, lambda t: audit_page(
            log_.path, tenants={tenant}, after_seq=int(request.after_seq), limit=limit))
        count_records(len(entries))
        return pb.ReadAuditReply(entries=[_audit_to_wire(e) for e in entries],
                                 next_after_seq=next_seq)

    async def _export_scopes(self, context: Any, docs: Any, tenant: str,
                             one: Scope | None) -> AsyncIterator[Scope]:
        """``one``, or every user of the tenant read a page at a time (in id order)."""
        if one is not None:
            yield one
            return
        after: str | None = None
        while True:
            users = await self._read(context, partial(_users_page, docs, tenant, after))
            for user in users:
                yield Scope(tenant_id=tenant, user_id=user)
            if len(users) < USERS_PAGE:
                return
            after = users[-1]


def _sessions_of(docs: Any, scope: Scope, token: WorkToken) -> list[SessionMeta]:
    return docs.list_sessions(scope)  # type: ignore[no-any-return]


def _export_session(docs: Any, meta: SessionMeta, layers: bool,
                    token: WorkToken) -> ExportedSession:
    return read_session(docs, meta, layers=layers)


def _users_after(docs: Any, tenant: str, after: str | None, limit: int,
                 token: WorkToken) -> list[str]:
    return docs.list_users(tenant, after=after, limit=limit)  # type: ignore[no-any-return]


def _audit_to_wire(e: dict[str, Any]) -> pb.AuditEntry:
    return pb.AuditEntry(
        seq=int(e.get("seq") or 0), ts=str(e.get("ts") or ""), key_id=str(e.get("key_id") or ""),
        via=str(e.get("via") or ""), action=str(e.get("action") or ""),
        tenant_id=str(e.get("tenant") or ""), user_id=str(e.get("user") or ""),
        session_id=str(e.get("session") or ""), records=int(e.get("records") or 0),
        outcome=str(e.get("outcome") or ""), detail=str(e.get("detail") or ""))


def _users_page(docs: Any, tenant: str, after: str | None, token: WorkToken) -> list[str]:
    return docs.list_users(tenant, after=after, limit=USERS_PAGE)  # type: ignore[no-any-return]


def context_method(context: Any) -> str:
    from query_service.calls import CALL

    info = CALL.get()
    return info.method if info is not None else ""
