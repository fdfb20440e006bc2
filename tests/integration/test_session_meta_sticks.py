"""A session's first date and labels stick on every write path of ``Memory`` (issue 17, bug 2).

On the stream path each batch's first event used to rewrite the session's
metadata, so a later batch without a date set ``session_date`` to none and
the labels to empty. The rule now lives in ``Memory`` itself: the direct
appends and the stream processor (real decoder, real Memory, no broker) keep
what the session has and fill only what it lacks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.limits import TurnLimits
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, SessionMeta
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from memstrata.wire import TurnEvent
from streams import topics
from streams.processor import Processor
from streams.records import Record
from streams.settings import StreamSettings

SCOPE = Scope(tenant_id="acme", user_id="maya")
DATE = datetime(2024, 3, 2, 9, 0)
LABELS = {"source": "chat", "channel": "web"}


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[Memory]:
    settings = Settings(data_dir=tmp_path / "data")
    m = Memory(settings, ExtractiveBuilder(), embedder, open_vector_store(settings, embedder.dim),
               open_lexical_store(settings), open_doc_store(settings))
    try:
        yield m
    finally:
        m.close()


def _event(sid: str, n: int, *, dated: bool) -> TurnEvent:
    return TurnEvent(tenant_id=SCOPE.tenant_id, user_id=SCOPE.user_id, session_id=sid,
                     message_id=f"{sid}#{n}", role="user" if n % 2 else "assistant",
                     content=f"Message {n}: we planted tomatoes and basil on the balcony.",
                     ts=datetime(2024, 3, 2, 9, n), session_date=DATE if dated else None,
                     labels=LABELS if dated else {})


def _batch(events: list[TurnEvent], start: int) -> list[Record]:
    return [Record(topics.TURNS, 0, start + i, e.key, e.to_bytes()) for i, e in enumerate(events)]


def test_a_later_stream_batch_without_a_date_keeps_the_first_date_and_labels(
        memory: Memory) -> None:
    processor = Processor(memory, StreamSettings(), turns=TurnLimits())
    try:
        first = asyncio.run(processor.handle_turns(_batch(
            [_event("s1", 1, dated=True), _event("s1", 2, dated=True)], 0)))
        late = asyncio.run(processor.handle_turns(_batch(
            [_event("s1", 3, dated=False), _event("s1", 4, dated=False)], 2)))
    finally:
        processor.close()
    assert not first.dead and not late.dead
    meta = memory.session(SCOPE, "s1")
    assert (meta.session_date, meta.labels) == (DATE, LABELS)
    assert len(memory.raw(SCOPE, "s1")) == 2
    assert {u.session_date for u in memory.l0(SCOPE, "s1")} == {DATE}


def test_a_date_only_a_later_event_of_the_batch_carries_is_kept(memory: Memory) -> None:
    processor = Processor(memory, StreamSettings(), turns=TurnLimits())
    try:
        asyncio.run(processor.handle_turns(_batch(
            [_event("s2", 1, dated=False), _event("s2", 2, dated=True)], 0)))
    finally:
        processor.close()
    meta = memory.session(SCOPE, "s2")
    assert (meta.session_date, meta.labels) == (DATE, LABELS)


def test_direct_appends_keep_the_first_date_and_labels(memory: Memory) -> None:
    dated = SessionMeta(scope=SCOPE, session_id="s3", session_date=DATE, labels=LABELS)
    bare = SessionMeta(scope=SCOPE, session_id="s3")
    later = SessionMeta(scope=SCOPE, session_id="s3", session_date=datetime(2025, 1, 1),
                        labels={"source": "other"})

    def msg(n: int) -> Message:
        return Message(role="user", content=f"Turn {n}: the basil is growing.", source_id=f"m{n}")

    memory.append_messages(dated, [msg(1)])
    memory.append_messages(bare, [msg(2)])
    memory.append_batch([(bare, [msg(3)])])
    memory.append_batch([(later, [msg(4)])])
    meta = memory.session(SCOPE, "s3")
    assert (meta.session_date, meta.labels) == (DATE, LABELS)
    # A session that started without a date gets the first one that comes.
    memory.append_messages(SessionMeta(scope=SCOPE, session_id="s4"), [msg(1)])
    memory.append_messages(later.model_copy(update={"session_id": "s4"}), [msg(2)])
    assert memory.session(SCOPE, "s4").session_date == datetime(2025, 1, 1)
    assert memory.session(SCOPE, "s4").labels == {"source": "other"}
