"""The memory service: one object that writes conversations and reads them back.

:class:`Memory` ties a layer builder, an encoder and the three stores
together, and implements both roles of :mod:`memstrata.roles`: the CLI, the
stream worker, the Ray workers and the gRPC service all go through it, so
every entry point writes and reads the same way.

Writing has one path. :meth:`Memory.append` stores turns (upsert by index),
re-plans the session's windows and rebuilds and re-embeds only the windows
whose span or content changed; records are upserted by deterministic id, never
deleted first, so readers never lose a session while it grows. Batch
:meth:`Memory.ingest` is the same path over whole sessions, so both give the
same records. A caller that already holds more of a session (a stream worker
behind its topic) may ask :meth:`Memory.append_batch` to hold the session's
incomplete last window instead of indexing it provisionally now.

The class is a facade over small rooms, one module each: :mod:`.core` (the
state and store primitives), :mod:`.fingerprint` (the data dir's identity),
:mod:`.opening` (composition and the data dir's lock), :mod:`.batch` (prepare
and commit), :mod:`.write` (the write entry points), :mod:`.delete` and
:mod:`.read`.
"""

from __future__ import annotations

from memstrata.fingerprint import IndexMismatch
from memstrata.layers.lazy import SessionNotFound
from memstrata.memory.batch import FALLBACK_DIGEST as FALLBACK_DIGEST
from memstrata.memory.batch import HELD_DIGEST as HELD_DIGEST
from memstrata.memory.core import ReadOnlyMemory
from memstrata.memory.core import layer_writer as layer_writer
from memstrata.memory.delete import MemoryDeletes
from memstrata.memory.fingerprint import _FINGERPRINT as _FINGERPRINT
from memstrata.memory.fingerprint import _META_SCOPE as _META_SCOPE
from memstrata.memory.fingerprint import _META_SESSION as _META_SESSION
from memstrata.memory.fingerprint import embedder_id as embedder_id
from memstrata.memory.opening import MemoryOpening
from memstrata.memory.read import MemoryReads
from memstrata.memory.write import MemoryWrites
from memstrata.roles import IngestReport

__all__ = ["IndexMismatch", "IngestReport", "Memory", "ReadOnlyMemory", "SessionNotFound"]


class Memory(MemoryOpening, MemoryWrites, MemoryDeletes, MemoryReads):
    """Write, search and read one deployment's memory (a MemoryReader and a MemoryWriter)."""
