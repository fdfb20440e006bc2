"""Reads over gRPC equal the library's own results, field by field (congruence)."""

from __future__ import annotations


import pytest

from memstrata.client import AsyncMemoryClient, MemoryClient
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.layers.lazy import SessionNotFound
from memstrata.roles import MemoryReader
from tests.integration.query_service.conftest import Service
from tests.support.conversation import ASKED_ON, MAYA

QUESTIONS = ["What is the name of my kitten?", "When did I start training for a half marathon?",
             "Where did I get promoted?", "Which restaurant did Ines love in Lisbon?"]


@pytest.fixture(scope="module")
def client(service: Service):
    with MemoryClient(service.address, api_key=service.keys.acme) as c:
        yield c


def test_client_is_a_memory_reader(client: MemoryClient):
    assert isinstance(client, MemoryReader)


def test_search_matches_the_library(service: Service, client: MemoryClient):
    for q in QUESTIONS:
        assert client.search(MAYA, q) == service.memory.search(MAYA, q)
    several = ["kitten name", "promotion"]
    assert client.search(MAYA, several, top_k=2) == service.memory.search(MAYA, several, top_k=2)
    assert len(client.search(MAYA, several, top_k=2)) == 2


def test_session_reads_match_the_library(service: Service, client: MemoryClient):
    m = service.memory
    metas = client.sessions(MAYA)
    assert metas == m.sessions(MAYA) and len(metas) == 4
    for meta in metas:
        sid = meta.session_id
        assert client.session(MAYA, sid) == m.session(MAYA, sid)
        assert client.l0(MAYA, sid) == m.l0(MAYA, sid)
        assert client.facts(MAYA, sid) == m.facts(MAYA, sid)
        assert client.notes(MAYA, sid) == m.notes(MAYA, sid)
        assert client.raw(MAYA, sid) == m.raw(MAYA, sid)
        assert client.raw(MAYA, sid, [2]) == m.raw(MAYA, sid, [2])
        assert client.raw(MAYA, sid, []) == m.raw(MAYA, sid, [])


def test_unknown_session_raises_session_not_found(client: MemoryClient):
    with pytest.raises(SessionNotFound):
        client.facts(MAYA, "no-such-session")
    with pytest.raises(SessionNotFound):
        client.raw(MAYA, "no-such-session", [])


def remote_controller(client: MemoryClient, settings: ControllerSettings,
                      service: Service) -> Controller:
    return Controller(client, settings)


def test_controller_over_the_client_answers_like_the_library(service: Service,
                                                            client: MemoryClient):
    settings = ControllerSettings(policy="rules")
    for q in QUESTIONS:
        local = Controller(service.memory, settings).answer(MAYA, q, ASKED_ON)
        remote = remote_controller(client, settings, service).answer(MAYA, q, ASKED_ON)
        assert remote.answer == local.answer
        assert remote.sources == local.sources
        assert [(s.tool, s.arguments, s.sessions, s.layer, s.tokens_out) for s in remote.steps] \
            == [(s.tool, s.arguments, s.sessions, s.layer, s.tokens_out) for s in local.steps]


def test_async_client_matches_the_sync_client(service: Service, client: MemoryClient, run):
    async def reads():
        async with AsyncMemoryClient(service.address, api_key=service.keys.acme) as c:
            return (await c.search(MAYA, QUESTIONS[0]), await c.sessions(MAYA),
                    await c.facts(MAYA, "s3-back-home"), await c.raw(MAYA, "s3-back-home", [2]))

    hits, metas, facts, raw = run(reads())
    assert hits == client.search(MAYA, QUESTIONS[0])
    assert metas == client.sessions(MAYA)
    assert facts == client.facts(MAYA, "s3-back-home")
    assert raw == client.raw(MAYA, "s3-back-home", [2])
