"""What an acknowledged Ingest promises, as the reply's ``durability`` says.

``STORED``: the messages are in the stores (written and flushed) and survive a
crash of any process. ``BROKER``: a Kafka broker acknowledged them at
``acks=all``; they last as long as the topic does (a replicated topic survives
a broker crash; a memory-only broker does not). A reply from a service older
than the field says ``UNSPECIFIED``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

__all__ = ["Durability"]


class Durability(StrEnum):
    STORED = "stored"
    BROKER = "broker"
    UNSPECIFIED = "unspecified"

    @classmethod
    def of(cls, reply: Any) -> "Durability":
        """The guarantee an ``IngestReply`` (what ``client.ingest`` returns) gives."""
        from memstrata.rpc import memory_pb2 as pb

        return {pb.DURABILITY_STORED: cls.STORED,
                pb.DURABILITY_BROKER: cls.BROKER}.get(reply.durability, cls.UNSPECIFIED)
