"""Ingest, CloseSession and deletes over gRPC (embedded: written straight into the memory)."""

from __future__ import annotations

from datetime import datetime

import pytest

from memstrata.client import MemoryClient, event
from memstrata.model import Scope
from tests.integration.query_service.conftest import Service

SAM = Scope(tenant_id="acme", user_id="sam")
DATE = datetime(2024, 8, 3, 10, 0)


@pytest.fixture(scope="module")
def client(service: Service):
    with MemoryClient(service.address, api_key=service.keys.acme) as c:
        yield c


def test_ingest_then_answer_finds_the_new_turn(client: MemoryClient):
    reply = client.ingest([
        event("sam", "w1-boat", "w1:1", "user", "I bought a sailboat and named it Albatross.",
              session_date=DATE, speaker="Sam", labels={"source": "chat"}),
        event("sam", "w1-boat", "w1:2", "assistant", "Albatross is a fine name for a boat.",
              session_date=DATE),
    ])
    assert (reply.accepted, reply.route, reply.duplicates) == (2, "direct", 0)
    again = client.ingest([event("sam", "w1-boat", "w1:2", "assistant",
                                 "Albatross is a fine name for a boat.", session_date=DATE)])
    assert (again.accepted, again.duplicates) == (0, 1)  # same message id: nothing changes
    assert [t.index for t in client.raw(SAM, "w1-boat")] == [1]
    meta = client.session(SAM, "w1-boat")
    assert meta.labels == {"source": "chat"} and meta.session_date == DATE
    answer = client.answer(SAM, "What did I name my sailboat?", datetime(2024, 9, 1))
    assert "Albatross" in answer.answer
    assert answer.sources[0].session_id == "w1-boat"
    assert answer.sources[0].source_ids == ["w1:1", "w1:2"]


def test_a_reply_joins_the_turn_of_its_question(client: MemoryClient):
    client.ingest([event("sam", "w2-garden", "w2:1", "user", "My tomatoes got blight.",
                         session_date=DATE)])
    client.ingest([event("sam", "w2-garden", "w2:2", "assistant", "Remove the leaves early.",
                         session_date=DATE)])
    turns = client.raw(SAM, "w2-garden")
    assert [[m.source_id for m in t.messages] for t in turns] == [["w2:1", "w2:2"]]
    assert client.close_session(SAM, "w2-garden") >= 0


def test_delete_session_then_search_finds_nothing(client: MemoryClient):
    client.ingest([event("sam", "w3-violin", "w3:1", "user",
                         "I started violin lessons with a teacher called Ottoline.",
                         session_date=DATE)])
    assert any(h.session_id == "w3-violin" for h in client.search(SAM, "violin Ottoline"))
    receipt = client.delete(SAM, "w3-violin")
    assert receipt.complete
    assert receipt.removed["docs"] >= 1 and receipt.removed["vectors"] >= 1
    assert receipt.removed["lexical"] >= 1
    assert all(h.session_id != "w3-violin" for h in client.search(SAM, "violin Ottoline"))
    assert "w3-violin" not in {m.session_id for m in client.sessions(SAM)}


def test_delete_user_forgets_everything(client: MemoryClient):
    client.ingest([event("sam", "w4-misc", "w4:1", "user", "Remember my locker code theme.",
                         session_date=DATE)])
    receipt = client.delete(SAM)
    assert receipt.complete and receipt.removed["docs"] >= 1
    assert client.sessions(SAM) == []
    assert client.search(SAM, "sailboat Albatross") == []


def test_stats_count_the_keys_tenant_only(service: Service, client: MemoryClient):
    st = client.stats()
    assert st == service.memory.stats("acme")
    assert st.tenant_id == "acme" and st.sessions >= 4 and st.units >= st.sessions
    with MemoryClient(service.address, api_key=service.keys.globex) as globex:
        g = globex.stats()
    assert (g.tenant_id, g.users, g.sessions, g.turns) == ("globex", 1, 1, 1)


def test_a_message_id_repeated_in_one_batch_is_counted_once(client: MemoryClient):
    same = event("sam", "w5-kite", "w5:1", "user", "I fly a red kite on Sundays.",
                 session_date=DATE)
    reply = client.ingest([same] * 3)
    assert (reply.accepted, reply.duplicates) == (1, 2)
    assert [[m.source_id for m in t.messages] for t in client.raw(SAM, "w5-kite")] == [["w5:1"]]
