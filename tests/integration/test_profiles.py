"""Entity and persona profiles through Memory's write and delete paths (offline rules).

On examples/sample_turns.jsonl and on turns written here: who is who, what each
one likes or did, facts that update with history; profiles kept incrementally
equal a rebuild; ingest, append and the stream worker's held appends agree; a
deleted session leaves nothing of its text in any profile.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata.config import Settings
from memstrata.ingest.formats import read_file
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.profiles.book import ProfileBook
from memstrata.profiles.markdown import render_profile
from memstrata.profiles.model import fold
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_turns.jsonl"
MAYA = Scope(tenant_id="acme", user_id="maya")
TRIP = "2024-03-02-trip"
ME = Scope(tenant_id="acme", user_id="sam")


def open_memory(path: Path, embedder: Any, **overrides: Any) -> Memory:
    settings = Settings(data_dir=path, **overrides)
    return Memory(settings, ExtractiveBuilder(), embedder, open_vector_store(settings, embedder.dim),
                  open_lexical_store(settings), open_doc_store(settings))


def sample() -> list[Session]:
    return list(read_file(SAMPLE).sessions)


def own_sessions() -> list[Session]:
    """Sam's turns: a dog and the neighbour who minds it, a move, a preference that changed."""
    def s(sid: str, date: str, *texts: tuple[str, str]) -> Session:
        turns = [Turn(index=i, messages=[Message(role="user", content=u, source_id=f"{sid}:u{i}"),
                                         Message(role="assistant", content=a,
                                                 source_id=f"{sid}:a{i}")])
                 for i, (u, a) in enumerate(texts, start=1)]
        return Session(meta=SessionMeta(scope=ME, session_id=sid,
                                        session_date=datetime.fromisoformat(date)), turns=turns)
    return [
        s("s-2023-01", "2023-01-15T10:00:00",
          ("I live in Lisbon and I love coffee.", "Lisbon is a great place for coffee."),
          ("I have a dog, Biscuit. He is a beagle.", "Beagles are lovely.")),
        s("s-2024-02", "2024-02-20T10:00:00",
          ("We are going to Madeira next week.", "Who will mind Biscuit?"),
          ("Our neighbour Tomasz will look after Biscuit while we are away.",
           "Tomasz sounds reliable.")),
        s("s-2024-03", "2024-03-20T10:00:00",
          ("I moved to Porto last month.", "How do you like it?"),
          ("I don't like coffee anymore, I prefer green tea now.", "Green tea is calmer.")),
    ]


def views(m: Memory, scope: Scope) -> dict[str, dict[str, Any]]:
    return {v["id"]: v for v in ProfileBook(m.docs).views(scope, everything=True)}


def bullets(view: dict[str, Any], section: str | None = None) -> list[dict[str, Any]]:
    secs = view.get("sections", {})
    return [b for name, bs in secs.items() if section in (None, name) for b in bs]


def one(m: Memory, scope: Scope, query: str) -> dict[str, Any]:
    found = ProfileBook(m.docs).find(scope, query)
    assert len(found) == 1, [v["id"] for v in found]
    return found[0]


def values(view: dict[str, Any], slot_prefix: str) -> list[str]:
    return [b["value"] for b in bullets(view) if b["slot"].startswith(slot_prefix)]


@pytest.fixture
def memory(tmp_path: Path, embedder: Any) -> Iterator[Memory]:
    with open_memory(tmp_path / "m", embedder) as m:
        yield m


# -- what the profiles hold ------------------------------------------------------
def test_the_sample_file_holds_who_is_who_and_what_each_one_likes(memory: Memory) -> None:
    memory.ingest(sample())
    ines = one(memory, MAYA, "my sister")
    assert ines["id"] == "name:ines" and ines == one(memory, MAYA, "Inês")
    assert ines["relation"] == ["sister of @user"] and ines["kind"] == "person"
    assert values(ines, "eats:") == ["eats fish"]
    assert values(ines, "pref:") == ["likes garlic prawns"]  # "She loved ..." is Inês
    assert not values(ines, "works_as") and not values(ines, "age")  # not stated: abstain
    # Who eats fish? Inês, and nobody else; the user is the vegetarian.
    everyone = views(memory, MAYA)
    assert [v["id"] for v in everyone.values() if values(v, "eats:")] == ["name:ines"]
    me = one(memory, MAYA, "me")
    assert values(me, "diet") == ["vegetarian"] and "running" in values(me, "activity")[0]
    assert not values(me, "eats:") and "vegetarian" not in json.dumps(ines)
    # Who recommended Cervejaria Ramiro? The assistant, not the user.
    ramiro = one(memory, MAYA, "Cervejaria Ramiro")
    assert values(ramiro, "recommended_by") == ["@assistant"]
    assert "@name:cervejaria ramiro" in values(everyone["assistant"], "recommended")
    assert not values(me, "recommended")
    # Every bullet names its turns, with the raw message ids.
    for view in everyone.values():
        for b in bullets(view):
            assert b["sources"] and all(s["s"] and s["t"] >= 1 for s in b["sources"])
    (eats,) = [b for b in bullets(ines) if b["slot"] == "eats:fish"]
    assert eats["sources"] == [{"s": TRIP, "t": 3, "m": [f"{TRIP}#5"]}]
    # Other users and tenants hold none of it.
    for scope in (Scope(tenant_id="acme", user_id="leo"), Scope(tenant_id="globex",
                                                                  user_id="maya")):
        assert "ines" not in json.dumps(memory.docs.get_profiles(scope))


