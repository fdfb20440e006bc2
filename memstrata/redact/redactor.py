"""The redaction step: a tenant's rule applied to a message before anything stores it.

:class:`Redactor` is the one object that sees a message's text and what the
detectors found in it. It returns the message masked (each value replaced by a
typed placeholder, ``[EMAIL]``, the same value getting the same placeholder
within the message and a second value ``[EMAIL_2]``), or None (``drop``), and
counts what it did by tenant and kind in :class:`RedactionCounts`: never the
text, never a value. A masked message keeps a marker, ``Message.redacted``
(the kinds masked), so a stored turn says it was redacted.

Masking is idempotent (a placeholder matches no detector), so the query
service may redact at its edge and the memory again on the write path: the
second pass changes nothing and counts nothing. Message ids are never derived
here: an id is the one the producer sent, computed from the original (see
docs/lifecycle-redaction.md), so a replay stays a replay.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from memstrata.model import MAX_CONTENT_CHARS, Message, Turn
from memstrata.redact.policy import Policy, PolicySource, Rule
from memstrata.redact.types import RULE_KINDS, Detector, Finding
from memstrata.wire import TurnEvent

__all__ = ["Action", "RedactionCounts", "Redactor", "regroup"]

Action = Literal["mask", "drop"]
_ORDER = {k: i for i, k in enumerate(RULE_KINDS)}


class RedactionCounts:
    """What redaction did, by tenant: values by kind, messages by action (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: Counter[tuple[str, str]] = Counter()
        self._messages: Counter[tuple[str, str]] = Counter()

    def record(self, tenant_id: str, found: Mapping[str, int], action: Action) -> None:
        with self._lock:
            for kind, n in found.items():
                self._values[(tenant_id, kind)] += n
            self._messages[(tenant_id, action)] += 1

    def values(self) -> dict[tuple[str, str], int]:
        """(tenant, kind) -> values found (masked, or in a dropped message)."""
        with self._lock:
            return dict(self._values)

    def messages(self) -> dict[tuple[str, str], int]:
        """(tenant, action) -> messages masked or dropped."""
        with self._lock:
            return dict(self._messages)


def resolve(findings: Iterable[Finding]) -> list[Finding]:
    """Non-overlapping findings, in order: of two that overlap, the earlier and longer wins."""
    ranked = sorted(findings, key=lambda f: (f.start, -(f.end - f.start),
                                             _ORDER.get(f.kind, len(_ORDER)), f.kind))
    out: list[Finding] = []
    for f in ranked:
        if not out or f.start >= out[-1].end:
            out.append(f)
    return out


def mask(text: str, findings: Sequence[Finding]) -> str:
    """``text`` with each finding replaced by its placeholder (``findings`` resolved)."""
    labels: dict[tuple[str, str], str] = {}
    seen: Counter[str] = Counter()
    parts: list[str] = []
    at = 0
    for f in findings:
        key = (f.kind, f.key or text[f.start:f.end])
        label = labels.get(key)
        if label is None:
            seen[f.kind] += 1
            n = seen[f.kind]
            label = labels[key] = f"[{f.kind.upper()}{'' if n == 1 else f'_{n}'}]"
        parts += (text[at:f.start], label)
        at = f.end
    parts.append(text[at:])
    return "".join(parts)


def regroup(messages: Sequence[Message], first_index: int = 1) -> list[Turn]:
    """Messages into turns by the arrival rule: a user message opens a turn, others join it."""
    turns: list[list[Message]] = []
    for m in messages:
        if m.role == "user" or not turns:
            turns.append([m])
        else:
            turns[-1].append(m)
    return [Turn(index=i, messages=ms) for i, ms in enumerate(turns, start=first_index)]


class Redactor:
    """Detectors plus the policy in force; counts what it masks and drops."""

    def __init__(self, detectors: Sequence[Detector], policy: Policy | PolicySource,
                 counts: RedactionCounts | None = None) -> None:
        self.detectors = list(detectors)
        self._policy = policy
        self.counts = counts or RedactionCounts()

    @classmethod
    def off(cls) -> "Redactor":
        """Stores every message as sent (the default of a memory nobody configured)."""
        return cls([], Policy(Rule("off", frozenset()), {}))

    @property
    def policy(self) -> Policy:
        p = self._policy
        return p.current() if isinstance(p, PolicySource) else p

    @property
    def active(self) -> bool:
        return self.policy.active

    def rule(self, tenant_id: str) -> Rule:
        return self.policy.rule(tenant_id)

    def scan(self, text: str, kinds: frozenset[str]) -> list[Finding]:
        """The values of ``kinds`` in ``text``, overlaps settled, in order."""
        found: list[Finding] = []
        for d in self.detectors:
            if d.kinds & kinds:
                found.extend(d.find(text, kinds))
        return resolve(f for f in found if f.kind in kinds)

    def _apply(self, tenant_id: str, text: str, max_chars: int
               ) -> tuple[str, frozenset[str]] | None:
        """(new text, kinds masked); (text, {}) when nothing was found; None: drop."""
        rule = self.rule(tenant_id)
        if not rule.active or not text:
            return text, frozenset()
        findings = self.scan(text, rule.kinds)
        if not findings:
            return text, frozenset()
        found = Counter(f.kind for f in findings)
        self.counts.record(tenant_id, found, rule.mode)  # type: ignore[arg-type]
        if rule.mode == "drop":
            return None
        return mask(text, findings)[:max_chars], frozenset(found)

    def message(self, tenant_id: str, m: Message, *,
                max_chars: int = MAX_CONTENT_CHARS) -> Message | None:
        """``m`` masked (with its marker), unchanged, or None when the tenant drops it."""
        done = self._apply(tenant_id, m.content, max_chars)
        if done is None:
            return None
        text, kinds = done
        if not kinds:
            return m
        marker = tuple(sorted(set(m.redacted) | kinds))
        return m.model_copy(update={"content": text, "redacted": marker})

    def messages(self, tenant_id: str, ms: Sequence[Message]) -> tuple[list[Message], int]:
        """The messages to store, in order, and how many were dropped."""
        if not self.rule(tenant_id).active:
            return list(ms), 0
        out = [r for r in (self.message(tenant_id, m) for m in ms) if r is not None]
        return out, len(ms) - len(out)

    def turns(self, tenant_id: str, turns: Sequence[Turn]) -> list[Turn]:
        """A whole session's turns redacted, as the stream path would store them.

        Masking keeps every turn's index. When a message is dropped, the rest are
        grouped again by the arrival rule (:func:`regroup`), which is what the stream
        worker does with the messages it keeps: both routes store the same turns.
        """
        if not self.rule(tenant_id).active:
            return list(turns)
        flat = [m for t in turns for m in t.messages]
        kept, dropped = self.messages(tenant_id, flat)
        if dropped:
            return regroup(kept, turns[0].index if turns else 1)
        it = iter(kept)
        return [t.model_copy(update={"messages": [next(it) for _ in t.messages]})
                for t in turns]

    def indexed_turns(self, tenant_id: str, turns: Sequence[Turn]) -> list[Turn]:
        """Turns upserted by index (``Memory.append``): each keeps its index; a dropped
        message leaves its turn, and a turn left empty is not written."""
        if not self.rule(tenant_id).active:
            return list(turns)
        out = []
        for t in turns:
            kept, _ = self.messages(tenant_id, t.messages)
            if kept:
                out.append(t.model_copy(update={"messages": kept}))
        return out

    def event(self, e: TurnEvent, *, max_chars: int = MAX_CONTENT_CHARS) -> TurnEvent | None:
        """A wire event redacted like :meth:`message` (None: the tenant drops it)."""
        done = self._apply(e.tenant_id, e.content, max_chars)
        if done is None:
            return None
        text, kinds = done
        if not kinds:
            return e
        marker = sorted(set(e.redacted or ()) | kinds)
        return e.model_copy(update={"content": text, "redacted": marker})
