"""What the embedded broker (tansu, memory storage) keeps, and what releases it.

Issue 31 (3): broker RSS grew with every ingested message and deleted text stayed
readable in the turns topic. This measures, on the guarded embedded broker:

- tansu's RSS before and after N turn-sized messages (one record per produce
  request, as Ingest sends them, or batched as ``memstrata produce`` does);
- whether DeleteRecords (Kafka's "trim below an offset") works: the low-water mark
  and the records still readable after it;
- whether a topic created with ``retention.ms``/``retention.bytes`` drops anything;
- the RSS after the topic is deleted (the only release the measurements found).

``--delete-topic`` measures that release alone, over a few generations: each cycle
creates a topic, fills it, deletes it and reads the RSS again a second later, so it
shows whether DeleteTopics gives the memory back and whether the next generation
reuses it (the peak stays flat) or adds to it (ADR 0006).

Usage: ``python -m bench.broker_memory [--messages 20000] [--mode single|batched]
[--delete-topic [--cycles 3]]``; prints JSON and writes ``bench/out/broker_memory.json``
(``broker_memory_delete.json`` with ``--delete-topic``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from memstrata.kafka import clients
from streams.broker import GuardedBroker

OUT = Path(__file__).resolve().parent / "out" / "broker_memory.json"
OUT_DELETE = OUT.with_name("broker_memory_delete.json")
#: Bounds that keep a run to a couple of minutes on a shared 2-core machine.
MAX_MESSAGES, MAX_CYCLES = 200_000, 10
TEXT = ("We moved to Porto in March; the flat looks over the river and the light in the "
        "evening is wonderful. My cat Humbert sleeps on the balcony. ")  # ~150 bytes


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _turn(i: int) -> bytes:
    return json.dumps({"tenant_id": "acme", "user_id": f"u{i % 50}", "session_id": f"s{i % 500}",
                       "message_id": f"m{i}", "role": "user", "content": f"{TEXT} #{i}"}).encode()


async def _produce(b: GuardedBroker, topic: str, n: int, mode: str) -> float:
    p = clients.producer(b.client_settings(), brokers=b.address, acks="all")
    await p.start()
    t0 = time.monotonic()
    try:
        if mode == "single":  # one request per record: what Ingest's acknowledgement needs
            for i in range(n):
                await p.send_and_wait(topic, _turn(i), key=f"acme/u{i % 50}".encode())
        else:
            for start in range(0, n, 500):
                futs = [await p.send(topic, _turn(i), key=f"acme/u{i % 50}".encode())
                        for i in range(start, min(n, start + 500))]
                await asyncio.gather(*futs)
    finally:
        await p.stop()
    return time.monotonic() - t0


async def _readable(b: GuardedBroker, topic: str, needle: bytes) -> dict[str, Any]:
    from aiokafka import TopicPartition

    c = clients.consumer(b.client_settings(), brokers=b.address, auto_offset_reset="earliest")
    await c.start()
    try:
        tps = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic) or ())]
        if not tps:
            await c.topics()
            tps = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic) or ())]
        c.assign(tps)
        low = await c.beginning_offsets(tps)
        await c.seek_to_beginning(*tps)
        n = hits = 0
        while True:
            got = await c.getmany(timeout_ms=1500, max_records=5000)
            if not got:
                break
            for records in got.values():
                n += len(records)
                hits += sum(needle in (r.value or b"") for r in records)
        return {"low_water": sum(low.values()), "readable": n, "with_needle": hits}
    finally:
        await c.stop()


async def _delete_records(b: GuardedBroker, topic: str, before: int) -> str:
    from aiokafka import TopicPartition
    from aiokafka.admin import RecordsToDelete

    a = clients.admin(b.client_settings(), brokers=b.address, request_timeout_s=10.0)
    await a.start()
    try:
        out = await a.delete_records({TopicPartition(topic, 0): RecordsToDelete(before)},
                                     timeout_ms=10_000)
        return f"answered {out}"
    except Exception as exc:  # noqa: BLE001 - what the broker does is the measurement
        return f"{type(exc).__name__}: {exc}"
    finally:
        await a.close()


async def _admin(b: GuardedBroker, create: list[Any] | None = None,
                 delete: list[str] | None = None) -> None:
    a = clients.admin(b.client_settings(), brokers=b.address)
    await a.start()
    try:
        if create:
            await a.create_topics(create)
        if delete:
            await a.delete_topics(delete)
    finally:
        await a.close()


async def measure(messages: int, mode: str) -> dict[str, Any]:
    from aiokafka.admin import NewTopic

    out: dict[str, Any] = {"messages": messages, "mode": mode}
    with TemporaryDirectory() as tmp, GuardedBroker(log_dir=Path(tmp)) as b:
        assert isinstance(b, GuardedBroker) and b.tansu_pid is not None
        pid = b.tansu_pid
        out["isolated"] = b.isolated
        await _admin(b, create=[NewTopic("turns", 1, 1), NewTopic(
            "kept", 1, 1, topic_configs={"retention.ms": "1000", "retention.bytes": "10000",
                                          "segment.ms": "1000", "cleanup.policy": "delete"})])
        time.sleep(0.5)
        out["rss_kib_empty"] = rss_kib(pid)
        out["produce_s"] = round(await _produce(b, "turns", messages, mode), 2)
        out["rss_kib_after"] = rss_kib(pid)
        out["bytes_per_message"] = round(
            (out["rss_kib_after"] - out["rss_kib_empty"]) * 1024 / messages)
        # DeleteRecords below the middle: a retention driven by committed offsets needs it.
        out["delete_records"] = await _delete_records(b, "turns", messages // 2)
        out["after_delete_records"] = await _readable(b, "turns", b"#0\"")
        out["rss_kib_after_delete_records"] = rss_kib(pid)
        # retention.ms/bytes at creation: does the broker drop anything by time or size?
        await _produce(b, "kept", 2000, "batched")
        time.sleep(3)
        out["retention_topic_after_3s"] = await _readable(b, "kept", b"#0\"")
        # Deleting the topics: the one release of memory found.
        await _admin(b, delete=["turns", "kept"])
        time.sleep(1)
        out["rss_kib_after_delete_topic"] = rss_kib(pid)
    return out


async def measure_delete(messages: int, mode: str, cycles: int) -> dict[str, Any]:
    """Fill a topic generation, delete it, repeat: RSS before and after each delete."""
    from aiokafka.admin import NewTopic

    out: dict[str, Any] = {"messages": messages, "mode": mode, "cycles": []}
    with TemporaryDirectory() as tmp, GuardedBroker(log_dir=Path(tmp)) as b:
        assert isinstance(b, GuardedBroker) and b.tansu_pid is not None
        pid = b.tansu_pid
        out["isolated"] = b.isolated
        await _admin(b, create=[NewTopic("warm-up", 1, 1)])
        await _produce(b, "warm-up", 100, "batched")  # the clients' first-use allocations
        time.sleep(0.5)
        out["rss_kib_empty"] = rss_kib(pid)
        for gen in range(cycles):
            topic = f"turns.g{gen}"
            await _admin(b, create=[NewTopic(topic, 1, 1)])
            secs = await _produce(b, topic, messages, mode)
            full = rss_kib(pid)
            await _admin(b, delete=[topic])
            time.sleep(1.0)
            after = rss_kib(pid)
            out["cycles"].append({
                "topic": topic, "produce_s": round(secs, 2), "rss_kib_full": full,
                "rss_kib_after_delete": after,
                "released_kib": full - after,
                "bytes_per_message": round((full - out["rss_kib_empty"]) * 1024 / messages)})
        out.update(delete_verdict(out["rss_kib_empty"], out["cycles"]))
    return out


def delete_verdict(empty_kib: int, cycles: list[dict[str, Any]]) -> dict[str, bool]:
    """``released``: every delete gave back at least 80% of what the first generation
    took; ``reused``: the last generation's peak is within 10% of that growth above
    the first's, so generations do not add up."""
    if not cycles:
        raise ValueError("cycles must hold at least one measured generation")
    first, last = cycles[0], cycles[-1]
    grown = first["rss_kib_full"] - empty_kib
    return {"released": grown > 0 and all(c["released_kib"] >= 0.8 * grown for c in cycles),
            "reused": last["rss_kib_full"] <= first["rss_kib_full"] + 0.1 * grown}


def _bounded(value: int, name: str, low: int, high: int) -> int:
    if not low <= value <= high:
        raise SystemExit(f"{name} must be between {low} and {high} (got {value})")
    return value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--mode", choices=("single", "batched"), default="batched")
    ap.add_argument("--delete-topic", action="store_true",
                    help="only measure what DeleteTopics releases, over --cycles generations")
    ap.add_argument("--cycles", type=int, default=3)
    args = ap.parse_args()
    messages = _bounded(args.messages, "--messages", 1, MAX_MESSAGES)
    if args.delete_topic:
        cycles = _bounded(args.cycles, "--cycles", 1, MAX_CYCLES)
        result = asyncio.run(measure_delete(messages, args.mode, cycles))
        out = OUT_DELETE
    else:
        result = asyncio.run(measure(messages, args.mode))
        out = OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