def test_a_neighbour_a_move_and_a_changed_preference(memory: Memory) -> None:
    memory.ingest(own_sessions())
    dog = one(memory, ME, "my dog")
    assert dog["name"] == "Biscuit" and dog["kind"] == "pet"
    assert values(dog, "cared_for_by") == ["@name:tomasz"]  # who will look after my dog
    tomasz = one(memory, ME, "Tomasz")
    assert tomasz["relation"] == ["neighbour of @user"]
    me = one(memory, ME, "me")
    (home,) = [b for b in bullets(me) if b["slot"] == "lives_in"]
    assert (home["value"], home["since"]) == ("Porto", "2024-02")  # where do I live now
    assert [(h["value"], h["since"], h["until"]) for h in home["history"]] == [
        ("Lisbon", "2023-01-15", "2024-02")]  # when did I move
    assert any("moved to Porto" in e for e in values(me, "event"))
    (coffee,) = [b for b in bullets(me) if b["slot"] == "pref:coffee"]
    assert coffee["value"] == "dislikes coffee" and coffee["op"] == "UPDATE"
    assert coffee["history"][0]["value"] == "likes coffee"
    assert "likes green tea" in values(me, "pref:")
    names = ProfileBook(memory.docs).key_names(ME)
    text = render_profile(dog, names)
    assert "looked after by: Tomasz" in text and "s-2024-02/T2 (s-2024-02:u2)" in text


# -- incremental, in any order and through every write path -----------------------
def _rebuilt(tmp: Path, sessions: list[Session], scope: Scope) -> dict[str, Any]:
    """Profiles built in one pass from every session, into an empty doc store."""
    docs = open_doc_store(Settings(data_dir=tmp))
    try:
        book = ProfileBook(docs)
        book.rebuild(scope, [(s.meta, s.turns) for s in sessions]).apply(docs)
        return docs.get_profiles(scope)
    finally:
        docs.close()


def test_incremental_equals_a_rebuild_whatever_the_order(tmp_path: Path, embedder: Any) -> None:
    sessions = sample() + own_sessions()
    with open_memory(tmp_path / "one-by-one", embedder) as m:
        for s in sessions:
            m.ingest([s])
        incremental = {sc: m.docs.get_profiles(sc) for sc in (MAYA, ME)}
    with open_memory(tmp_path / "reversed", embedder) as m:
        m.ingest(list(reversed(sessions)))
        backwards = {sc: m.docs.get_profiles(sc) for sc in (MAYA, ME)}
    for scope in (MAYA, ME):
        mine = [s for s in sessions if s.scope == scope]
        assert incremental[scope] == _rebuilt(tmp_path / f"rebuild-{scope.user_id}", mine, scope)
        assert backwards[scope] == incremental[scope]
        assert len(incremental[scope]) > 3


def test_ingest_append_and_held_stream_appends_give_the_same_profiles(
        tmp_path: Path, embedder: Any) -> None:
    sessions = sample() + own_sessions()
    with open_memory(tmp_path / "ingest", embedder) as m:
        m.ingest(sessions)
        batch = {sc: m.docs.get_profiles(sc) for sc in (MAYA, ME)}
    with open_memory(tmp_path / "append", embedder) as m:
        for s in sessions:
            for t in s.turns:
                m.append_messages(s.meta, t.messages)
        appended = {sc: m.docs.get_profiles(sc) for sc in (MAYA, ME)}
    with open_memory(tmp_path / "stream", embedder) as m:  # the stream worker's way
        for s in sessions:
            for t in s.turns:
                for msg in t.messages:
                    m.append_batch([(s.meta, [msg])], hold=[(s.scope, s.session_id)])
            m.close_session(s.scope, s.session_id)
        streamed = {sc: m.docs.get_profiles(sc) for sc in (MAYA, ME)}
    assert appended == batch and streamed == batch


