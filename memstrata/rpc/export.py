"""``ExportUser``'s chunks: a session split to fit a message, and put back together.

The service turns each :class:`~memstrata.lifecycle.records.ExportedSession`
into one or more :class:`ExportChunk` messages (at most about ``max_bytes``
of turns and layer records each, a single larger turn alone in its chunk);
the client reassembles them, so both sides go through this one module and a
session read over gRPC equals the one a local export reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from memstrata.lifecycle.records import ExportedSession
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc.convert import meta_from_wire, meta_to_wire, turn_to_wire, turns_from_wire

__all__ = ["CHUNK_BYTES", "chunks_of", "sessions_from_chunks"]

#: About this many bytes of turns and layer records per chunk (well under the 4 MiB
#: a gRPC channel takes by default).
CHUNK_BYTES = 1 << 20


def chunks_of(session: ExportedSession, max_bytes: int = CHUNK_BYTES) -> Iterator[pb.ExportChunk]:
    """The session as chunks in order; the last one has ``last`` set."""
    info = meta_to_wire(session.meta)
    chunk = pb.ExportChunk(session=info)
    size = 0
    items: list[tuple[str, Any]] = [("turn", turn_to_wire(t)) for t in session.turns]
    items += [("layer", json.dumps(r, separators=(",", ":"))) for r in session.layers]
    for kind, item in items:
        n = item.ByteSize() if kind == "turn" else len(item.encode())
        if size and size + n > max_bytes:
            yield chunk
            chunk, size = pb.ExportChunk(session=info), 0
        if kind == "turn":
            chunk.turns.append(item)
        else:
            chunk.layers_json.append(item)
        size += n
    chunk.last = True
    yield chunk


def sessions_from_chunks(chunks: Iterable[pb.ExportChunk]) -> Iterator[ExportedSession]:
    """Sessions put back together from the stream, in the order they come.

    A stream that ends inside a session (no ``last``) raises ``ValueError``: an
    export must never end with a session cut short and not say so.
    """
    current: ExportedSession | None = None
    for chunk in chunks:
        meta = meta_from_wire(chunk.session)
        if current is None:
            current = ExportedSession(meta=meta, turns=[])
        elif current.meta != meta:
            raise ValueError(f"export stream: session {current.meta.session_id!r} ended "
                             f"without its last chunk")
        current.turns += turns_from_wire(chunk.turns)
        current.layers += [json.loads(text) for text in chunk.layers_json]
        if chunk.last:
            yield current
            current = None
    if current is not None:
        raise ValueError(f"export stream ended inside session {current.meta.session_id!r}")
