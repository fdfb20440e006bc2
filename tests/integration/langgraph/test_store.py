"""The LangGraph store, the retriever and the chat history against a real ``memstrata serve``.

One ``serve`` (gRPC, keys file, embedded broker and stream worker) for the
module, with keys of two tenants. LangGraph ships no conformance suite for
stores (``langgraph-checkpoint-conformance`` covers checkpointers only), so
these tests hold :class:`MemstrataStore` to the ``BaseStore`` contract
directly, and run an agent graph (deterministic nodes, no LLM) that remembers
across threads and users through it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra (pip install -e '.[all,test]')")
pytest.importorskip("grpc", reason="the grpc extra")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import InvalidNamespaceError

from memstrata.client import MemoryClient, event
from memstrata.integrations.langchain import (
    MemstrataChatMessageHistory,
    MemstrataRetriever,
)
from memstrata.integrations.items import locate
from memstrata.integrations.langgraph import MemstrataStore
from memstrata.model import Scope
from tests.support.serve_proc import QUICK_JOIN, ServeProcess, add_key

pytestmark = pytest.mark.integration

PET = {"text": "Maya's cat Sardinha only eats salmon pate", "kind": "pet", "age": 4}
FOOD = {"text": "Maya is vegetarian and loves spicy lentil curry", "kind": "food", "age": 9}


@dataclass
class Service:
    serve: ServeProcess
    keys: dict[str, str]

    def store(self, tenant: str = "acme", **kw: Any) -> MemstrataStore:
        return MemstrataStore(self.serve.address, api_key=self.keys[tenant], **kw)

    def client(self, tenant: str = "acme") -> MemoryClient:
        return MemoryClient(self.serve.address, api_key=self.keys[tenant])


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    data: Path = tmp_path_factory.mktemp("langgraph") / "data"
    data.mkdir()
    keys = {"acme": add_key(data, "acme"), "globex": add_key(data, "globex")}
    # A short batching window (default 2 s): each put waits for its batch to be stored.
    serve = ServeProcess(data, {"MEMSTRATA_STREAM_FRESHNESS_S": "0.3", **QUICK_JOIN})
    try:
        serve.wait_serving()
        yield Service(serve, keys)
    finally:
        serve.stop()


@pytest.fixture
def store(svc: Service) -> Iterator[MemstrataStore]:
    with svc.store() as s:
        yield s


def raw_messages(svc: Service, user: str, store: MemstrataStore, ns: tuple[str, ...],
                 key: str) -> list[tuple[str, str]]:
    """(role, content) of every message the item's session holds, read with the plain client."""
    with svc.client() as c:
        turns = c.raw(Scope(tenant_id="acme", user_id=user), locate(ns, key).session_id)
    return [(m.role, m.content) for t in turns for m in t.messages]


# -- put / get / delete --------------------------------------------------------------
def test_put_then_get_returns_the_value_and_its_times(store: MemstrataStore) -> None:
    value = {"text": "Café at 7 — ☕", "nested": {"list": [1, 2.5, None, True]}, "n": 0}
    before = time.time()
    store.put(("ana", "memories"), "coffee", value)
    item = store.get(("ana", "memories"), "coffee")
    assert item is not None
    assert item.value == value and item.key == "coffee" and item.namespace == ("ana", "memories")
    assert item.created_at == item.updated_at
    assert before - 1 <= item.updated_at.timestamp() <= time.time() + 1
    assert store.get(("ana", "memories"), "tea") is None
    assert store.get(("ana", "other"), "coffee") is None  # another namespace, another item


def test_a_repeated_put_adds_nothing_and_an_update_replaces_the_value(
        svc: Service, store: MemstrataStore) -> None:
    ns = ("bea", "memories")
    store.put(ns, "pet", PET)
    first = store.get(ns, "pet")
    store.put(ns, "pet", dict(PET))  # the same value again (a retry)
    again = store.get(ns, "pet")
    assert first is not None and again == first  # same value, same times
    assert len(raw_messages(svc, "bea", store, ns, "pet")) == 2  # text + JSON, once

    changed = {"text": "Sardinha switched to tuna", "kind": "pet"}
    store.put(ns, "pet", changed)
    item = store.get(ns, "pet")
    assert item is not None and item.value == changed
    assert item.created_at == first.created_at and item.updated_at > first.updated_at
    # The old value left every store: the session holds the new turn only, and a
    # search for words only the old value had finds nothing.
    held = raw_messages(svc, "bea", store, ns, "pet")
    assert held == [("user", "text: Sardinha switched to tuna\nkind: pet"),
                    ("assistant", '{"text": "Sardinha switched to tuna", "kind": "pet"}')]
    hits = store.search(("bea",), query="salmon pate")
    assert [h.value for h in hits] == [changed]


