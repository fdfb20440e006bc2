"""Turn-at-a-time writing: append, append_messages, close, and their equivalence
with one-shot ingest. Real embedded stack (extractive builder, MiniLM, Qdrant
Edge, tantivy, SQLite) in temporary folders."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.layers.windowing import group_turns
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Session
from memstrata.roles import MemoryReader, MemoryWriter, ServedMemory
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from tests.support.counting import CountingEmbedder
from tests.support.growing import ALICE, messages, meta

#: Small windows by characters too, so some windows are cut by size.
SETTINGS = {"l0_max_window_chars": 1500}


def open_memory(path: Path, embedder, **overrides) -> Memory:
    settings = Settings(data_dir=path, **{**SETTINGS, **overrides})
    counting = CountingEmbedder(embedder)
    return Memory(settings, ExtractiveBuilder(), counting,
                  open_vector_store(settings, embedder.dim), open_lexical_store(settings),
                  open_doc_store(settings))


def records(m: Memory, session_id: str = "s1") -> dict:
    """Everything stored for a session, in comparable form."""
    units = m.docs.session_units(ALICE, session_id)
    return {
        "units": [u.model_dump() for u in units],
        "turns": [t.model_dump() for t in m.docs.get_turns(ALICE, session_id)],
        "digest": m.docs.session_digest(ALICE, session_id),
        "meta": m.docs.get_session(ALICE, session_id),
        "vectors": m.vectors.count(ALICE),
        "lexical": m.lexical.count(ALICE),
        "search": [(h.session_id, [u.id for u in h.units])
                   for h in m.search(ALICE, ["hiking trip Dolomites", "cello practice"])],
    }


def test_memory_implements_both_roles(tmp_path: Path, embedder):
    with open_memory(tmp_path, embedder) as m:
        assert isinstance(m, MemoryReader) and isinstance(m, MemoryWriter)
        assert isinstance(m, ServedMemory)  # what the query service runs on


@pytest.mark.parametrize("seed", [1, 2])
def test_appending_in_random_chunks_equals_one_shot_ingest(tmp_path: Path, embedder, seed):
    msgs = messages(14, seed=seed)
    turns = group_turns(msgs)
    with open_memory(tmp_path / "once", embedder) as once:
        once.ingest([Session(meta=meta(), turns=turns)])
        expected = records(once)
    rnd = random.Random(seed)
    with open_memory(tmp_path / "turns", embedder) as by_turn, \
            open_memory(tmp_path / "msgs", embedder) as by_msg:
        i = 0
        while i < len(turns):  # whole turns, in chunks of 1-4
            n = rnd.randint(1, 4)
            by_turn.append(meta(), turns[i : i + n])
            i += n
        i = 0
        while i < len(msgs):  # messages, in chunks of 1-5, cutting turns anywhere
            n = rnd.randint(1, 5)
            by_msg.append_messages(meta(), msgs[i : i + n])
            i += n
        by_turn.close_session(ALICE, "s1")
        by_msg.close_session(ALICE, "s1")
        for m in (by_turn, by_msg):
            m.flush()
            got = records(m)
            assert got["units"] == expected["units"]
            assert got == expected
        # The same session ingested again over an appended one adds nothing.
        assert by_turn.ingest([Session(meta=meta(), turns=turns)]).unchanged == 1


def test_append_reembeds_only_the_windows_a_turn_touches(tmp_path: Path, embedder):
    turns = group_turns(messages(12, seed=3))
    with open_memory(tmp_path, embedder, l0_max_window_chars=200_000) as m:
        size = m.settings.l0_window_turns
        done: set[int] = set()  # turns whose window is complete: never embedded again
        for t in turns:
            report = m.append(meta(), [t])
            assert report.turns_written == [t.index]
            assert not done & set(report.units_written)
            assert len(report.units_written) <= size
            assert report.embedded == len(report.units_written)
            assert set(report.provisional) <= set(report.units_written)
            if not report.provisional:
                done |= set(report.units_written)
        # One-shot ingest embeds len(turns) texts; a unit the growing window left as
        # it was is not embedded again (with the extractive builder: none at all).
        assert m.embedder.texts <= len(turns) + size
        # Closing makes the last window final, without re-embedding anything.
        before = m.embedder.texts
        closed = m.close_session(ALICE, "s1")
        assert closed.provisional == [] and m.embedder.texts == before
        # Replaying the same turns changes nothing.
        again = m.append(meta(), turns[-3:])
        assert again.turns_written == [] and again.embedded == 0


def test_a_reply_that_arrives_later_rebuilds_its_turn(tmp_path: Path, embedder):
    question = Message(role="user", content="Which bakery did Lena join in Porto?",
                       source_id="q1")
    reply = Message(role="assistant", content="She joined Padaria Ribeiro near the river.",
                    source_id="r1")
    with open_memory(tmp_path, embedder) as m:
        first = m.append_messages(meta(), [question])
        assert first.turns_written == [1] and first.provisional == [1]
        second = m.append_messages(meta(), [reply])
        assert second.turns_written == [1] and second.units_written == [1]
        assert [x.source_id for x in m.raw(ALICE, "s1")[0].messages] == ["q1", "r1"]
        assert "Padaria" in " ".join(m.l0(ALICE, "s1")[0].keywords + [m.l0(ALICE, "s1")[0].summary]) \
            or m.search(ALICE, "Padaria Ribeiro")[0].session_id == "s1"
        # A replay of either message (same message id) changes nothing.
        replay = m.append_messages(meta(), [question, reply])
        assert replay.duplicates == 2 and replay.turns_written == [] and replay.embedded == 0
        assert len(m.raw(ALICE, "s1")) == 1


def test_stats_count_what_is_stored(tmp_path: Path, embedder):
    turns = group_turns(messages(5, seed=4))
    with open_memory(tmp_path, embedder) as m:
        m.append(meta("s1"), turns)
        m.append(meta("s2"), turns[:2])
        m.facts(ALICE, "s1")
        s = m.stats("acme")
        assert (s.users, s.sessions, s.turns, s.units) == (1, 2, len(turns) + 2, len(turns) + 2)
        assert s.cached_layers == {"L1": 1}
        assert m.stats("nobody").sessions == 0 and m.stats().sessions == 2


@pytest.mark.parametrize(("policy", "expected"), [("call", 3), ("batch", 0), ("time", 1)])
def test_appends_flush_as_the_policy_says(tmp_path: Path, embedder, monkeypatch, policy,
                                          expected):
    turns = group_turns(messages(3, seed=6))[:3]
    with open_memory(tmp_path, embedder, flush_policy=policy, flush_interval_s=3600) as m:
        flushes: list[float] = []
        real = m.flush
        monkeypatch.setattr(m, "flush", lambda: (flushes.append(1), real())[1])
        if policy == "time":
            m._last_flush -= 3601  # the interval has passed once, then not again
        for t in turns:
            m.append(meta(), [t])
        assert len(flushes) == expected
        m.ingest([Session(meta=meta("s2"), turns=turns)])
        assert len(flushes) == expected + 1  # a batch ingest always ends in one flush


def test_tantivy_can_leave_commits_to_flush(tmp_path: Path, embedder):
    turns = group_turns(messages(4, seed=8))
    with open_memory(tmp_path, embedder, tantivy_commit="flush") as m:
        for t in turns:
            m.append(meta(), [t])
        assert m.lexical.count(ALICE) == 0 and m.vectors.count(ALICE) == len(turns)
        m.flush()
        assert m.lexical.count(ALICE) == len(turns)
        m.append(meta("s2"), turns[:1])
    # Closing commits what is still waiting.
    with open_memory(tmp_path, embedder) as m:
        assert m.lexical.count(ALICE) == len(turns) + 1
