"""Memory.append_batch: several sessions in one write, the same records as one call each."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.check import check_stores
from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, SessionMeta
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

A = SessionMeta(scope=Scope(tenant_id="t", user_id="u"), session_id="a")
B = SessionMeta(scope=Scope(tenant_id="t", user_id="v"), session_id="b")


def _memory(path: Path, embedder: MiniLMEmbedder) -> Memory:
    settings = Settings(data_dir=path)
    return Memory(settings, ExtractiveBuilder(), embedder, open_vector_store(settings, embedder.dim),
                  open_lexical_store(settings), open_doc_store(settings),
                  session_lexical=open_lexical_store(settings, sessions=True))


def _msgs(sid: str, start: int, n: int) -> list[Message]:
    return [Message(role="user" if i % 2 else "assistant",
                    content=f"{sid} message {i} about gardening and bees number {i}",
                    source_id=f"{sid}#{i}") for i in range(start, start + n)]


def _dump(memory: Memory, metas: tuple[SessionMeta, ...] = (A, B)) -> list[object]:
    out: list[object] = []
    for meta in metas:
        out.append(memory.docs.session_digest(meta.scope, meta.session_id))
        out.append([t.model_dump() for t in memory.raw(meta.scope, meta.session_id)])
        out.append([u.model_dump() for u in memory.l0(meta.scope, meta.session_id)])
        out.append((memory.vectors.count(meta.scope), memory.lexical.count(meta.scope)))
    return out


def test_append_batch_equals_append_messages(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    chunks = [(1, 5), (6, 3), (9, 6)]
    with _memory(tmp_path / "one", embedder) as one, _memory(tmp_path / "batch", embedder) as bat:
        for start, n in chunks:
            reports_one = [one.append_messages(A, _msgs("a", start, n)),
                           one.append_messages(B, _msgs("b", start, n))]
            reports_bat = bat.append_batch([(A, _msgs("a", start, n)), (B, _msgs("b", start, n))])
            assert [(r.units_written, r.provisional, r.unit_ids) for r in reports_bat] == \
                [(r.units_written, r.provisional, r.unit_ids) for r in reports_one]
        replay = bat.append_batch([(A, _msgs("a", 1, 3))])
        assert replay[0].duplicates == 3 and not replay[0].units_written
        for memory in (one, bat):
            memory.close_session(A.scope, "a")
            memory.close_session(B.scope, "b")
        assert _dump(bat) == _dump(one)


def test_a_session_twice_in_one_batch_is_refused(tmp_path: Path,
                                                 embedder: MiniLMEmbedder) -> None:
    with _memory(tmp_path, embedder) as memory, pytest.raises(ValueError, match="more than once"):
        memory.append_batch([(A, _msgs("a", 1, 2)), (A, _msgs("a", 3, 2))])


def test_a_held_window_waits_then_ends_as_if_never_held(tmp_path: Path,
                                                        embedder: MiniLMEmbedder) -> None:
    """Held one message at a time (a worker behind its topic): the open window is stored
    as turns only, the session is not "done", and once built and closed every record is
    the one the unheld path writes."""
    with _memory(tmp_path / "plain", embedder) as plain, \
            _memory(tmp_path / "held", embedder) as held:
        for i in range(1, 12):
            plain.append_batch([(A, _msgs("a", i, 1))])
            (rep,) = held.append_batch([(A, _msgs("a", i, 1))], hold=[(A.scope, "a")])
            last = max(t.index for t in held.raw(A.scope, "a"))
            assert last in rep.held and not rep.provisional  # the open window waits
            assert rep.turns_written == [last]
            assert last not in {u.turn_index for u in held.l0(A.scope, "a")}
            assert (held.docs.session_digest(A.scope, "a") or "").endswith(":held")
            # Its whole-session document waits too (held from the first message: none yet).
            assert held.session_lexical is not None
            held.session_lexical.flush()
            assert held.session_lexical.count_session(A.scope, "a") == 0
        found = check_stores(held.docs, held.vectors, held.lexical).findings
        assert [(f.severity, f.kind) for f in found] == [("warning", "held")]
        built = held.append_batch([(A, [])])[0]  # no messages: builds what was held
        assert not built.held and set(built.units_written) >= set(rep.held)
        assert built.provisional  # still open: provisional, as the plain path has it
        held.session_lexical.flush()
        assert held.session_lexical.count_session(A.scope, "a") == 1
        assert [u.model_dump() for u in held.l0(A.scope, "a")] == \
            [u.model_dump() for u in plain.l0(A.scope, "a")]
        # Held again, then closed: the close builds it final.
        held.append_batch([(A, _msgs("a", 12, 1))], hold=[(A.scope, "a")])
        plain.append_batch([(A, _msgs("a", 12, 1))])
        for memory in (plain, held):
            memory.close_session(A.scope, "a")
        assert _dump(held, (A,)) == _dump(plain, (A,))
        # A closed session holds nothing.
        assert not held.append_batch([(A, [])], hold=[(A.scope, "a")])[0].held