def test_delete_removes_the_item_and_is_idempotent(svc: Service, store: MemstrataStore) -> None:
    ns = ("cleo", "memories")
    store.put(ns, "a", {"text": "a lighthouse keeper in Porto"})
    store.put(ns, "b", {"text": "a beekeeper in Braga"})
    store.delete(ns, "a")
    assert store.get(ns, "a") is None and store.get(ns, "b") is not None
    store.delete(ns, "a")  # again: no error
    store.put(ns, "b", None)  # LangGraph's other spelling of delete
    assert store.get(ns, "b") is None
    with svc.client() as c:
        assert c.sessions(Scope(tenant_id="acme", user_id="cleo")) == []  # nothing left
    assert store.search(("cleo",), query="beekeeper") == []


# -- search ------------------------------------------------------------------------------
def test_search_by_query_ranks_the_items_under_the_prefix(svc: Service,
                                                          store: MemstrataStore) -> None:
    store.put(("dora", "memories"), "pet", PET)
    store.put(("dora", "memories"), "food", FOOD)
    store.put(("dora", "work"), "job", {"text": "Dora drives a tram in Lisbon"})
    # An ordinary chat session of the same user is not an item: never returned.
    with svc.client() as c:
        c.ingest([event("dora", "chat-1", "m1", "user", "My cat Sardinha eats salmon daily.")])

    hits = store.search(("dora",), query="what does the cat eat")
    assert hits[0].key == "pet" and hits[0].value == PET
    assert hits[0].namespace == ("dora", "memories")
    # Every hit is an item (the chat session matched the query as well as the item).
    assert {(h.namespace, h.key) for h in hits} <= {
        (("dora", "memories"), "pet"), (("dora", "memories"), "food"), (("dora", "work"), "job")}
    scores = [h.score for h in hits]
    assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)

    assert [h.key for h in store.search(("dora", "work"), query="tram Lisbon")] == ["job"]
    assert store.search(("dora", "work"), query="cat salmon") == []  # only under the prefix
    assert [h.key for h in store.search(("dora",), query="lentil curry", limit=1)] == ["food"]
    wide = store.search(("dora",), query="Maya cat lentil tram", limit=10)
    assert len(wide) == 3
    paged = store.search(("dora",), query="Maya cat lentil tram", limit=2, offset=1)
    assert [h.key for h in paged] == [h.key for h in wide[1:3]]


def test_search_filters_and_lists_newest_first_without_a_query(store: MemstrataStore) -> None:
    ns = ("eva", "memories")
    store.put(ns, "pet", PET)
    store.put(ns, "food", FOOD)
    assert [h.key for h in store.search(("eva",))] == ["food", "pet"]  # newest first
    assert all(h.score is None for h in store.search(("eva",)))
    assert [h.key for h in store.search(("eva",), filter={"kind": "pet"})] == ["pet"]
    assert [h.key for h in store.search(("eva",), filter={"age": {"$gt": 5}})] == ["food"]
    assert [h.key for h in store.search(("eva",), query="Maya cat lentil",
                                        filter={"kind": {"$ne": "food"}})] == ["pet"]
    assert store.search(("eva",), filter={"kind": "car"}) == []
    assert [h.key for h in store.search(("eva",), limit=1, offset=1)] == ["pet"]


def test_list_namespaces_of_a_user(store: MemstrataStore) -> None:
    store.put(("fay", "memories", "2024"), "a", {"text": "x1"})
    store.put(("fay", "memories", "2025"), "b", {"text": "x2"})
    store.put(("fay", "prefs"), "c", {"text": "x3"})
    assert store.list_namespaces(prefix=("fay",)) == [
        ("fay", "memories", "2024"), ("fay", "memories", "2025"), ("fay", "prefs")]
    assert store.list_namespaces(prefix=("fay", "memories")) == [
        ("fay", "memories", "2024"), ("fay", "memories", "2025")]
    assert store.list_namespaces(prefix=("fay",), suffix=("2025",)) == [
        ("fay", "memories", "2025")]
    assert store.list_namespaces(prefix=("fay", "*", "2024")) == [("fay", "memories", "2024")]
    assert store.list_namespaces(prefix=("fay",), max_depth=2) == [
        ("fay", "memories"), ("fay", "prefs")]
    assert store.list_namespaces(prefix=("fay",), limit=1, offset=1) == [
        ("fay", "memories", "2025")]
    assert store.list_namespaces(prefix=("nobody-here",)) == []


# -- isolation ----------------------------------------------------------------------------
def test_users_are_isolated(store: MemstrataStore) -> None:
    store.put(("gil", "memories"), "pet", PET)
    assert store.get(("hal", "memories"), "pet") is None
    assert store.search(("hal",), query="cat salmon") == []
    assert store.list_namespaces(prefix=("hal",)) == []
    store.put(("hal", "memories"), "pet", {"text": "Hal has a parrot"})
    assert store.get(("gil", "memories"), "pet").value == PET  # type: ignore[union-attr]
    assert [h.value for h in store.search(("hal",), query="cat salmon")] == [
        {"text": "Hal has a parrot"}]


