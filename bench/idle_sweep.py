"""The idle sweep over many sessions: its time, the event loop's longest stall, re-closes.

```bash
.venv/bin/python -m bench.idle_sweep [--sessions 50000] [--close-ms 0]
```

The worker's session table (a dict standing in for the Faust table, counting
its writes: each is a changelog record) is filled with ``--sessions`` open
sessions, and :meth:`streams.processor.Processor.close_idle` runs three times
while a 1 ms ticker task measures the longest gap of the event loop (the loop
that also serves gRPC in ``memstrata serve``):

1. nothing due (every session had an event half an idle period ago);
2. everything due (one idle period later): each session is closed;
3. the next idle period, with no traffic in between: nothing should be closed.

The writer is a TEST DOUBLE that closes as Memory does when the last window is
unchanged (a report with no units), taking ``--close-ms`` per close on the
writer thread. Beside the loop runs a gRPC server (grpcio's asyncio health service, as in
``memstrata serve``) and another thread calls it every 5 ms: its latency is
reported while the loop is quiet and during each sweep (the p99 the issue asks
for). Results go to ``bench/out/idle_sweep.json``. To measure the code
before a change, run this file from a checkout of that code (it falls back to
the old ``tenant/user/session`` keys there).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

from memstrata.limits import TurnLimits
from memstrata.model import Message, Scope, SessionMeta
from memstrata.roles import AppendReport, DeleteReceipt
from streams.processor import Processor
from streams.settings import StreamSettings

OUT = Path(__file__).resolve().parent / "out" / "idle_sweep.json"
IDLE_S = 300.0

try:
    from streams.sessions import session_key
except ImportError:  # the code before keys were escaped
    def session_key(scope: Scope, session_id: str) -> str:
        return f"{scope.tenant_id}/{scope.user_id}/{session_id}"


class IdleCloseWriterDouble:
    """TEST DOUBLE of a MemoryWriter: closes cost ``close_s`` each and rewrite nothing."""

    def __init__(self, close_s: float) -> None:
        self.close_s = close_s
        self.closes = 0

    def close_session(self, scope: Scope, session_id: str) -> AppendReport:
        self.closes += 1
        if self.close_s:
            time.sleep(self.close_s)
        return AppendReport(scope=scope, session_id=session_id)

    def flush(self) -> None:
        pass

    def append_batch(self, items: list[tuple[SessionMeta, list[Message]]], *,
                     hold: Any = ()) -> list[AppendReport]:
        return [AppendReport(scope=m.scope, session_id=m.session_id) for m, _ in items]

    def delete(self, scope: Scope, session_id: str | None = None) -> DeleteReceipt:
        return DeleteReceipt(scope=scope, session_id=session_id)


class CountingTable(dict[str, Any]):
    """The session table as a dict; ``writes`` counts changelog records (sets and deletes)."""

    writes = 0

    def __setitem__(self, key: str, value: Any) -> None:
        self.writes += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.writes += 1
        super().__delitem__(key)

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        if key in self:
            self.writes += 1
        return super().pop(key, *default)


async def _timed(step: Any) -> dict[str, float]:
    """Run ``step()`` beside a 1 ms ticker: seconds taken, the longest loop stall (wall
    time), and the longest main-thread CPU time between two ticks (the part of a stall
    that is the loop's own work, not other processes or the writer thread)."""
    worst = worst_cpu = 0.0
    done = False

    async def ticker() -> None:
        nonlocal worst, worst_cpu
        while not done:
            t, c = time.perf_counter(), time.thread_time()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - t - 0.001)
            worst_cpu = max(worst_cpu, time.thread_time() - c)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    worst = worst_cpu = 0.0
    started = time.perf_counter()
    await step()
    took = time.perf_counter() - started
    done = True
    await task
    return {"seconds": round(took, 3), "max_stall_ms": round(worst * 1000, 1),
            "max_stall_cpu_ms": round(worst_cpu * 1000, 1)}


