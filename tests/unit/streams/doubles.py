"""A MemoryWriter test double: keeps sessions in a dict and records every call.

It groups messages into turns with the core's ``group_turns`` and dedupes by
message id, and it marks the last turn of an open session provisional, which
is enough to drive the stream processor without stores or an encoder.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from memstrata.ids import record_id
from memstrata.layers.windowing import group_turns
from memstrata.model import Message, Scope, SessionMeta
from memstrata.roles import AppendReport, DeleteReceipt


class RecordingWriterDouble:
    """Not a memory: a double that records what the stream worker asks of one."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.messages: dict[tuple[Scope, str], list[Message]] = {}
        self.metas: dict[tuple[Scope, str], SessionMeta] = {}
        self.closed: set[tuple[Scope, str]] = set()
        self.calls: list[tuple[str, object]] = []
        self.flushes = 0
        #: Sessions whose last turns the double holds (``append_batch(hold=...)``).
        self.held: dict[tuple[Scope, str], list[int]] = {}
        #: Content that makes append_messages raise ValueError (a poison event).
        self.fail_on = fail_on

    def _report(self, scope: Scope, sid: str, turns: list[int], final: bool) -> AppendReport:
        all_turns = group_turns(self.messages.get((scope, sid), []))
        last = all_turns[-1].index if all_turns else 0
        prov = [] if final else [t for t in turns if t == last]
        return AppendReport(scope=scope, session_id=sid, turns_written=turns,
                            units_written=turns, provisional=prov,
                            unit_ids=[record_id(scope.tenant_id, scope.user_id, sid, "L0", t, t)
                                      for t in turns])

    def append_messages(self, meta: SessionMeta, messages: Sequence[Message]) -> AppendReport:
        if self.fail_on and any(m.content == self.fail_on for m in messages):
            raise ValueError(f"cannot index {self.fail_on!r}")
        key = (meta.scope, meta.session_id)
        self.calls.append(("append", (meta.session_id, [m.source_id for m in messages])))
        self.metas.setdefault(key, meta)
        have = self.messages.setdefault(key, [])
        seen = {m.source_id for m in have}
        before = group_turns(have)
        dup = 0
        for m in messages:
            if m.source_id in seen:
                dup += 1
                continue
            seen.add(m.source_id)
            have.append(m)
        after = group_turns(have)
        changed = [t.index for t in after if t not in before]
        self.closed.discard(key)
        rep = self._report(meta.scope, meta.session_id, changed, final=False)
        rep.duplicates = dup
        return rep

    def append_batch(self, items: Sequence[tuple[SessionMeta, Sequence[Message]]], *,
                     hold: Collection[tuple[Scope, str]] = ()) -> list[AppendReport]:
        # As Memory does: a batch that fails changes nothing (checked before any write).
        for _, messages in items:
            if self.fail_on and any(m.content == self.fail_on for m in messages):
                raise ValueError(f"cannot index {self.fail_on!r}")
        if hold:
            self.calls.append(("hold", sorted(sid for _, sid in hold)))
        reports = []
        for meta, messages in items:
            rep = self.append_messages(meta, messages)
            key = (meta.scope, meta.session_id)
            was = self.held.pop(key, [])
            if was:  # what was held is built now
                rep = self._report(meta.scope, meta.session_id,
                                   sorted(set(was) | set(rep.turns_written)), final=False)
            if key in hold and rep.provisional:  # as Memory: the open window waits
                kept = self._report(meta.scope, meta.session_id,
                                    [t for t in rep.units_written if t not in rep.provisional],
                                    final=False)
                kept.turns_written, kept.duplicates = rep.turns_written, rep.duplicates
                kept.held = self.held[key] = list(rep.provisional)
                rep = kept
            reports.append(rep)
        return reports

    def close_session(self, scope: Scope, session_id: str) -> AppendReport:
        self.calls.append(("close", session_id))
        key = (scope, session_id)
        self.closed.add(key)
        self.held.pop(key, None)
        turns = group_turns(self.messages.get(key, []))
        return self._report(scope, session_id, [turns[-1].index] if turns else [], final=True)

    def delete(self, scope: Scope, session_id: str | None = None) -> DeleteReceipt:
        self.calls.append(("delete", (str(scope), session_id)))
        for key in [k for k in self.messages if k[0] == scope and session_id in (None, k[1])]:
            del self.messages[key]
        return DeleteReceipt(scope=scope, session_id=session_id)

    def flush(self) -> None:
        self.flushes += 1

    def ingest(self, sessions, *, progress=None):
        raise NotImplementedError

    def append(self, meta, turns):
        raise NotImplementedError
