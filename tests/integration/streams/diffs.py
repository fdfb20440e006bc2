"""Where two store snapshots differ, as short ``path: expected != got`` lines.

pytest's own diff of two large nested dicts is cut before the differing
leaf when a run fails in CI; these lines name the leaf.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["differences"]


def differences(expected: Any, got: Any, path: str = "", limit: int = 20) -> list[str]:
    """Up to ``limit`` leaves where ``got`` differs from ``expected``."""
    out: list[str] = []
    _walk(expected, got, path or "$", out, limit)
    return out


def _walk(a: Any, b: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in b:
                out.append(f"{path}.{key}: missing from got")
            elif key not in a:
                out.append(f"{path}.{key}: not expected, got {_short(b[key])}")
            else:
                _walk(a[key], b[key], f"{path}.{key}", out, limit)
            if len(out) >= limit:
                return
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items expected, got {len(b)}: {_short(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", out, limit)
        return
    out.append(f"{path}: {_short(a)} != {_short(b)}")


def _short(value: Any, width: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width] + "..."


def in_topic(records: Any, differing: list[str]) -> list[str]:
    """For each session a difference names, the message ids the turns topic holds for it
    (partition@offset:id), to tell a record the broker lost from one the worker lost."""
    wanted: set[tuple[str, str, str]] = set()
    for line in differing:
        m = re.match(r"\$\.([^/.]+)/([^.]+)\.sessions\.([^.\[]+)", line)
        if m:
            wanted.add((m[1], m[2], m[3]))
    out = []
    for tenant, user, sid in sorted(wanted):
        ids = []
        for r in records:
            try:
                ev = json.loads(r.value)
            except (TypeError, ValueError):
                continue
            if (ev.get("tenant_id"), ev.get("user_id"), ev.get("session_id")) == (tenant, user, sid):
                ids.append(f"{r.partition}@{r.offset}:{ev.get('message_id')}")
        out.append(f"in the turns topic for {tenant}/{user}/{sid}: {ids}")
    return out
