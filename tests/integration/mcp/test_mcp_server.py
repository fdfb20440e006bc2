"""``memstrata mcp`` over real HTTP (and stdio once) with the MCP SDK's own client.

Everything is real: ``memstrata serve`` with its gRPC service, keys file, embedded
broker and stream worker; ``memstrata mcp`` processes started as a user starts
them; the SDK's ``Client`` over streamable HTTP on 127.0.0.1. Every tool is
called; no key, a bad key and a revoked key are refused; an acme key never
reaches globex's data (globex also has a user ``maya``) through any tool or
argument; deletes are refused unless allowed; a bound server ignores no
``user`` argument; the service's rate limit applies to MCP calls.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("mcp", reason="the mcp extra (pip install -e '.[all,test]')")
pytest.importorskip("grpc", reason="the grpc extra")

from tests.integration.mcp.stack import Stack, Statuses, session, start, stop

pytestmark = pytest.mark.integration

T = TypeVar("T")
ACME_MAYA = {"2024-03-02-trip", "2024-04-10-running", "2024-05-20-after-trip"}
GLOBEX_SESSION = "2024-02-01-notes"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    s = start(tmp_path_factory.mktemp("mcp"))
    yield s
    stop(s)


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 120))  # type: ignore[arg-type]


def calls(url: str, key: str | None, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    """Call tools in order on one client; each result as the SDK returns it."""
    async def go() -> list[Any]:
        async with session(url, key) as client:
            return [await client.call_tool(name, args) for name, args in steps]

    return run(go())


def call(url: str, key: str | None, tool: str, **args: Any) -> Any:
    return calls(url, key, (tool, args))[0]


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[no-any-return]


def refused(result: Any, why: str) -> str:
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error and why in text, text
    return text


def _refused_http(url: str, key: str | None) -> list[int]:
    """Connecting fails; the HTTP statuses seen on the way."""
    statuses = Statuses()

    async def go() -> None:
        async with session(url, key, statuses=statuses) as client:
            await client.list_tools()

    with pytest.raises(BaseException):  # the SDK raises an MCPError inside task groups
        run(go())
    return statuses.seen


# -- the tools -------------------------------------------------------------------------
def test_the_tools_are_listed_with_their_annotations(stack: Stack) -> None:
    async def go() -> Any:
        async with session(stack.servers["main"].url, stack.keys["acme"]) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in run(go())}
    assert set(tools) == {"search_memory", "ask", "read_session", "list_sessions",
                          "get_profile", "list_entities", "add_turns", "delete_session",
                          "delete_user"}
    for name in ("delete_session", "delete_user"):
        assert tools[name].annotations.destructive_hint is True
        assert tools[name].annotations.read_only_hint is False
    for name in ("search_memory", "ask", "read_session", "list_sessions", "get_profile",
                 "list_entities"):
        assert tools[name].annotations.read_only_hint is True
    assert tools["add_turns"].annotations.destructive_hint is False
    # The tenant is never an argument of any tool.
    for t in tools.values():
        assert not any("tenant" in name for name in t.input_schema["properties"]), t.name


def test_search_ranks_the_users_sessions_with_their_l0_summaries(stack: Stack) -> None:
    out = ok(call(stack.servers["main"].url, stack.keys["acme"], "search_memory",
                  query="adopted a cat", user="maya"))
    assert out["user"] == "maya"
    top = out["hits"][0]
    assert top["session_id"] == "2024-05-20-after-trip"
    assert any("Sardinha" in u["summary"] for u in top["units"])
    assert "read_session" in out["next"]


def test_ask_returns_the_answer_its_sources_and_depth(stack: Stack) -> None:
    out = ok(call(stack.servers["main"].url, stack.keys["acme"], "ask",
                  question="What is the name of the cat I adopted?", user="maya"))
    assert "Sardinha" in out["answer"] and not out["abstained"]
    assert out["sources"] and out["sources"][0]["session_id"] == "2024-05-20-after-trip"
    assert "Sardinha" in out["sources"][0]["text"]
    depth = out["depth"]
    assert depth["deepest_layer"] in ("L0", "L1", "L2", "L3")
    assert depth["sessions"]["2024-05-20-after-trip"] in ("L0", "L1", "L2", "L3")
    assert set(depth["sessions"]) <= ACME_MAYA and out["steps"] >= 1


def test_read_session_reads_only_the_layers_asked_for(stack: Stack) -> None:
    url, key = stack.servers["main"].url, stack.keys["acme"]
    coarse, fine = (ok(r) for r in calls(
        url, key,
        ("read_session", {"session_id": "2024-05-20-after-trip", "user": "maya"}),
        ("read_session", {"session_id": "2024-05-20-after-trip", "user": "maya",
                          "layers": [1, 2, 3], "turns": [2]})))
    assert coarse["session"]["session_id"] == "2024-05-20-after-trip"
    assert [u["turn_index"] for u in coarse["l0"]] == [1, 2]
    assert coarse["l1"] is None and coarse["l2"] is None and coarse["l3"] is None
    assert fine["l0"] is None
    assert any("Sardinha" in f["text"] for f in fine["l1"])
    assert {n["turn_index"] for n in fine["l2"]} == {1, 2}
    assert [t["index"] for t in fine["l3"]] == [2]
    said = [m["content"] for m in fine["l3"][0]["messages"]]
    assert said[0] == ("She loved the garlic prawns. I adopted a cat named Sardinha when we "
                       "got back, after the trip.")


def test_the_handshake_era_protocol_gets_the_same_scope(stack: Stack) -> None:
    """The SDK routes 2025-era requests (initialize handshake) apart from newer ones."""
    statuses = Statuses()

    async def go() -> Any:
        async with session(stack.servers["main"].url, stack.keys["acme"], mode="legacy",
                           statuses=statuses) as client:
            return await client.call_tool("list_sessions", {"user": "maya"})

    assert {s["session_id"] for s in ok(run(go()))["sessions"]} == ACME_MAYA
    assert statuses.seen and set(statuses.seen) <= {200, 202}


def test_profiles_are_read_through_the_tools_within_the_keys_tenant(stack: Stack) -> None:
    url = stack.servers["main"].url
    sister, listed, nobody = calls(url, stack.keys["acme"],
                                   ("get_profile", {"entity": "my sister", "user": "maya"}),
                                   ("list_entities", {"user": "maya"}),
                                   ("get_profile", {"entity": "Zorro", "user": "maya"}))
    profile = ok(sister)["profiles"][0]
    assert profile["name"] == "Inês"
    bullets = [b for sec in profile["sections"].values() for b in sec]
    assert bullets and all(b["sources"] for b in bullets), profile  # each names its turns
    assert "Inês" in {e["name"] for e in ok(listed)["entities"]}
    refused(nobody, "no profile named 'Zorro'")
    # globex has a maya too: its key reads globex's maya, never acme's sister.
    theirs = call(url, stack.keys["globex"], "get_profile", entity="Inês", user="maya")
    assert theirs.is_error or all(p["name"] != "Inês" or p["sections"] != profile["sections"]
                                  for p in ok(theirs)["profiles"])


def test_list_sessions_lists_the_users_sessions(stack: Stack) -> None:
    out = ok(call(stack.servers["main"].url, stack.keys["acme"], "list_sessions", user="maya"))
    assert {s["session_id"] for s in out["sessions"]} == ACME_MAYA
    assert ok(call(stack.servers["main"].url, stack.keys["acme"], "list_sessions",
                   user="nobody"))["sessions"] == []


def test_add_turns_remembers_and_a_retry_adds_nothing(stack: Stack) -> None:
    url, key = stack.servers["main"].url, stack.keys["acme"]
    turns = [{"role": "user", "content": "I grow cherry tomatoes on my balcony in Porto.",
              "message_id": "g1"},
             {"role": "assistant", "content": "Balcony tomatoes love the sun.",
              "message_id": "g2"}]
    args = {"session_id": "2024-07-01-garden", "turns": turns, "user": "tess",
            "session_date": "2024-07-01T10:00:00"}
    first, again = (ok(r) for r in calls(url, key, ("add_turns", args), ("add_turns", args)))
    assert (first["accepted"], first["duplicates"]) == (2, 0)
    assert (again["accepted"], again["duplicates"]) == (0, 2)
    assert first["durability"] in ("stored", "broker")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        hits = ok(call(url, key, "search_memory", query="tomatoes balcony", user="tess"))
        if [h["session_id"] for h in hits["hits"]] == ["2024-07-01-garden"]:
            break
        time.sleep(0.3)
    else:
        raise AssertionError(f"the added turns never became searchable: {hits}")


def test_deletes_are_refused_unless_the_server_allows_them(stack: Stack) -> None:
    url, key = stack.servers["main"].url, stack.keys["acme"]
    a, b, still = calls(url, key,
                        ("delete_session", {"session_id": "2024-01-05-job", "user": "leo"}),
                        ("delete_user", {"user": "leo"}),
                        ("list_sessions", {"user": "leo"}))
    refused(a, "MEMSTRATA_MCP_ALLOW_DELETE")
    refused(b, "MEMSTRATA_MCP_ALLOW_DELETE")
    assert [s["session_id"] for s in ok(still)["sessions"]] == ["2024-01-05-job"]


def test_deletes_run_where_allowed(stack: Stack) -> None:
    url, key = stack.servers["deletes"].url, stack.keys["acme"]

    def turn(sid: str, mid: str) -> tuple[str, dict[str, Any]]:
        return ("add_turns", {"session_id": sid, "user": "temp", "turns": [
            {"role": "user", "content": f"A note about {sid}.", "message_id": mid}]})

    steps = [turn("s-1", "m1"), turn("s-2", "m2"),
             ("delete_session", {"session_id": "s-1", "user": "temp"}),
             ("list_sessions", {"user": "temp"}),
             ("delete_session", {"session_id": "s-1", "user": "temp"}),
             ("delete_user", {"user": "temp"}),
             ("list_sessions", {"user": "temp"})]
    *_, one, listed, again, everything, gone = calls(url, key, *steps)
    one = ok(one)
    assert one["complete"] and one["session_id"] == "s-1" and one["removed"].get("docs", 0) >= 1
    assert [s["session_id"] for s in ok(listed)["sessions"]] == ["s-2"]
    refused(again, "no such session")
    assert ok(everything)["complete"] and ok(gone)["sessions"] == []


# -- authentication --------------------------------------------------------------------
def test_no_key_and_a_bad_key_get_401(stack: Stack) -> None:
    url = stack.servers["main"].url
    assert _refused_http(url, None)[:1] == [401]
    assert _refused_http(url, "msk_000000000000_not-a-real-key")[:1] == [401]
    assert _refused_http(url, "x" * 10_000)[:1] == [401]
    globex_key_elsewhere = stack.keys["globex"][:-4] + "AAAA"  # a real id, a wrong secret
    assert _refused_http(url, globex_key_elsewhere)[:1] == [401]

    import httpx2

    r = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer ")


def test_a_revoked_key_is_refused_at_once(stack: Stack) -> None:
    from query_service.keys import revoke_key

    url, key = stack.servers["main"].url, stack.keys["acme-revoked"]
    statuses = Statuses()

    async def go() -> tuple[Any, Any]:
        async with session(url, key, statuses=statuses) as client:
            before = await client.call_tool("list_sessions", {"user": "maya"})
            revoke_key(stack.keys_file(), key.split("_")[1])
            # The server still trusts its cached check, but the service checks every call.
            after = await client.call_tool("list_sessions", {"user": "maya"})
            return before, after

    before, after = run(go())
    assert {s["session_id"] for s in ok(before)["sessions"]} == ACME_MAYA
    refused(after, "refused this API key")
    assert _refused_http(url, key)[:1] == [401]  # and the next request is turned away


# -- isolation -------------------------------------------------------------------------
HOSTILE_USERS = ["globex/maya", "../globex/maya", "globex:maya", "maya/../../globex/maya"]


def test_an_acme_key_never_reaches_globex_data(stack: Stack) -> None:
    url, acme = stack.servers["main"].url, stack.keys["acme"]
    steps: list[tuple[str, dict[str, Any]]] = [
        ("search_memory", {"query": "bees hives honey Vermont farmers market", "user": "maya"}),
        ("read_session", {"session_id": GLOBEX_SESSION, "user": "maya", "layers": [0, 3]}),
        ("list_sessions", {"user": "maya", "tenant": "globex", "tenant_id": "globex"}),
        ("ask", {"question": "How many hives do I keep?", "user": "maya"}),
    ]
    for user in HOSTILE_USERS:
        steps += [("list_sessions", {"user": user}),
                  ("search_memory", {"query": "bees hives honey", "user": user})]
    for sid in (f"globex/maya/{GLOBEX_SESSION}", f"../{GLOBEX_SESSION}",
                f"{GLOBEX_SESSION}/../{GLOBEX_SESSION}"):
        steps.append(("read_session", {"session_id": sid, "user": "maya", "layers": [3]}))
    search, read, listed, asked, *rest = calls(url, acme, *steps)

    hits = ok(search)["hits"]
    assert GLOBEX_SESSION not in [h["session_id"] for h in hits]
    assert not any("bees" in u["summary"] or "hives" in u["summary"]
                   for h in hits for u in h["units"])
    refused(read, "no such session")
    assert {s["session_id"] for s in ok(listed)["sessions"]} == ACME_MAYA  # the key's tenant
    answer = ok(asked)
    assert "welve" not in answer["answer"] and "honey" not in answer["answer"]
    assert all(s["session_id"] in ACME_MAYA for s in answer["sources"])
    for result in rest:
        text = str(result.structured_content) + " ".join(
            getattr(c, "text", "") for c in result.content)
        assert "bees" not in text and "hives" not in text and GLOBEX_SESSION + "'" not in text
        if result.is_error:
            refused(result, "no such session")
        else:
            assert not result.structured_content.get("hits") \
                and not result.structured_content.get("sessions")

    # Nor delete it: not found for acme, and still there for globex.
    refused(call(stack.servers["deletes"].url, acme, "delete_session",
                 session_id=GLOBEX_SESSION, user="maya"), "no such session")
    theirs = ok(call(url, stack.keys["globex"], "read_session", session_id=GLOBEX_SESSION,
                     user="maya", layers=[3]))
    assert "bees" in theirs["l3"][0]["messages"][0]["content"]


def test_a_bound_server_acts_for_its_user_only(stack: Stack) -> None:
    bound = stack.servers["bound"]
    mine, named, other, hostile = calls(
        bound.url, stack.keys["acme"], ("list_sessions", {}),
        ("list_sessions", {"user": "maya"}), ("list_sessions", {"user": "leo"}),
        ("search_memory", {"query": "new job robotics", "user": "leo"}))
    assert {s["session_id"] for s in ok(mine)["sessions"]} == ACME_MAYA
    assert ok(named) == ok(mine)
    refused(other, "acts for one user only")
    refused(hostile, "acts for one user only")
    # It found the service through the data dir's serve.json (no MEMSTRATA_API_ADDRESS).
    assert f"via {stack.serve.address}" in bound.log()


def test_a_read_only_key_cannot_write_or_delete(stack: Stack) -> None:
    url, key = stack.servers["deletes"].url, stack.keys["acme-read"]
    listed, added, one, everything = calls(
        url, key, ("list_sessions", {"user": "leo"}),
        ("add_turns", {"session_id": "r-1", "user": "leo", "turns": [
            {"role": "user", "content": "Not to be kept.", "message_id": "r-m1"}]}),
        ("delete_session", {"session_id": "2024-01-05-job", "user": "leo"}),
        ("delete_user", {"user": "leo"}))
    assert [s["session_id"] for s in ok(listed)["sessions"]] == ["2024-01-05-job"]
    refused(added, "add_turns: needs the 'write' scope; this API key has read")
    refused(one, "delete_session: needs the 'delete' scope; this API key has read")
    refused(everything, "delete_user: needs the 'delete' scope")
    still = ok(call(url, stack.keys["acme"], "list_sessions", user="leo"))
    assert [s["session_id"] for s in still["sessions"]] == ["2024-01-05-job"]


def test_a_key_bound_to_a_user_acts_for_that_user_only(stack: Stack) -> None:
    url, key = stack.servers["main"].url, stack.keys["acme-maya"]
    mine, other, hostile = calls(url, key, ("list_sessions", {}),
                                 ("list_sessions", {"user": "leo"}),
                                 ("search_memory", {"query": "new job", "user": "globex/maya"}))
    assert {s["session_id"] for s in ok(mine)["sessions"]} == ACME_MAYA
    refused(other, "this API key is bound to user 'maya'")
    refused(hostile, "this API key is bound to user 'maya'")


# -- bearer JWTs (the ``jwt`` server: a platform key behind, deletes allowed) ------------
def test_a_jwt_acts_for_its_tenant_and_user(stack: Stack) -> None:
    url, token = stack.servers["jwt"].url, stack.idp.token()  # acme, maya, read write
    listed, search, read, asked = calls(
        url, token, ("list_sessions", {}), ("search_memory", {"query": "adopted a cat"}),
        ("read_session", {"session_id": "2024-05-20-after-trip", "layers": [1]}),
        ("ask", {"question": "What is the name of the cat I adopted?"}))
    assert {s["session_id"] for s in ok(listed)["sessions"]} == ACME_MAYA
    assert ok(search)["hits"][0]["session_id"] == "2024-05-20-after-trip"
    assert any("Sardinha" in f["text"] for f in ok(read)["l1"])
    assert "Sardinha" in ok(asked)["answer"]
    # The tenant is the token's: globex's token reads globex's maya on the same server.
    theirs = ok(call(url, stack.idp.token(tenant="globex"), "list_sessions"))
    assert [s["session_id"] for s in theirs["sessions"]] == [GLOBEX_SESSION]
    # API keys still work beside tokens.
    by_key = ok(call(url, stack.keys["acme"], "list_sessions", user="maya"))
    assert {s["session_id"] for s in by_key["sessions"]} == ACME_MAYA


def test_a_jwt_for_acme_never_reaches_globex(stack: Stack) -> None:
    url = stack.servers["jwt"].url
    token = stack.idp.token(scope="read write delete")  # acme, maya
    steps: list[tuple[str, dict[str, Any]]] = [
        ("search_memory", {"query": "bees hives honey Vermont farmers market"}),
        ("read_session", {"session_id": GLOBEX_SESSION, "layers": [0, 3]}),
        ("list_sessions", {"tenant": "globex", "tenant_id": "globex"}),
        ("list_sessions", {"user": "leo"}),  # another acme user: the token is maya's
        ("delete_session", {"session_id": GLOBEX_SESSION}),
    ]
    for user in HOSTILE_USERS:
        steps.append(("search_memory", {"query": "bees hives honey", "user": user}))
    search, read, listed, leo, delete, *rest = calls(url, token, *steps)
    hits = ok(search)["hits"]
    assert GLOBEX_SESSION not in [h["session_id"] for h in hits]
    refused(read, "no such session")
    assert {s["session_id"] for s in ok(listed)["sessions"]} == ACME_MAYA
    refused(leo, "this token is bound to user 'maya'")
    refused(delete, "no such session")
    for result in rest:
        refused(result, "this token is bound to user 'maya'")
    # A tenant the platform key may not act for is refused by the service itself.
    refused(call(url, stack.idp.token(tenant="initech"), "list_sessions"),
            "does not belong to tenant 'initech'")
    theirs = ok(call(url, stack.idp.token(tenant="globex"), "read_session",
                     session_id=GLOBEX_SESSION, layers=[3]))
    assert "bees" in theirs["l3"][0]["messages"][0]["content"]  # still there


def test_a_read_only_jwt_cannot_write_or_delete(stack: Stack) -> None:
    url = stack.servers["jwt"].url
    ro = stack.idp.token(scope="read", user="jwt-temp")
    rw = stack.idp.token(scope="read write delete", user="jwt-temp")
    add = ("add_turns", {"session_id": "j-1", "turns": [
        {"role": "user", "content": "A note to delete.", "message_id": "j-m1"}]})
    [denied_add] = calls(url, ro, add)
    refused(denied_add, "add_turns: needs the 'write' scope; this token has read")
    assert ok(calls(url, rw, add)[0])["accepted"] == 1
    denied_session, denied_user, still = calls(
        url, ro, ("delete_session", {"session_id": "j-1"}), ("delete_user", {}),
        ("list_sessions", {}))
    refused(denied_session, "delete_session: needs the 'delete' scope")
    refused(denied_user, "delete_user: needs the 'delete' scope")
    assert [s["session_id"] for s in ok(still)["sessions"]] == ["j-1"]
    gone, after = calls(url, rw, ("delete_user", {}), ("list_sessions", {}))
    assert ok(gone)["complete"] and ok(after)["sessions"] == []


def test_a_refused_jwt_gets_401_naming_the_check(stack: Stack) -> None:
    import httpx2

    url = stack.servers["jwt"].url
    expired = stack.idp.token(exp=int(time.time()) - 3600)
    assert _refused_http(url, expired)[:1] == [401]
    r = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={"Accept": "application/json, text/event-stream",
                             "Authorization": f"Bearer {stack.idp.token(aud='other')}"})
    assert r.status_code == 401 and r.json()["error_description"].startswith(
        "JWT refused: aud:"), r.text


# -- transport checks, limits, stdio ---------------------------------------------------
def test_host_and_origin_are_checked(stack: Stack) -> None:
    import httpx2

    url, key = stack.servers["main"].url, stack.keys["acme"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    base = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}

    def post(**headers: str) -> int:
        return httpx2.post(url, json=body, headers={**base, **headers}).status_code

    assert post(Host="attacker.example") == 421
    assert post(Origin="http://attacker.example") == 403
    assert post(Origin=f"http://localhost:{stack.servers['main'].port}") == 200
    assert post() == 200


def test_the_services_rate_limit_applies_to_mcp_calls(stack: Stack) -> None:
    first, second = calls(stack.servers["main"].url, stack.keys["tiny"],
                          *[("list_sessions", {"user": "u"})] * 2)
    assert not first.is_error  # the key's check took the burst's other call
    refused(second, "limited: tenant tiny: rate limit")


def test_stdio_transport_serves_the_keys_tenant(stack: Stack) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "memstrata", "mcp"],
                                   cwd=str(Path(__file__).resolve().parents[3]),
                                   env={"MEMSTRATA_API_KEY": stack.keys["acme"],
                                        "MEMSTRATA_API_ADDRESS": stack.serve.address,
                                        "MEMSTRATA_DATA_DIR": str(stack.data)})

    async def go() -> list[Any]:
        async with Client(params) as client:
            return [await client.call_tool("list_sessions", {"user": "maya"}),
                    await client.call_tool("read_session", {"session_id": GLOBEX_SESSION,
                                                            "user": "maya"})]

    listed, theirs = run(go())
    assert {s["session_id"] for s in ok(listed)["sessions"]} == ACME_MAYA
    refused(theirs, "no such session")
