"""Writes, deletes and counts over a local memory, through the core's writer role.

Each function runs in the service's single write thread (the embedded stores
admit one writer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memstrata.model import Message, Scope, SessionMeta
from memstrata.roles import DeleteReceipt, MemoryStats
from query_service.publish import TurnRecord


def group_by_session(records: Sequence[TurnRecord]) -> dict[tuple[Scope, str], list[TurnRecord]]:
    """Records per session, in arrival order (a batch may mix users and sessions)."""
    out: dict[tuple[Scope, str], list[TurnRecord]] = {}
    for r in records:
        scope = Scope(tenant_id=r.tenant_id, user_id=r.user_id)
        out.setdefault((scope, r.session_id), []).append(r)
    return out


def append_direct(memory: Any, records: Sequence[TurnRecord]) -> int:
    """Append every record through ``append_messages``; flush; return duplicates ignored."""
    duplicates = 0
    for (scope, session_id), group in group_by_session(records).items():
        date = next((r.session_date for r in group if r.session_date is not None), None)
        meta = SessionMeta(scope=scope, session_id=session_id, session_date=date)
        messages = [Message(role=r.role, content=r.content, speaker=r.speaker,
                            source_id=r.message_id) for r in group]
        if hasattr(memory, "append_messages"):
            report = memory.append_messages(meta, messages)
            duplicates += int(getattr(report, "duplicates", 0))
        else:
            duplicates += _append_by_reingest(memory, meta, messages)
    memory.flush()
    return duplicates


def _append_by_reingest(memory: Any, meta: SessionMeta, messages: Sequence[Message]) -> int:
    """TRANSITIONAL, until core's ``append_messages`` (issue 8) is on main: group the
    messages into turns as ``append_messages`` does and re-ingest the whole session."""
    from memstrata.model import Session, Turn

    stored = memory.docs.get_session(meta.scope, meta.session_id)
    turns = memory.docs.get_turns(meta.scope, meta.session_id) if stored else []
    seen = {m.source_id for t in turns for m in t.messages if m.source_id}
    new = [m for m in messages if not (m.source_id and m.source_id in seen)]
    if new:
        grouped = [list(t.messages) for t in turns]
        for m in new:
            if m.role == "user" or not grouped:
                grouped.append([m])
            else:
                grouped[-1].append(m)
        base = stored if stored is not None and stored.session_date else meta
        memory.ingest([Session(meta=base, turns=[Turn(index=i, messages=ms)
                                                 for i, ms in enumerate(grouped, start=1)])])
    return len(messages) - len(new)


def close_session(memory: Any, scope: Scope, session_id: str) -> int:
    """Build the session's final windows; the number of units written."""
    memory.session(scope, session_id)  # SessionNotFound for an unknown session
    if not hasattr(memory, "close_session"):  # TRANSITIONAL: whole-session ingest is final
        return 0
    report = memory.close_session(scope, session_id)
    memory.flush()
    return len(getattr(report, "units_written", []) or [])


def delete(memory: Any, scope: Scope, session_id: str | None) -> DeleteReceipt:
    """Delete in every store and flush, so that no later search sees the data."""
    before = _counts(memory, scope)
    receipt = memory.delete(scope, session_id)
    memory.flush()
    if receipt is None:  # TRANSITIONAL: core's delete returns a receipt once issue 8 lands
        after = _counts(memory, scope)
        receipt = DeleteReceipt(scope=scope, session_id=session_id,
                                removed={k: before[k] - after[k] for k in before})
    return receipt  # type: ignore[no-any-return]


def _counts(memory: Any, scope: Scope) -> dict[str, int]:
    return {"vectors": memory.vectors.count(scope), "lexical": memory.lexical.count(scope),
            "docs": memory.docs.count_turns(scope)}


def stats(memory: Any, tenant: str) -> MemoryStats:
    if not hasattr(memory, "stats"):
        raise NotImplementedError("GetStats: this memory does not count its records yet")
    return memory.stats(tenant)  # type: ignore[no-any-return]