class GrpcProbe:
    """A gRPC server on the bench's loop and a caller on its own thread, calling the
    health service every ``gap_s``: each call's start time and latency are kept."""

    def __init__(self, gap_s: float = 0.005) -> None:
        self.gap_s = gap_s
        self.calls: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: Any = None

    async def start(self) -> None:
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc
        from grpc_health.v1._async import HealthServicer

        self._server = grpc.aio.server()
        health = HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health, self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        await self._server.start()
        await health.set("", health_pb2.HealthCheckResponse.SERVING)

        def call_loop() -> None:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                request = health_pb2.HealthCheckRequest()
                stub.Check(request, timeout=10)  # connected before anything is measured
                while not self._stop.is_set():
                    t = time.perf_counter()
                    stub.Check(request, timeout=60)
                    self.calls.append((t, time.perf_counter() - t))
                    self._stop.wait(self.gap_s)

        self._thread = threading.Thread(target=call_loop, name="grpc-probe", daemon=True)
        self._thread.start()
        await asyncio.sleep(0.2)

    def between(self, t0: float, t1: float) -> dict[str, float]:
        """p50/p99/max (ms) of the calls started in ``[t0, t1)``."""
        got = sorted(lat for t, lat in self.calls if t0 <= t < t1)
        if not got:
            return {"grpc_calls": 0}
        pick = lambda q: round(got[min(len(got) - 1, int(q * len(got)))] * 1000, 2)  # noqa: E731
        return {"grpc_calls": len(got), "grpc_p50_ms": pick(0.5), "grpc_p99_ms": pick(0.99),
                "grpc_max_ms": round(got[-1] * 1000, 2)}

    async def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 10)
        if self._server is not None:
            await self._server.stop(None)


def _line(name: str, got: dict[str, Any]) -> str:
    line = (f"{name:>17}: {got['seconds']:7.3f} s, longest loop stall "
            f"{got['max_stall_ms']:7.1f} ms ({got['max_stall_cpu_ms']:6.1f} ms of it loop CPU)")
    if "closes" in got:
        line += f", {got['closes']} closes, {got['table_writes']} table writes"
    if got.get("grpc_calls"):
        line += (f"; gRPC p50/p99/max {got['grpc_p50_ms']}/{got['grpc_p99_ms']}/"
                 f"{got['grpc_max_ms']} ms ({got['grpc_calls']} calls)")
    return line


async def bench(n: int, close_s: float) -> dict[str, Any]:
    writer = IdleCloseWriterDouble(close_s)
    table = CountingTable()
    start = time.time()
    for i in range(n):
        scope = Scope(tenant_id=f"t{i % 50}", user_id=f"u{i % 1000}")
        dict.__setitem__(table, session_key(scope, f"s{i}"), {
            "tenant_id": scope.tenant_id, "user_id": scope.user_id, "session_id": f"s{i}",
            "provisional": [1], "held": [], "partition": i % 4,
            "last": start - IDLE_S / 2 + i * 1e-5})  # one session after the other
    p = Processor(writer, StreamSettings(idle_s=IDLE_S), turns=TurnLimits(),  # type: ignore[arg-type]
                  sessions=table)
    out: dict[str, Any] = {"sessions": n, "close_ms": close_s * 1000}
    probe = GrpcProbe()
    await probe.start()
    t0 = time.perf_counter()
    await asyncio.sleep(3.0)
    quiet = {"seconds": 3.0, "max_stall_ms": 0.0, "max_stall_cpu_ms": 0.0,
             **probe.between(t0, time.perf_counter())}
    out["quiet"] = quiet
    print(_line("quiet loop", quiet), flush=True)
    refresh = getattr(p, "refresh_index", None)
    if refresh is not None:  # built once at start and after each rebalance
        out["index_rebuild"] = await _timed(refresh)
    for name, now in (("nothing_due", start), ("all_due", start + IDLE_S / 2 + 1),
                      ("next_idle_period", start + 1.5 * IDLE_S + 2)):
        closes, writes = writer.closes, table.writes

        async def sweep(at: float = now) -> None:
            await p.close_idle(now=at)

        t0 = time.perf_counter()
        got = await _timed(sweep)
        got.update(closes=writer.closes - closes, table_writes=table.writes - writes,
                   **probe.between(t0, time.perf_counter()))
        out[name] = got
        print(_line(name, got), flush=True)
    p.writer_thread.shutdown()
    await probe.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=50_000)
    ap.add_argument("--close-ms", type=float, default=0.0,
                    help="time one close takes on the writer thread (the double's)")
    args = ap.parse_args()
    if not 1 <= args.sessions <= 1_000_000:
        ap.error(f"--sessions must be 1..1000000, got {args.sessions}")
    if not 0 <= args.close_ms <= 100:
        ap.error(f"--close-ms must be 0..100, got {args.close_ms}")
    result = asyncio.run(bench(args.sessions, args.close_ms / 1000))
    if "index_rebuild" in result:
        print(_line("index rebuild", result["index_rebuild"]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
