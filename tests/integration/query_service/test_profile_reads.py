"""Profiles over gRPC (GetProfile, ListEntities), the clients and ``memstrata profile``.

Over the session's one service (conftest.py): the remote reads equal the
local memory's record for record; refusals name the field and the limit or the
entity; and deletes through the service leave nothing of the deleted text in
any profile, entity list, answer or search reachable afterwards (the bug of a
derived summary that outlives its sources, Graphiti #1083 and #1837).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import grpc
import pytest
from typer.testing import CliRunner

from memstrata.client import AsyncMemoryClient, MemoryClient, event
from memstrata.client.errors import InvalidRequest
from memstrata.contract import QueryError, SessionNotFound
from memstrata.model import Scope, Session
from memstrata.profile_records import MAX_ENTITY_CHARS, EntityProfile, ProfileNotFound
from memstrata.roles import MemoryReader
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from tests.integration.query_service.conftest import Service
from tests.integration.test_profiles import own_sessions
from tests.support.conversation import MAYA

ROSA = Scope(tenant_id="acme", user_id="rosa")


@pytest.fixture(scope="module")
def client(service: Service) -> Iterator[MemoryClient]:
    with MemoryClient(service.address, api_key=service.keys.acme) as c:
        yield c


def _dump(records: list[Any]) -> str:
    return json.dumps([r.model_dump(mode="json") for r in records], ensure_ascii=False)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-zà-ÿ]{4,}", text.lower())}


# -- the remote reads equal the local memory's -------------------------------------------
def test_profiles_over_grpc_equal_the_library(service: Service, client: MemoryClient,
                                              run: Any) -> None:
    local: MemoryReader = service.memory  # type: ignore[assignment]
    assert isinstance(client, MemoryReader)
    listed = client.list_entities(MAYA)
    assert listed == local.entities(MAYA) and len(listed) >= 3
    assert client.list_entities(MAYA, everything=True) == local.entities(MAYA, everything=True)
    assert [e.entity_id for e in listed[:2]] == ["user", "assistant"]
    for e in listed:
        assert client.get_profile(MAYA, e.entity_id) == local.profile(MAYA, e.entity_id)
    whole = client.entity_profiles(MAYA, everything=True)
    assert whole == local.entity_profiles(MAYA, everything=True)
    assert [p.entity_id for p in whole] == [e.entity_id for e in local.entities(
        MAYA, everything=True)]
    for who in ("my sister", "me", "Ines"):
        assert client.get_profile(MAYA, who) == local.profile(MAYA, who)
    sister = client.get_profile(MAYA, "my sister")
    assert [p.name for p in sister] == ["Ines"]
    cited = {s.session_id for bs in sister[0].sections.values() for b in bs for s in b.sources}
    assert "s1-trip-plans" in cited  # every bullet carries its turns
    assert all(b.sources for bs in sister[0].sections.values() for b in bs)

    async def remote() -> tuple[Any, Any]:
        async with AsyncMemoryClient(service.address, api_key=service.keys.acme) as c:
            return await c.list_entities(MAYA), await c.get_profile(MAYA, "my sister")

    assert run(remote()) == (listed, sister)


def test_the_profile_command_prints_the_same_through_the_service(
        service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    import memstrata.cli as cli

    cli._register_subcommands()
    monkeypatch.setenv("MEMSTRATA_DATA_DIR", str(service.memory.settings.data_dir))  # type: ignore[attr-defined]
    monkeypatch.setenv("MEMSTRATA_API_KEY", service.keys.acme)
    monkeypatch.delenv("MEMSTRATA_API_ADDRESS", raising=False)
    runner = CliRunner()
    for args in (["my sister"], [], ["me", "--json"], ["--json", "--all"]):
        base = ["profile", *args, "-t", "acme", "-u", "maya"]
        here = runner.invoke(cli.app, base)
        there = runner.invoke(cli.app, [*base, "--remote", service.address])
        assert here.exit_code == 0 and there.exit_code == 0, (here.output, there.output)
        assert there.output == here.output, args
    shown = runner.invoke(cli.app, ["profile", "my sister", "-t", "acme", "-u", "maya",
                                    "--remote", service.address])
    assert "# Ines (person)" in shown.output
    assert re.search(r"^- .*\[s1-trip-plans/T1\]$", shown.output, re.M), shown.output
    missing = runner.invoke(cli.app, ["profile", "Zorro", "-t", "acme", "-u", "maya",
                                      "--remote", service.address])
    assert missing.exit_code == 1 and "no profile named 'Zorro'" in missing.output


# -- refusals ----------------------------------------------------------------------------
def test_unknown_entities_and_oversized_fields_are_refused_by_name(
        service: Service, client: MemoryClient) -> None:
    with pytest.raises(ProfileNotFound, match="entity: no profile named 'Zorro'"):
        client.get_profile(MAYA, "Zorro")
    with pytest.raises(ProfileNotFound, match="entity: no profile named 'Zorro'"):
        service.memory.profile(MAYA, "Zorro")  # type: ignore[attr-defined]
    long = "x" * (MAX_ENTITY_CHARS + 1)
    why = f"entity: {MAX_ENTITY_CHARS + 1} characters, limit is {MAX_ENTITY_CHARS}"
    with pytest.raises(InvalidRequest, match=why):
        client.get_profile(MAYA, long)
    with pytest.raises(QueryError, match=why):
        service.memory.profile(MAYA, long)  # type: ignore[attr-defined]
    with pytest.raises(InvalidRequest, match="entity: required"):
        client.get_profile(MAYA, " ")
    with pytest.raises(InvalidRequest, match="user_id: "):
        client.list_entities(Scope.model_construct(tenant_id="acme", user_id="a b"))
    nobody = Scope(tenant_id="acme", user_id="nobody-here")
    assert client.list_entities(nobody) == service.memory.entities(nobody) == []  # type: ignore[attr-defined]
    with grpc.insecure_channel(service.address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        md = [("x-api-key", service.keys.acme)]
        with pytest.raises(grpc.RpcError) as exc:
            stub.ListEntities(pb.ListEntitiesRequest(user_id="nobody-here"), metadata=md)
        assert exc.value.code() == grpc.StatusCode.NOT_FOUND
        assert "nobody-here" in (exc.value.details() or "")
        with pytest.raises(grpc.RpcError) as exc:
            stub.GetProfile(pb.GetProfileRequest(user_id="maya", entity="Zorro"), metadata=md)
        assert exc.value.code() == grpc.StatusCode.NOT_FOUND
        assert "'Zorro'" in (exc.value.details() or "")
    # Another tenant's key sees its own user of that id, never acme's profiles.
    with MemoryClient(service.address, api_key=service.keys.globex) as globex:
        theirs = globex.list_entities(Scope(tenant_id="globex", user_id="maya"))
        assert "Ines" not in {e.name for e in theirs}
        with pytest.raises(ProfileNotFound):
            globex.get_profile(Scope(tenant_id="globex", user_id="maya"), "my sister")


# -- deletes leave nothing behind ----------------------------------------------------------
def _send(client: MemoryClient, sessions: list[Session]) -> None:
    for s in sessions:
        client.ingest([event(ROSA.user_id, s.session_id, m.source_id or f"{s.session_id}:{i}",
                             m.role, m.content, session_date=s.meta.session_date)
                       for t in s.turns for i, m in enumerate(t.messages)])
        client.close_session(ROSA, s.session_id)


def _everything(client: MemoryClient, scope: Scope) -> str:
    """Every profile and entity the service shows for the user, as one text."""
    listed = client.list_entities(scope, everything=True)
    found: list[EntityProfile] = [p for e in listed for p in client.get_profile(scope, e.entity_id)]
    return _dump(listed) + _dump(found)


def test_a_deleted_session_or_user_leaves_nothing_reachable(service: Service,
                                                            client: MemoryClient) -> None:
    sessions = own_sessions()
    _send(client, sessions)
    gone = next(s for s in sessions if s.session_id == "s-2024-02")  # Tomasz minds the dog
    kept = [s for s in sessions if s is not gone]
    text_of = lambda ss: " ".join(m.content for s in ss for t in s.turns for m in t.messages)  # noqa: E731
    only_there = _words(text_of([gone])) - _words(text_of(kept))
    before = _everything(client, ROSA)
    assert "tomasz" in only_there and "Tomasz" in before and gone.session_id in before
    tomasz = client.get_profile(ROSA, "Tomasz")
    assert tomasz and client.get_profile(ROSA, "my dog")[0].sections  # the edge was there

    question = "Who looks after my dog Biscuit?"
    first = client.answer(ROSA, question, datetime(2024, 6, 1))
    assert "Tomasz" in first.answer  # answered from the session about to go
    assert client.delete(ROSA, gone.session_id).complete
    after = _everything(client, ROSA)
    assert gone.session_id not in after
    assert not (only_there & _words(after)), only_there & _words(after)
    with pytest.raises(ProfileNotFound):
        client.get_profile(ROSA, "Tomasz")
    dog = client.get_profile(ROSA, "my dog")[0]
    slots = {b.slot for bs in dog.sections.values() for b in bs}
    assert "cared_for_by" not in slots and "is_a" in slots  # the rest stays
    # The profiles the delete rewrote equal the memory's own (no stale copy anywhere).
    assert client.list_entities(ROSA) == service.memory.entities(ROSA)  # type: ignore[attr-defined]
    # Nothing answers from the deleted session: no cached answer, hit or profile bullet.
    answer = client.answer(ROSA, question, datetime(2024, 6, 1))
    shown = answer.model_dump_json() + answer.answer
    assert "Tomasz" not in shown and gone.session_id not in shown
    assert all(h.session_id != gone.session_id for h in client.search(ROSA, "Tomasz neighbour"))

    assert client.delete(ROSA).complete
    assert client.list_entities(ROSA, everything=True) == []
    with pytest.raises(ProfileNotFound):
        client.get_profile(ROSA, "me")
    assert service.memory.docs.count_profiles(ROSA) == 0  # type: ignore[attr-defined]
    with pytest.raises(SessionNotFound, match="no memory for user 'rosa'"):
        client.answer(ROSA, "Where do I live?", datetime(2024, 6, 1))  # nothing left to cite
