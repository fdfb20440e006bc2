"""Direct route: an IngestBatch racing DeleteUser lands wholly before or after each delete.

(The Kafka route, where the stream worker stores a batch in pieces, is
tests/e2e/test_serve_stream.py.)
"""

from __future__ import annotations

from tests.integration.query_service.conftest import Service
from tests.support.atomic_batches import broken, race


def test_direct_batches_are_atomic_with_respect_to_deletes(service: Service):
    outcome, present = race(service.address, service.keys.acme, "atom-direct", batches=10)
    assert not outcome.errors, outcome.errors[:5]
    assert len(outcome.acked) == 11 and outcome.deletes > 0
    assert not broken(present), f"batches split by a delete: {broken(present)}"
    assert present[10] == 6  # the batch after the last delete is whole
