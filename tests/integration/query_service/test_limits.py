"""Bad input, limits, deadlines and cancellation, each with its status code."""

from __future__ import annotations

import threading
import time

import grpc
import pytest

from memstrata.client import MemoryClient, RateLimited
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from memstrata.model import Scope
from tests.integration.query_service.conftest import Service
from tests.support.conversation import ASKED_ON, MAYA

TINY = Scope(tenant_id="tiny", user_id="nobody")


@pytest.fixture(scope="module")
def stub(service: Service):
    channel = grpc.insecure_channel(service.address)
    yield pb_grpc.MemoryServiceStub(channel)
    channel.close()


def _event(**fields: str) -> pb.TurnEvent:
    base = dict(user_id="maya", session_id="s9", message_id="m1", role="user", content="hi")
    base.update(fields)
    return pb.TurnEvent(**base)


BAD = [
    ("Answer", pb.AnswerRequest(user_id="maya", question="x" * 2001), "question", "2000"),
    ("Answer", pb.AnswerRequest(user_id="maya", question="  "), "question", "required"),
    ("Answer", pb.AnswerRequest(user_id="maya", question="q", asked_on="yesterday-ish"),
     "asked_on", "ISO 8601"),
    ("Answer", pb.AnswerRequest(user_id="maya", question="q",
                                options=pb.AnswerOptions(max_depth=7)), "options.max_depth", "3"),
    ("Answer", pb.AnswerRequest(user_id="maya", question="q",
                                options=pb.AnswerOptions(max_steps=500)), "options.max_steps",
     "50"),
    ("Answer", pb.AnswerRequest(user_id="maya", question="q",
                                options=pb.AnswerOptions(without=["l9"])), "ablation", "l9"),
    ("Search", pb.SearchRequest(user_id="maya bad", queries=["q"]), "user_id", "no spaces"),
    ("Search", pb.SearchRequest(user_id="u" * 129, queries=["q"]), "user_id", "128"),
    ("Search", pb.SearchRequest(user_id="maya", queries=[]), "queries", "at least one"),
    ("Search", pb.SearchRequest(user_id="maya", queries=["q"] * 9), "queries", "8"),
    ("Search", pb.SearchRequest(user_id="maya", queries=["q" * 2001]), "queries[0]", "2000"),
    ("Search", pb.SearchRequest(user_id="maya", queries=["q"], top_k=101), "top_k",
     "between 1 and 100, got 101 (MEMSTRATA_SERVICE_MAX_TOP_K)"),
    ("ReadRaw", pb.ReadRawRequest(user_id="maya", session_id="s1", turns=[0]), "turns[0]", "1"),
    ("ReadFacts", pb.SessionRequest(user_id="maya", session_id="a\nb"), "session_id", "128"),
    ("IngestBatch", pb.IngestBatchRequest(), "events", "at least one"),
    ("IngestBatch", pb.IngestBatchRequest(events=[_event()] * 501), "events", "500"),
    ("IngestBatch", pb.IngestBatchRequest(events=[_event(), _event(content="x" * 20_001)]),
     "events[1].content", "limit is 20000 (MEMSTRATA_TURN_MAX_CONTENT_CHARS)"),
    ("IngestBatch", pb.IngestBatchRequest(events=[_event(role="system")]), "events[0].role",
     "user"),
    ("Ingest", pb.IngestRequest(event=_event(message_id="")), "event.message_id", "required"),
    ("Ingest", pb.IngestRequest(), "event", "required"),
    ("Ingest", pb.IngestRequest(event=_event(labels={f"k{i}": "v" for i in range(17)})),
     "event.labels", "16"),
    # Issue 16: event times out of range, ids ending in a newline.
    ("Ingest", pb.IngestRequest(event=_event(ts="0001-01-01T00:00:00")), "event.ts",
     "1900-01-01"),
    ("IngestBatch", pb.IngestBatchRequest(events=[
        _event(), _event(session_date="9999-06-01T00:00:00+00:00")]),
     "events[1].session_date", "9999-01-01"),
    ("Ingest", pb.IngestRequest(event=_event(message_id="m1\n")), "event.message_id",
     "whitespace"),
    ("Ingest", pb.IngestRequest(event=_event(user_id="maya\n")), "event.user_id", "no spaces"),
    ("Search", pb.SearchRequest(user_id="maya\n", queries=["q"]), "user_id", "no spaces"),
    ("ReadTurns", pb.SessionRequest(user_id="maya", session_id="s1\n"), "session_id",
     "no spaces"),
    ("DeleteSession", pb.SessionRequest(user_id="maya\n", session_id="s1"), "user_id",
     "no spaces"),
    ("DeleteUser", pb.UserRequest(user_id="maya\n"), "user_id", "no spaces"),
]


