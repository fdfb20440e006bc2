"""``serve_memory``: the light read-only server the Ray rollout actors read through.

No Ray here: the reader an actor opens (``ServiceReaderSpec.open()``) is used
in this process. It reads what the memory holds, exactly; a key reads its own
tenant only; writes, answers and deletes are not served. That it builds no
query service is the import contract's to keep: ``workers`` imports nothing of
``query_service`` (tests/unit/test_import_contracts.py).
"""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from memstrata.client.errors import RemoteSessionNotFound, Unauthenticated
from memstrata.client.sync import MemoryClient
from memstrata.model import Scope
from memstrata.profile_records import ProfileNotFound
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from workers.readers import serve_memory

pytestmark = pytest.mark.integration


def _dump(items: Any) -> Any:
    if isinstance(items, list):
        return [_dump(i) for i in items]
    return items.model_dump(mode="json")


def _no_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_none(v) for v in value]
    return value


def test_the_actors_reader_reads_what_the_memory_holds(memory, dataset):
    scope = dataset.questions[0].scope
    sid = memory.sessions(scope)[0].session_id
    question = dataset.questions[0].question
    with serve_memory(memory, scope.tenant_id) as spec:
        reader = spec.open()
        assert _dump(reader.sessions(scope)) == _dump(memory.sessions(scope))
        assert _dump(reader.session(scope, sid)) == _dump(memory.session(scope, sid))
        assert _dump(reader.l0(scope, sid)) == _dump(memory.l0(scope, sid))
        assert _dump(reader.facts(scope, sid)) == _dump(memory.facts(scope, sid))
        assert _dump(reader.notes(scope, sid)) == _dump(memory.notes(scope, sid))
        assert _dump(reader.raw(scope, sid, [1, 2])) == _dump(memory.raw(scope, sid, [1, 2]))
        hits = reader.search(scope, [question, "a second query"], top_k=3)
        assert hits and _dump(hits) == _dump(memory.search(scope, [question,
                                                                   "a second query"], 3))
        assert reader.stats(scope.tenant_id) == memory.stats(scope.tenant_id)
        listed = reader.entities(scope, everything=True)
        assert listed and listed == memory.entities(scope, everything=True)
        for e in listed:
            assert reader.profile(scope, e.entity_id) == memory.profile(scope, e.entity_id)
        # What the actor's controller reads (read_profile): the views, dates left out alike.
        assert _no_none([p.as_view() for p in reader.entity_profiles(scope, everything=True)]) == \
            _no_none(memory.profiles.views(scope, everything=True))
        # As through the query service: an unknown user has nothing, an unknown session
        # is SessionNotFound.
        nobody = Scope(tenant_id=scope.tenant_id, user_id="nobody")
        assert reader.sessions(nobody) == [] and reader.search(nobody, "anything") == []
        with pytest.raises(RemoteSessionNotFound):
            reader.session(scope, "no-such-session")
        with pytest.raises(ProfileNotFound, match="'Zorro'"):
            reader.profile(scope, "Zorro")


def test_a_key_reads_its_own_tenant_only_and_nothing_is_written(memory, dataset):
    scope = dataset.questions[0].scope
    with serve_memory(memory, [scope.tenant_id, "other"]) as spec:
        keys = dict(spec.tenant_keys)
        assert len(set(keys.values())) == 2
        with MemoryClient(spec.address, api_key=keys["other"]) as other:
            with pytest.raises(Exception) as denied:
                other.sessions(scope)  # states the first tenant: refused
            assert getattr(denied.value, "code", None) == grpc.StatusCode.PERMISSION_DENIED
            # Its own tenant holds nothing.
            assert other.sessions(Scope(tenant_id="other", user_id=scope.user_id)) == []
        with MemoryClient(spec.address, api_key="msr_not-a-key") as stranger:
            with pytest.raises(Unauthenticated):
                stranger.sessions(scope)
        before = memory.stats(scope.tenant_id)
        with grpc.insecure_channel(spec.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            md = [("x-api-key", keys[scope.tenant_id])]
            for call, request in (
                    (stub.IngestBatch, pb.IngestBatchRequest(events=[pb.TurnEvent(
                        user_id=scope.user_id, session_id="new", message_id="m1",
                        role="user", content="I moved to Oslo.")])),
                    (stub.DeleteUser, pb.UserRequest(user_id=scope.user_id)),
                    (stub.Answer, pb.AnswerRequest(user_id=scope.user_id, question="Who?"))):
                with pytest.raises(grpc.RpcError) as refused:
                    call(request, metadata=md, timeout=10)
                assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert memory.stats(scope.tenant_id) == before

