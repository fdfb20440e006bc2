"""Data dirs for the lifecycle tests, and a snapshot of every layer to compare two of them.

The history mixes what an export has to carry: LoCoMo (speakers, dia ids, a
photo caption folded into the text, source labels), LongMemEval (dated
haystacks, message ids made from the session id) and hand-written sessions
with the edge cases (a session that opens with the assistant, messages
without ids, a zoned date, an undated session, labels of its own, and the
same user id under two tenants).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.ingest.formats import open_source
from memstrata.layers.windowing import group_turns
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

ROOT = Path(__file__).resolve().parents[3]
LOCOMO = ROOT / "tests" / "fixtures" / "locomo_mini.json"
LONGMEMEVAL = ROOT / "tests" / "fixtures" / "longmemeval_mini.json"
ACME_MAYA = Scope(tenant_id="acme", user_id="maya")
ACME_LEO = Scope(tenant_id="acme", user_id="leo")
GLOBEX_MAYA = Scope(tenant_id="globex", user_id="maya")


def open_memory(data_dir: Path, embedder: MiniLMEmbedder) -> Memory:
    """The embedded stack (extractive builder, MiniLM, Qdrant Edge, tantivy, SQLite)."""
    s = Settings(data_dir=data_dir)
    return Memory(s, ExtractiveBuilder(), embedder, open_vector_store(s, embedder.dim),
                  open_lexical_store(s), open_doc_store(s),
                  session_lexical=open_lexical_store(s, sessions=True))


def edge_sessions() -> list[Session]:
    def msgs(*items: tuple[str, str, str | None, str | None]) -> list[Message]:
        return [Message(role=r, content=c, speaker=sp, source_id=i)  # type: ignore[arg-type]
                for r, c, sp, i in items]

    zoned = datetime(2024, 3, 2, 9, 15, tzinfo=timezone(timedelta(hours=-5)))
    out = [
        (SessionMeta(scope=ACME_MAYA, session_id="opens-with-assistant", session_date=zoned,
                     labels={"channel": "web", "locale": "pt-PT"}), msgs(
            ("assistant", "Welcome back! How did the Lisbon trip go?", "Bot", "m1"),
            ("user", "Great, Ines loved the garlic prawns at Cervejaria Ramiro.", "Maya", "m2"),
            ("assistant", "Lovely. Want me to save the restaurant?", "Bot", "m3"),
            ("user", "Yes please, and remind me to book it again in October.", "Maya", "m4"))),
        (SessionMeta(scope=ACME_MAYA, session_id="undated-no-ids"), msgs(
            ("user", "My grey kitten Pixel knocked over the basil plant again.", None, None),
            ("assistant", "Try a heavier pot or a shelf she cannot reach.", None, None),
            ("user", "Good idea, I will move it to the kitchen shelf.", None, None))),
        (SessionMeta(scope=ACME_LEO, session_id="2024-01-05-job",
                     session_date=datetime(2024, 1, 5, 8, 0)), msgs(
            ("user", "I start a new job at a robotics startup in Munich next Monday.", None,
             "j1"),
            ("assistant", "Congratulations! What will you be working on?", None, "j2"))),
        (SessionMeta(scope=GLOBEX_MAYA, session_id="g1-dog",
                     session_date=datetime(2024, 2, 1, 10, 0), labels={}), msgs(
            ("user", "My dog Biscuit learned to open the fridge.", None, "g1"),
            ("assistant", "Biscuit sounds clever; try a child lock.", None, "g2"))),
    ]
    return [Session(meta=meta, turns=group_turns(m)) for meta, m in out]


def build_history(memory: Memory) -> None:
    """Ingest the whole history into ``memory`` and read some L1/L2 (so they are cached)."""
    memory.ingest(open_source(LOCOMO, tenant_id="acme").sessions())
    memory.ingest(open_source(LONGMEMEVAL, tenant_id="acme").sessions())
    memory.ingest(edge_sessions())
    for scope, sid in ((ACME_MAYA, "opens-with-assistant"), (GLOBEX_MAYA, "g1-dog")):
        memory.facts(scope, sid)
        memory.notes(scope, sid)


def tenants_of(memory: Memory) -> list[str]:
    return sorted({t.scope.tenant_id for t in memory.docs.session_tallies()})


def layers_snapshot(memory: Memory, with_cached: bool = False) -> dict[tuple[str, str, str], Any]:
    """Every session's L0-L3 as stored: metadata, raw turns, digest, units, index counts."""
    out: dict[tuple[str, str, str], Any] = {}
    for tally in memory.docs.session_tallies():
        scope, sid = tally.scope, tally.session_id
        units = memory.docs.session_units(scope, sid)
        entry: dict[str, Any] = {
            "meta": memory.docs.get_session(scope, sid),
            "l3": memory.docs.get_turns(scope, sid),
            "digest": memory.docs.session_digest(scope, sid),
            "l0": [(u.id, u.turn_index, u.summary, u.keywords, u.tags, u.source_ids,
                    u.session_date) for u in units],
            "vectors": memory.vectors.count_session(scope, sid),
            "bm25": memory.lexical.count_session(scope, sid),
        }
        if with_cached:
            entry["l1"] = memory.facts(scope, sid).facts
            entry["l2"] = memory.notes(scope, sid).notes
        out[(scope.tenant_id, scope.user_id, sid)] = entry
    return out
