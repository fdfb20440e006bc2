"""Writes, deletes and counts over a local memory, through the core's writer role.

Each function runs in the service's single write thread (the embedded stores
admit one writer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memstrata.layers.lazy import SessionNotFound
from memstrata.model import Message, Scope, SessionMeta
from memstrata.roles import DeleteReceipt, MemoryStats
from memstrata.wire import TurnEvent


def group_by_session(records: Sequence[TurnEvent]) -> dict[tuple[Scope, str], list[TurnEvent]]:
    """Records per session, in arrival order (a batch may mix users and sessions)."""
    out: dict[tuple[Scope, str], list[TurnEvent]] = {}
    for r in records:
        scope = Scope(tenant_id=r.tenant_id, user_id=r.user_id)
        out.setdefault((scope, r.session_id), []).append(r)
    return out


def append_direct(memory: Any, records: Sequence[TurnEvent]) -> int:
    """Append every record through ``append_messages``; flush; return duplicates ignored."""
    duplicates = 0
    for (scope, session_id), group in group_by_session(records).items():
        date = next((r.session_date for r in group if r.session_date is not None), None)
        labels = next((r.labels for r in group if r.labels), {})
        try:  # as on the turns topic: the session's first date and labels stick
            stored = memory.session(scope, session_id)
            date, labels = stored.session_date or date, stored.labels or labels
        except SessionNotFound:
            pass
        meta = SessionMeta(scope=scope, session_id=session_id, session_date=date,
                           labels=labels)
        messages = [Message(role=r.role, content=r.content, speaker=r.speaker,
                            source_id=r.message_id) for r in group]
        duplicates += memory.append_messages(meta, messages).duplicates
    memory.flush()
    return duplicates


def close_session(memory: Any, scope: Scope, session_id: str) -> int:
    """Build the session's final windows; the number of units written."""
    memory.session(scope, session_id)  # SessionNotFound for an unknown session
    report = memory.close_session(scope, session_id)
    memory.flush()
    return len(report.units_written)


class DeleteIncomplete(RuntimeError):
    """A store kept data after a delete and its retry; the message names the stores."""


def delete(memory: Any, scope: Scope, session_id: str | None) -> DeleteReceipt:
    """Delete in every store and flush, so that no later search sees the data.

    A delete that fails part way is retried once (the core finishes it on retry);
    if a store still fails, the call fails and says which store, never acknowledges.
    """
    receipt: DeleteReceipt = memory.delete(scope, session_id)
    if not receipt.complete:
        retry: DeleteReceipt = memory.delete(scope, session_id)
        for store, n in retry.removed.items():
            receipt.removed[store] = receipt.removed.get(store, 0) + n
        receipt.errors, receipt.complete = retry.errors, retry.complete
    if not receipt.complete:
        raise DeleteIncomplete("delete incomplete, retry to finish: "
                               + ", ".join(sorted(receipt.errors)) + " failed")
    memory.flush()
    return receipt


def stats(memory: Any, tenant: str) -> MemoryStats:
    return memory.stats(tenant)  # type: ignore[no-any-return]