# -- deletes ----------------------------------------------------------------------------
_STRUCTURE = {"user", "assistant", "name", "kind", "person", "place", "plan", "plans",
              "event", "events", "view", "value", "since", "until", "history", "sources"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]{3,}", fold(text))} - _STRUCTURE


def test_a_deleted_session_leaves_nothing_of_its_text_in_any_profile(
        tmp_path: Path, memory: Memory) -> None:
    sessions = sample() + own_sessions()
    memory.ingest(sessions)
    for scope, sid in ((MAYA, TRIP), (ME, "s-2024-02")):
        gone = next(s for s in sessions if s.session_id == sid)
        kept = [s for s in sessions if s.scope == scope and s.session_id != sid]
        before = json.dumps(memory.docs.get_profiles(scope), ensure_ascii=False)
        only_there = (_words(" ".join(m.content for t in gone.turns for m in t.messages))
                      - _words(" ".join(m.content for s in kept for t in s.turns
                                        for m in t.messages)))
        assert sid in before and only_there & _words(before)  # it was there
        receipt = memory.delete(scope, sid)
        assert receipt.complete
        after = memory.docs.get_profiles(scope)
        dump = json.dumps(after, ensure_ascii=False)
        assert sid not in dump
        assert not (only_there & _words(dump)), only_there & _words(dump)
        assert after == _rebuilt(tmp_path / f"rest-{sid}", kept, scope)
    dog = one(memory, ME, "my dog")
    assert values(dog, "cared_for_by") == [] and values(dog, "is_a") == ["beagle"]
    assert ProfileBook(memory.docs).find(ME, "Tomasz") == []
    ines = one(memory, MAYA, "Inês")
    assert ines["relation"] == [] and values(ines, "pref:") == ["likes garlic prawns"]


def test_deleting_a_user_removes_all_its_profiles(memory: Memory) -> None:
    memory.ingest(sample() + own_sessions())
    leo = Scope(tenant_id="acme", user_id="leo")
    assert memory.docs.count_profiles(MAYA) > 0 and memory.docs.count_profiles(leo) > 0
    assert memory.delete(MAYA).complete
    assert memory.docs.count_profiles(MAYA) == 0 and memory.docs.get_profiles(MAYA) == {}
    assert memory.docs.count_profiles(leo) > 0 and memory.docs.count_profiles(ME) > 0


def test_profiles_can_be_turned_off(tmp_path: Path, embedder: Any) -> None:
    with open_memory(tmp_path, embedder, profiles=False) as m:
        m.ingest(sample())
        assert m.docs.count_profiles() == 0
        assert m.delete(MAYA, TRIP).complete


def test_the_profile_command_prints_entities_and_sources(tmp_path: Path, embedder: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import memstrata.cli as cli

    cli._register_subcommands()
    with open_memory(tmp_path, embedder) as m:
        m.ingest(sample())
    monkeypatch.setenv("MEMSTRATA_DATA_DIR", str(tmp_path))
    runner = CliRunner()
    listing = runner.invoke(cli.app, ["profile", "--tenant", "acme", "--user", "maya"])
    assert listing.exit_code == 0, listing.output
    assert re.search(r"\| Inês \| person \| sister of the user \| my sister \|", listing.output)
    shown = runner.invoke(cli.app, ["profile", "my sister", "-t", "acme", "-u", "maya"])
    assert shown.exit_code == 0, shown.output
    assert "# Inês (person)" in shown.output
    assert f"- eats fish (since 2024-03-02) [{TRIP}/T3 ({TRIP}#5)]" in shown.output
    missing = runner.invoke(cli.app, ["profile", "Zorro", "-t", "acme", "-u", "maya"])
    assert missing.exit_code == 1 and "no profile named 'Zorro'" in missing.output


def test_a_write_whose_profiles_fail_leaves_nothing_behind(memory: Memory,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata.store.types import StoreError

    def broken(*args: Any, **kwargs: Any) -> None:  # test double: the profile write fails
        raise StoreError("sqlite: disk full (test double)")

    monkeypatch.setattr(memory.docs, "put_profiles", broken)
    with pytest.raises(StoreError):
        memory.ingest(sample())
    assert memory.docs.get_turns(MAYA, TRIP) == [] and memory.docs.count_profiles() == 0
    monkeypatch.undo()
    memory.ingest(sample())
    assert one(memory, MAYA, "Inês")["kind"] == "person"
