"""Profiles as Markdown, as ``memstrata profile`` prints them.

Every bullet ends with its sources: ``session/Tn`` (the turn) and the raw
message ids in brackets when the source gave them. ``@key`` references inside
values ("recommended by @assistant") are shown with the entity's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memstrata.profiles.model import SECTIONS, Source
from memstrata.profiles.route import LABELS, single_valued

#: Sources shown per bullet before "+N more".
MAX_SOURCES = 6
_TITLES = {"identity": "Identity", "attributes": "Attributes", "preferences": "Preferences",
           "events": "Events", "plans": "Plans"}


def named(text: str, names: Mapping[str, str]) -> str:
    """``@key`` and ``... of @key`` with the entity's name in place of the key."""
    if text.startswith("@"):
        return _name(text[1:], names)
    head, sep, key = text.rpartition(" of @")
    if sep:
        return f"{head} of {_name(key, names)}"
    return text


def _name(key: str, names: Mapping[str, str]) -> str:
    if key in names:
        return names[key]
    if key in ("user", "assistant"):
        return f"the {key}"
    return key.split(":", 1)[-1]


def sources(items: Sequence[dict[str, Any]]) -> str:
    """ "[s1/T1 (m1); s2/T3]" with at most :data:`MAX_SOURCES` shown."""
    parts = []
    for item in items[:MAX_SOURCES]:
        src = Source.from_json(item)
        ids = f" ({', '.join(src.message_ids)})" if src.message_ids else ""
        parts.append(f"{src.session_id}/T{src.turn}{ids}")
    more = len(items) - MAX_SOURCES
    if more > 0:
        parts.append(f"+{more} more")
    return f"[{'; '.join(parts)}]" if parts else ""


def bullet_text(b: dict[str, Any], names: Mapping[str, str]) -> str:
    """One bullet's words, without its sources."""
    slot, value = b["slot"], named(b["value"], names)
    if slot in ("relation", "aliases", "species"):
        label = {"aliases": "also called"}.get(slot, slot)
        return f"{label}: {value}"
    since = b.get("since")
    if slot in ("event", "plan"):
        return f"{since}: {value}" if since else value
    if slot.startswith(("pref:", "eats:")):
        text = value
    elif slot.startswith("favourite:"):
        text = f"favourite {slot.split(':', 1)[1]}: {value}"
    else:
        text = f"{LABELS.get(slot, slot)}: {value}"
    if not since:
        return text
    return f"{text} (since {since})" if single_valued(slot) else f"{text} ({since})"


def render_profile(view: dict[str, Any], names: Mapping[str, str]) -> str:
    """One entity's profile: a heading, then each section's bullets with their sources."""
    kind = view.get("kind") or "unknown kind"
    lines = [f"# {named(view['name'], names)} ({kind})", f"id: `{view['id']}`"]
    for section in SECTIONS:
        bullets = view.get("sections", {}).get(section, [])
        if not bullets:
            continue
        lines += ["", f"## {_TITLES[section]}"]
        for b in bullets:
            lines.append(f"- {bullet_text(b, names)} {sources(b.get('sources', []))}".rstrip())
            for old in b.get("history", []):
                span = f"{old.get('since') or '?'} -> {old.get('until') or '?'}"
                lines.append(f"  - before: {named(old['value'], names)} ({span}) "
                             f"{sources(old.get('sources', []))}".rstrip())
    return "\n".join(lines) + "\n"


def render_entities(views: Sequence[dict[str, Any]], names: Mapping[str, str]) -> str:
    """Every entity with its kind, relation to the user and aliases (a Markdown table)."""
    lines = ["| entity | kind | relation | aliases |", "| --- | --- | --- | --- |"]
    for v in views:
        relation = ", ".join(named(r, names) for r in v.get("relation", [])) or "-"
        aliases = ", ".join(a for a in v.get("aliases", []) if a != v["name"]) or "-"
        cells = [named(v["name"], names), v.get("kind") or "unknown", relation, aliases]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"