@pytest.mark.parametrize("method,request_,field,limit", BAD,
                         ids=[f"{m}-{f}-{i}" for i, (m, _, f, _l) in enumerate(BAD)])
def test_bad_input_names_the_field_and_the_limit(service: Service, stub, method, request_,
                                                 field, limit):
    with pytest.raises(grpc.RpcError) as info:
        getattr(stub, method)(request_, metadata=(("x-api-key", service.keys.acme),))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in info.value.details() and limit in info.value.details(), \
        info.value.details()


@pytest.mark.parametrize("method,request_", [
    ("ListSessions", pb.ListSessionsRequest(user_id="stranger")),
    ("Search", pb.SearchRequest(user_id="stranger", queries=["kitten"])),
    ("Answer", pb.AnswerRequest(user_id="stranger", question="What is my kitten called?")),
    ("ReadFacts", pb.SessionRequest(user_id="maya", session_id="s0-none")),
    ("ReadRaw", pb.ReadRawRequest(user_id="maya", session_id="s0-none")),
    ("DeleteSession", pb.SessionRequest(user_id="maya", session_id="s0-none")),
    ("DeleteUser", pb.UserRequest(user_id="stranger")),
])
def test_unknown_user_or_session_is_not_found(service: Service, stub, method, request_):
    with pytest.raises(grpc.RpcError) as info:
        getattr(stub, method)(request_, metadata=(("x-api-key", service.keys.acme),))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert "user_id" in info.value.details() or "session" in info.value.details()


def test_rate_limit_trips_and_recovers(service: Service):
    """Tenant 'tiny' may make 2 calls/s with a burst of 2."""
    with MemoryClient(service.address, api_key=service.keys.tiny) as c:
        time.sleep(1.1)  # a full bucket
        c.sessions(TINY)
        c.sessions(TINY)
        with pytest.raises(RateLimited) as info:
            c.sessions(TINY)
        assert "rate limit" in info.value.details and info.value.retry_after_s is not None
        assert 0 < info.value.retry_after_s <= 0.5
        time.sleep(info.value.retry_after_s + 0.05)
        assert c.sessions(TINY) == []  # recovered (an unknown user has no sessions)


def test_concurrency_limit_trips_and_recovers(service: Service):
    """Tenant 'tiny' may have one call in flight; a slow answer holds the slot."""
    service.slow_reader.delay_s = 0.2
    errors: list[BaseException] = []
    time.sleep(1.1)
    with MemoryClient(service.slow.address, api_key=service.keys.tiny) as c:
        def slow_call() -> None:
            try:
                c.sessions(TINY)
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=slow_call)
        t.start()
        time.sleep(0.08)
        with pytest.raises(RateLimited) as info:
            c.sessions(TINY)
        assert "concurrency limit of 1 calls in flight" in info.value.details
        t.join()
        assert not errors
        time.sleep(0.6)  # refill the bucket too
        service.slow_reader.delay_s = 0.0
        c.sessions(TINY)  # recovered


def _wait_for(pred, timeout: float = 3.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def test_deadline_stops_the_work(service: Service):
    slow = service.slow_reader
    slow.delay_s = 0.15
    abandoned = service.slow.metrics.abandoned
    try:
        with MemoryClient(service.slow.address, api_key=service.keys.acme) as c:
            start = time.monotonic()
            with pytest.raises(Exception) as info:
                c.answer(MAYA, "What is the name of my kitten?", ASKED_ON, timeout_s=0.4)
            assert getattr(info.value, "code", None) == grpc.StatusCode.DEADLINE_EXCEEDED
            assert time.monotonic() - start < 1.0
        # The controller notices at its next read or step and stops: reads stop growing.
        assert _wait_for(lambda: abandoned.labels(method="Answer", reason="deadline")._value
                         .get() >= 1)
        reads = slow.reads
        time.sleep(0.5)
        assert slow.reads == reads
    finally:
        slow.delay_s = 0.0


def test_client_cancellation_stops_the_work(service: Service):
    slow = service.slow_reader
    slow.delay_s = 0.15
    abandoned = service.slow.metrics.abandoned
    channel = grpc.insecure_channel(service.slow.address)
    try:
        stub = pb_grpc.MemoryServiceStub(channel)
        call = stub.AnswerStream(pb.AnswerRequest(user_id="maya",
                                                  question="What is the name of my kitten?"),
                                 metadata=(("x-api-key", service.keys.acme),))
        first = next(call)  # the controller is running
        assert first.HasField("step")
        call.cancel()
        assert _wait_for(lambda: abandoned.labels(method="AnswerStream", reason="cancelled")
                         ._value.get() >= 1)
        reads = slow.reads
        time.sleep(0.5)
        assert slow.reads == reads
    finally:
        channel.close()
        slow.delay_s = 0.0
