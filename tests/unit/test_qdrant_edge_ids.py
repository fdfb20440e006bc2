"""Qdrant Edge point ids become text once per id, and the map stays bounded."""

from __future__ import annotations

import uuid

from memstrata.store.qdrant_edge import _IdText


def test_id_text_is_the_uuid_text_and_is_reused() -> None:
    ids = _IdText(limit=3)
    a = uuid.uuid5(uuid.NAMESPACE_URL, "a")
    first = ids.text(a)
    assert first == str(a)
    assert ids.text(uuid.UUID(str(a))) is first  # an equal id from another search: same text


def test_id_text_map_starts_again_past_its_limit() -> None:
    ids = _IdText(limit=3)
    many = [uuid.uuid5(uuid.NAMESPACE_URL, str(i)) for i in range(7)]
    assert [ids.text(u) for u in many] == [str(u) for u in many]
    assert len(ids._texts) <= 3


def test_integer_ids_pass_through() -> None:
    assert _IdText().text(42) == "42"
