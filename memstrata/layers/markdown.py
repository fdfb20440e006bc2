"""Markdown views of each layer, as the controller and ``memstrata show`` print them.

The layouts mirror APDMem's examples: a session header with its date, then
per-turn blocks (L0, L2, L3) or a flat bullet list (L1). Fact bullets end with
the turns they came from, so any line can be traced to raw text.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.model import KeyFacts, L0Unit, SessionMeta, Turn, TurnNotes


def header(meta: SessionMeta, layer: str) -> str:
    date = meta.session_date.strftime("%Y/%m/%d") if meta.session_date else "unknown"
    return f"## {layer} · Session {meta.session_id} (date={date})"


def render_l0(meta: SessionMeta, units: Sequence[L0Unit]) -> str:
    lines = [header(meta, "L0 summaries")]
    for u in sorted(units, key=lambda u: u.turn_index):
        lines += [
            f"Turn {u.turn_index}:",
            f"- Summary: {u.summary}",
            f"- Keywords: {', '.join(u.keywords)}",
            f"- Tags: {', '.join(u.tags)}",
        ]
    return "\n".join(lines)


def render_l1(facts: KeyFacts) -> str:
    lines = [header(facts.meta, "L1 key facts")]
    for f in facts.facts:
        src = f" (turn {', '.join(map(str, f.turn_indices))})" if f.turn_indices else ""
        lines.append(f"- {f.text}{src}")
    return "\n".join(lines)


def render_l2(notes: TurnNotes) -> str:
    lines = [header(notes.meta, "L2 turn notes")]
    for n in notes.notes:
        lines.append(f"Turn {n.turn_index}:")
        lines += [f"- {b}" for b in n.bullets]
    return "\n".join(lines)


def render_l3(meta: SessionMeta, turns: Sequence[Turn]) -> str:
    lines = [header(meta, "L3 raw turns")]
    for t in turns:
        lines.append(f"### Turn {t.index}")
        for m in t.messages:
            src = f" [{m.source_id}]" if m.source_id else ""
            lines.append(f"{m.who}{src}: {m.content}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