def test_tenants_are_isolated(svc: Service, store: MemstrataStore) -> None:
    ns = ("ivy", "memories")
    store.put(ns, "pet", PET)
    with svc.store("globex") as other:
        # Same user, namespace and key, another key's tenant: nothing of acme's is seen.
        assert other.get(ns, "pet") is None
        assert other.search(("ivy",), query="cat salmon") == []
        assert other.search(("ivy",)) == []
        assert other.list_namespaces(prefix=("ivy",)) == []
        other.put(ns, "pet", {"text": "a globex goldfish"})
        other.delete(ns, "pet")
    item = store.get(ns, "pet")
    assert item is not None and item.value == PET  # untouched by globex's put and delete


# -- bad input ----------------------------------------------------------------------------
def test_bad_input_is_refused_naming_the_field_and_the_limit(store: MemstrataStore) -> None:
    with pytest.raises(InvalidNamespaceError, match=r"namespace\[0\]: user 'has space'"):
        store.put(("has space", "x"), "k", {"a": 1})
    with pytest.raises(InvalidNamespaceError, match=r"namespace: 16 labels, limit is 15"):
        store.put(("jo",) + tuple(f"l{i}" for i in range(15)), "k", {"a": 1})
    with pytest.raises(InvalidNamespaceError, match=r"namespace\[1\]: 129 characters, limit"):
        store.put(("jo", "x" * 129), "k", {"a": 1})
    with pytest.raises(ValueError, match=r"key: 129 characters, limit is 128"):
        store.put(("jo",), "k" * 129, {"a": 1})
    with pytest.raises(ValueError, match=r"value of 'k': not JSON-serializable"):
        store.put(("jo",), "k", {"when": object()})
    with pytest.raises(ValueError, match=r"value of 'k': \d+ characters of JSON, limit is 20000"):
        store.put(("jo",), "k", {"text": "y" * 20_001})
    with pytest.raises(InvalidNamespaceError, match="must start with the memstrata user"):
        store.search((), query="anything")
    with pytest.raises(InvalidNamespaceError, match="give prefix=\\(user, ...\\)"):
        store.list_namespaces(suffix=("x",))
    store.put(("jo",), "k", {"a": 1})
    with pytest.raises(ValueError, match="unknown operator '\\$in'"):
        store.search(("jo",), filter={"a": {"$in": [1]}})
    with pytest.raises(ValueError, match="search_top_k: 0"):
        MemstrataStore("127.0.0.1:1", api_key="x", search_top_k=0)


# -- async --------------------------------------------------------------------------------
def test_the_async_methods_match_the_sync_ones(svc: Service, store: MemstrataStore) -> None:
    ns = ("kai", "memories")

    async def go() -> tuple[Any, ...]:
        async_store = svc.store()
        try:
            await async_store.aput(ns, "pet", PET)
            await async_store.aput(ns, "food", FOOD)
            got = await async_store.aget(ns, "pet")
            found = await async_store.asearch(("kai",), query="lentil curry")
            spaces = await async_store.alist_namespaces(prefix=("kai",))
            await async_store.adelete(ns, "food")
            gone = await async_store.aget(ns, "food")
            return got, found, spaces, gone
        finally:
            await async_store.aclose()

    got, found, spaces, gone = asyncio.run(asyncio.wait_for(go(), 60))
    assert got == store.get(ns, "pet") and got.value == PET
    assert found[0].key == "food" and spaces == [ns] and gone is None
    assert [h.key for h in store.search(("kai",))] == ["pet"]


# -- an agent graph that remembers across threads -----------------------------------------
class Turn(TypedDict, total=False):
    said: str
    reply: str


@dataclass
class Who:
    user: str


def respond(state: Turn, runtime: Runtime[Who]) -> Turn:
    """A deterministic agent: "remember K: text" stores a memory, anything else recalls."""
    assert runtime.store is not None
    ns = (runtime.context.user, "memories")
    said = state["said"]
    if said.startswith("remember "):
        key, text = said.removeprefix("remember ").split(": ", 1)
        runtime.store.put(ns, key, {"text": text})
        return {"reply": f"noted {key}"}
    hits = runtime.store.search(ns, query=said, limit=1)
    return {"reply": hits[0].value["text"] if hits else "I don't know"}


async def arespond(state: Turn, runtime: Runtime[Who]) -> Turn:
    assert runtime.store is not None
    hits = await runtime.store.asearch((runtime.context.user, "memories"), query=state["said"],
                                       limit=1)
    return {"reply": hits[0].value["text"] if hits else "I don't know"}


