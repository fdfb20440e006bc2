"""Deterministic identifiers.

Every record memstrata writes is keyed by a hash of where it came from
(tenant, user, session, layer, turn range). Replaying the same input therefore
overwrites instead of duplicating, which is what lets the stream processors run
at-least-once without creating copies.
"""

from __future__ import annotations

import hashlib
import uuid

_NAMESPACE = uuid.UUID("6f1c3a52-8d0e-4b7a-9a57-3c2f4e1d9b10")
_SEP = "\x1f"  # unit separator: cannot appear in validated ids


def record_id(
    tenant_id: str,
    user_id: str,
    session_id: str,
    layer: str,
    first_turn: int = 0,
    last_turn: int = 0,
) -> str:
    """A UUID (as text) that depends only on the record's origin.

    UUIDs are accepted as point ids by every vector store we support, so the
    same value works in Qdrant, OpenSearch and SQLite.
    """
    key = _SEP.join((tenant_id, user_id, session_id, layer, str(first_turn), str(last_turn)))
    return str(uuid.uuid5(_NAMESPACE, key))


def content_hash(*parts: str) -> str:
    """Short stable digest of some text, for cache keys and change detection."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(_SEP.encode())
    return h.hexdigest()[:16]
