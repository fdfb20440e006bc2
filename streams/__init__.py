"""Streaming ingestion on Kafka: chat events in, searchable memory out.

A Faust worker reads ``memstrata.turns.v1`` and ``memstrata.control.v1``,
writes through :class:`memstrata.roles.MemoryWriter` (the same path as batch
ingest) and reports what it indexed on ``memstrata.l0.v1``; anything it cannot
accept goes to ``memstrata.dlq.v1`` with its reason. See :mod:`streams.events`
for the wire contracts and :mod:`streams.topics` for the topic names.
"""

__all__: list[str] = []