def agent(node: Any, store: MemstrataStore) -> Any:
    graph = StateGraph(Turn, context_schema=Who)
    graph.add_node("respond", node)
    graph.add_edge(START, "respond")
    graph.add_edge("respond", END)
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def test_an_agent_graph_remembers_across_threads_and_users(svc: Service,
                                                           store: MemstrataStore) -> None:
    app = agent(respond, store)

    def say(thread: str, user: str, text: str) -> str:
        out = app.invoke({"said": text}, {"configurable": {"thread_id": thread}},
                         context=Who(user))
        return str(out["reply"])

    assert say("t1", "lena", "remember pet: Lena's dog Biscuit is afraid of thunder") == "noted pet"
    assert say("t1", "lena", "remember city: Lena moved to Utrecht in 2023") == "noted city"
    # A new thread has no state of t1 (the checkpointer's), yet the store remembers.
    assert say("t2", "lena", "what is the dog afraid of?") == (
        "Lena's dog Biscuit is afraid of thunder")
    assert say("t3", "lena", "where does Lena live now?") == "Lena moved to Utrecht in 2023"
    assert say("t4", "milo", "what is the dog afraid of?") == "I don't know"  # another user

    async def recall() -> Any:
        async_store = svc.store()
        try:
            return await agent(arespond, async_store).ainvoke(
                {"said": "which city?"}, {"configurable": {"thread_id": "t5"}},
                context=Who("lena"))
        finally:
            await async_store.aclose()

    assert asyncio.run(asyncio.wait_for(recall(), 60))["reply"] == (
        "Lena moved to Utrecht in 2023")
    # The items are memstrata sessions: the service's own controller answers from them.
    with svc.client() as c:
        answer = c.answer(Scope(tenant_id="acme", user_id="lena"),
                          "What is the name of Lena's dog?")
    pet = store.search(("lena", "memories"), query="dog")[0]
    assert pet.key == "pet" and answer.answer == "Biscuit" and not answer.abstained
    assert answer.sources[0].session_id == locate(pet.namespace, pet.key).session_id


# -- LangChain ----------------------------------------------------------------------------
def test_the_retriever_returns_documents_from_search(svc: Service,
                                                     store: MemstrataStore) -> None:
    store.put(("nia", "memories"), "pet", PET)
    store.put(("nia", "memories"), "food", FOOD)
    retriever = MemstrataRetriever(user_id="nia", address=svc.serve.address,
                                   api_key=svc.keys["acme"], k=2)
    docs = retriever.invoke("Maya cat lentil curry")
    assert len(docs) == 2 and "lentil" in docs[0].page_content
    meta = docs[0].metadata
    assert meta["session_id"].startswith("lg:") and meta["turns"] == [1]
    assert meta["session_date"] is not None and meta["score"] >= docs[1].metadata["score"]

    verbatim = MemstrataRetriever(user_id="nia", connection=store.connection, k=1,
                                  content="turns")
    assert verbatim.invoke("Maya cat lentil curry")[0].page_content.startswith(
        "User: text: Maya is vegetarian")
    assert asyncio.run(retriever.ainvoke("Maya cat lentil curry")) == docs
    other = MemstrataRetriever(user_id="nia", address=svc.serve.address,
                               api_key=svc.keys["globex"])
    assert other.invoke("Maya cat lentil curry") == []
    with pytest.raises(ValueError, match="user_id: 'a b' is not a memstrata id"):
        MemstrataRetriever(user_id="a b", address=svc.serve.address)


def test_the_chat_history_keeps_a_conversation_as_a_session(svc: Service) -> None:
    history = MemstrataChatMessageHistory("omar", "chat-7", address=svc.serve.address,
                                          api_key=svc.keys["acme"])
    assert history.messages == []
    said = [HumanMessage("I planted three olive trees today", id="h1"),
            AIMessage("Lovely! Which variety?", id="a1")]
    history.add_messages(said)
    history.add_messages(said)  # a retry with the same ids adds nothing
    history.add_messages([HumanMessage("Galega, from my grandfather's farm")])
    got = history.messages
    assert [(type(m).__name__, m.content) for m in got] == [
        ("HumanMessage", "I planted three olive trees today"),
        ("AIMessage", "Lovely! Which variety?"),
        ("HumanMessage", "Galega, from my grandfather's farm")]
    assert got[0].id == "h1"
    with pytest.raises(ValueError, match=r"messages\[1\]: a system message"):
        history.add_messages([HumanMessage("x"), SystemMessage("be brief")])
    assert len(history.messages) == 3  # nothing of the refused batch was sent
    other = MemstrataChatMessageHistory("omar", "chat-7", address=svc.serve.address,
                                        api_key=svc.keys["globex"])
    assert other.messages == []
    assert asyncio.run(history.aget_messages()) == got
    history.clear()
    assert history.messages == []
