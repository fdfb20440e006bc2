"""IngestBatch against DeleteUser, concurrently, over real gRPC: is every acked batch whole?

Each batch writes two messages into each of three sessions of its own (so, on
the Kafka route, its records spread over partitions and stream batches). A
second thread deletes the user again and again. Afterwards every batch that
was acknowledged must be wholly present (all three sessions with both
messages) or wholly absent: a delete may fall before or after a batch, never
inside it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc

SESSIONS_PER_BATCH = 3


def batch(user: str, k: int) -> pb.IngestBatchRequest:
    events = []
    for j in range(SESSIONS_PER_BATCH):
        sid = f"b{k}-s{j}"
        events += [pb.TurnEvent(user_id=user, session_id=sid, message_id=f"{sid}-u", role="user",
                                content=f"Batch {k} session {j}: I repainted the fence blue."),
                   pb.TurnEvent(user_id=user, session_id=sid, message_id=f"{sid}-a",
                                role="assistant", content=f"Blue fence noted ({k}/{j}).")]
    return pb.IngestBatchRequest(events=events)


@dataclass
class Outcome:
    acked: list[int] = field(default_factory=list)
    deletes: int = 0
    removed_turns: int = 0
    errors: list[str] = field(default_factory=list)


def race(address: str, key: str, user: str, batches: int,
         settle: Callable[[], None] = lambda: None) -> tuple[Outcome, dict[int, int]]:
    """Run the race, then one last batch; returns the outcome and, per acked batch, how many
    of its messages remain.

    ``settle`` runs after the race and before reading back (the Kafka route waits for
    the worker to store everything published).
    """
    meta = (("x-api-key", key),)
    out = Outcome()
    done = threading.Event()
    channel = grpc.insecure_channel(address)
    stub = pb_grpc.MemoryServiceStub(channel)

    def writer() -> None:
        try:
            for k in range(batches):
                try:
                    stub.IngestBatch(batch(user, k), metadata=meta, timeout=60)
                    out.acked.append(k)
                except grpc.RpcError as exc:
                    out.errors.append(f"IngestBatch {k}: {exc.code().name} {exc.details()}")
                time.sleep(0.01)
        finally:
            done.set()

    def deleter() -> None:
        while not done.is_set():
            try:
                reply = stub.DeleteUser(pb.UserRequest(user_id=user), metadata=meta, timeout=60)
                out.deletes += 1
                out.removed_turns += sum(c.removed for c in reply.removed if c.store == "docs")
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.NOT_FOUND:  # nothing stored yet
                    out.errors.append(f"DeleteUser: {exc.code().name} {exc.details()}")
            time.sleep(0.02)

    threads = [threading.Thread(target=writer), threading.Thread(target=deleter)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        # One batch after the last delete, so at least one must be found whole.
        stub.IngestBatch(batch(user, batches), metadata=meta, timeout=60)
        out.acked.append(batches)
        settle()

        def read_back() -> dict[int, int]:
            present: dict[int, int] = {k: 0 for k in out.acked}
            try:
                listed = stub.ListSessions(pb.ListSessionsRequest(user_id=user), metadata=meta)
                sessions = [s.session_id for s in listed.sessions]
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                sessions = []
            for sid in sessions:
                k = int(sid.split("-")[0][1:])
                raw = stub.ReadRaw(pb.ReadRawRequest(user_id=user, session_id=sid),
                                   metadata=meta)
                present[k] = present.get(k, 0) + sum(len(t.messages) for t in raw.turns)
            return present

        # Settled: the last batch is whole and nothing changes for a second (a worker's
        # committed offsets can run ahead of its stores, so they alone do not say it).
        present, deadline = read_back(), time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(1.0)
            again = read_back()
            if again == present and present.get(batches) == 2 * SESSIONS_PER_BATCH:
                break
            present = again
        return out, present
    finally:
        channel.close()


def broken(present: dict[int, int]) -> dict[int, int]:
    """Batches neither whole (every message) nor gone (none)."""
    whole = 2 * SESSIONS_PER_BATCH
    return {k: n for k, n in present.items() if n not in (0, whole)}
