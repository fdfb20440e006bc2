"""The session-level BM25 document: a whole session's raw text as one entry.

The L0 index matches one turn at a time, so a question whose words are spread
over a session ("What exercises has John done?" asked of a session that
mentions weights in one turn and yoga in another) has no single unit that
holds them all. A second BM25 index with one document per session, built
from the raw turns, scores the session as a whole; the retriever blends its
ranking into the session scores (see :mod:`memstrata.retrieval.hybrid`).
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.model import SessionMeta, Turn
from memstrata.store.types import LexicalDoc

#: The record-id layer of session documents (distinct from every L0 unit id).
SESSION_LAYER = "session-bm25"


def session_text(turns: Sequence[Turn]) -> str:
    """The text a session document holds: every turn as ``Speaker: content`` lines."""
    return "\n".join(t.text() for t in sorted(turns, key=lambda t: t.index))


def session_document(meta: SessionMeta, turns: Sequence[Turn]) -> LexicalDoc:
    """One lexical document for the whole session (replaced when the session changes)."""
    return LexicalDoc(
        id=meta.record_id(SESSION_LAYER),
        scope=meta.scope,
        session_id=meta.session_id,
        turn_index=0,
        text=session_text(turns),
    )
