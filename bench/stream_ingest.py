"""Streaming ingest through the broker against ``Memory.ingest`` directly, in one run.

1. Direct: ``Memory.ingest`` of the dataset into a fresh data dir (turns/s).
2. Kafka, as fast as possible: an embedded tansu broker, one stream worker
   process (``python -m streams worker``, extractive builder, embedded
   stores), the dataset produced as turn events (sessions closed at the end);
   turns/s from the first send until the consumer group has committed
   everything, i.e. the stores hold it all.
3. Kafka at 80% of the rate measured in 2, a fresh copy of the dataset under
   another tenant: freshness per turn = the time the worker published the
   turn's first L0 notice (after the flush: searchable) minus the send time of
   the turn's first message; p50 and p99.

4. Traffic shapes (``--copies``, default 4): the data that many times over,
   one tenant per copy, produced session by session, then round-robin by
   message (what a platform with many open sessions sends); turns per CPU
   second of each (worker + broker), and whether both stored the same turns.
   ``--rounds`` (default 2) repeats both shapes with fresh tenants, alternating
   which goes first, and compares the sums: the machine's speed drifts.
   ``--baseline`` runs them again through a worker on the old path
   (``MEMSTRATA_STREAM_HOLD_MAX_S=0``: a worker behind its topic still indexes
   every batch's open windows provisionally; the old batch limit, 256) and
   shows both side by side.

Targets: Kafka >= 70% of direct; freshness p99 < 5 s at 80% of the maximum rate;
interleaved >= 0.9 of sequential per CPU second. Results go to
``bench/out/stream_ingest.json`` and a plot (turns per CPU second by shape and
round, the freshness distribution) to ``bench/out/stream_ingest.png``.

    python -m bench.stream_ingest [DATASET] [--sessions N] [--copies 4] [--rounds 2]
                                  [--baseline] [--encoder NAME] [--profile DIR]

``--encoder`` sets ``MEMSTRATA_EMBED_BACKEND`` for every phase (direct and the
worker): run it once per encoder to compare them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import locomo_default, require_dataset
from bench._common import OUT_DIR, ROOT, console, cpu_seconds, load_average, print_table
from bench._common import pyplot_or_none, thread_cpu_seconds, verdict

DEFAULT_DATASET = locomo_default()  # LOCOMO_PATH
TARGET_RATIO = 0.70
TARGET_P99_S = 5.0
GROUP = "memstrata-bench"
#: The worker's batch limit before holding came (the baseline's).
OLD_BATCH_MAX = 256
#: The traffic shapes, in the order of a round (odd rounds reverse it).
SHAPES = ("sequential", "interleaved")


def _turns(sessions: list[Any]) -> int:
    return sum(len(s.turns) for s in sessions)


def _messages(sessions: list[Any]) -> int:
    return sum(len(t.messages) for s in sessions for t in s.turns)


def _retenant(sessions: list[Any], tenant: str) -> list[Any]:
    out = []
    for s in sessions:
        scope = s.scope.model_copy(update={"tenant_id": tenant})
        out.append(s.model_copy(update={"meta": s.meta.model_copy(update={"scope": scope})}))
    return out


def direct(sessions: list[Any], data_dir: Path) -> tuple[float, float]:
    """(turns per wall second, turns per CPU second) of Memory.ingest, encoder warmed first."""
    from memstrata.config import Settings
    from memstrata.memory import Memory

    with Memory.open(Settings(data_dir=data_dir)) as memory:
        memory.embedder.embed_documents(["warm up the encoder"] * 8)
        start, cpu = time.perf_counter(), cpu_seconds(os.getpid())
        report = memory.ingest(sessions)
        seconds, cpu = time.perf_counter() - start, cpu_seconds(os.getpid()) - cpu
    return report.turns / seconds, report.turns / cpu


def _ordered(sessions: list[Any], interleave: bool) -> list[tuple[Any, Any]]:
    """(session, event) pairs: session after session, or round-robin by message."""
    from streams.produce import session_events

    per = [[(s, ev) for ev in session_events(s)] for s in sessions]
    if not interleave:
        return [pair for events in per for pair in events]
    out = []
    for i in range(max((len(e) for e in per), default=0)):
        out += [events[i] for events in per if i < len(events)]
    return out


async def _produce(brokers: str, sessions: list[Any], rate: float | None,
                   interleave: bool = False) -> dict[tuple, float]:
    """Send the sessions; {(tenant, user, session, turn index): send time of its first message}."""
    from streams.events import utcnow
    from streams.produce import StreamProducer

    sent: dict[tuple, float] = {}
    start = time.monotonic()
    n = 0
    firsts = {(s.scope, s.session_id, m.source_id or ""): t.index
              for s in sessions for t in s.turns for m in t.messages[:1]}
    async with StreamProducer(brokers) as producer:
        for s, ev in _ordered(sessions, interleave):
            if rate:
                delay = start + n / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            ev = ev.model_copy(update={"ts": utcnow()})
            await producer.send_turn(ev)
            n += 1
            first = firsts.get((s.scope, s.session_id, ev.message_id))
            if first is not None:
                key = (s.scope.tenant_id, s.scope.user_id, s.session_id, first)
                sent[key] = ev.ts.timestamp()
        for s in sessions:
            await producer.control("close_session", s.scope, s.session_id)
    return sent


def _freshness(brokers: str, sent: dict[tuple, float]) -> list[float]:
    from streams import topics
    from streams.events import L0Event

    first_seen: dict[tuple, float] = {}
    for rec in _read_all(brokers, topics.L0):
        note = L0Event.model_validate_json(rec.value)
        for t in note.turns:
            key = (note.tenant_id, note.user_id, note.session_id, t)
            if key in sent and key not in first_seen:
                first_seen[key] = note.ts.timestamp()
    return [first_seen[k] - sent[k] for k in sent if k in first_seen]


def _read_all(brokers: str, topic: str) -> list[Any]:
    async def go() -> list[Any]:
        from aiokafka import TopicPartition

        from memstrata.config import defaults
        from memstrata.kafka import KafkaSettings, clients

        consumer = clients.consumer(defaults(KafkaSettings), brokers=brokers)
        await consumer.start()
        try:
            await consumer.topics()
            tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
            consumer.assign(tps)
            ends = await consumer.end_offsets(tps)
            starts = await consumer.beginning_offsets(tps)
            await consumer.seek_to_beginning(*tps)
            total = sum(ends.values()) - sum(starts.values())
            out: list[Any] = []
            while len(out) < total:
                for msgs in (await consumer.getmany(timeout_ms=500)).values():
                    out.extend(msgs)
            return out
        finally:
            await consumer.stop()
    return asyncio.run(go())


def _drain(brokers: str, timeout_s: float = 1800) -> None:
    from streams.worker import wait_drained

    if not asyncio.run(wait_drained(brokers, GROUP, timeout_s, poll_s=0.1)):
        raise SystemExit(f"the worker did not drain within {timeout_s:.0f}s")


def _spy(pid: int, out_dir: Path, shape: str) -> subprocess.Popen[bytes]:
    """py-spy sampling the worker (all threads, without pausing it) until SIGINT."""
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = shutil.which("py-spy", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                      f"{os.environ.get('PATH', '')}")
    if exe is None:
        raise SystemExit("--profile needs py-spy (pip install py-spy)")
    return subprocess.Popen([exe, "record", "--pid", str(pid), "--format", "raw",
                             "--rate", "50", "--nonblocking", "--output",
                             str(out_dir / f"{shape}.txt")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _same_turns(data_dir: Path, sessions: list[Any], copies: int, prefix: str,
                rounds: int = 1) -> bool:
    """Whether each interleaved copy stored exactly the turns of its sequential twin."""
    from memstrata.config import Settings
    from memstrata.memory import Memory

    with Memory.open(Settings(data_dir=data_dir), read_only=True) as memory:
        for c, r in ((c, r) for r in range(rounds) for c in range(copies)):
            tenants = _round_prefix(prefix, r)
            for a, b in zip(_retenant(sessions, f"{tenants}-sequential-{c}"),
                            _retenant(sessions, f"{tenants}-interleaved-{c}")):
                got_a = [t.model_dump() for t in memory.raw(a.scope, a.session_id)]
                got_b = [t.model_dump() for t in memory.raw(b.scope, b.session_id)]
                if got_a != got_b or len(got_a) != len(a.turns):
                    return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--sessions", type=int, default=0, help="Only the first N sessions.")
    parser.add_argument("--worker-log", type=Path, help="Keep the worker's log here.")
    parser.add_argument("--worker-log-level", default="warning",
                        choices=["debug", "info", "warning", "error"])
    parser.add_argument("--skip-freshness", action="store_true",
                        help="Only the throughput comparison.")
    parser.add_argument("--batch-max", type=int, default=None,
                        help="The worker's MEMSTRATA_STREAM_BATCH_MAX (default: its own).")
    parser.add_argument("--copies", type=int, default=4,
                        help="Traffic shapes: the data this many times over (one tenant per "
                             "copy), produced session by session, then round-robin by "
                             "message; 0 skips them.")
    parser.add_argument("--baseline", action="store_true",
                        help="Also run the traffic shapes through a second worker on the old "
                             "path (MEMSTRATA_STREAM_HOLD_MAX_S=0: every batch's open windows "
                             "indexed provisionally; MEMSTRATA_STREAM_BATCH_MAX=256) and "
                             "report both.")
    parser.add_argument("--rounds", type=int, default=2,
                        help="Run both traffic shapes this many times, alternating which goes "
                             "first, and compare their sums (the machine's speed drifts).")
    parser.add_argument("--profile", type=Path, default=None,
                        help="Record the worker with py-spy during each traffic shape into "
                             "DIR/<tenants>.txt (collapsed stacks; needs py-spy installed).")
    parser.add_argument("--encoder", default=None,
                        help="MEMSTRATA_EMBED_BACKEND for every phase (minilm, wordllama, "
                             "minilm-static); default: the setting's.")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds: must be at least 1, got {args.rounds}")
    args.dataset = require_dataset(args.dataset)
    if args.encoder:
        os.environ["MEMSTRATA_EMBED_BACKEND"] = args.encoder

    from memstrata.ingest.formats import read_file
    from streams.broker import EmbeddedBroker
    from streams.topics import specs

    sessions = read_file(args.dataset, tenant_id="bench-direct").sessions
    if args.sessions:
        sessions = sessions[: args.sessions]
    turns, messages = _turns(sessions), _messages(sessions)
    console.print(f"{args.dataset.name}: {len(sessions)} sessions, {turns} turns, "
                  f"{messages} messages; encoder "
                  f"{os.environ.get('MEMSTRATA_EMBED_BACKEND', 'minilm (default)')}; "
                  f"load average {load_average():.1f}")
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-") as tmp:
        base = Path(tmp)
        console.print("direct: Memory.ingest ...")
        direct_tps, direct_cpu = direct(sessions, base / "direct")
        console.print(f"  {direct_tps:.1f} turns/s, {direct_cpu:.1f} turns per CPU second")

        with EmbeddedBroker(log_dir=base / "broker") as broker:
            broker.create_topics(specs(4))
            env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMSTRATA_DATA_DIR": str(base / "kafka"),
                   "MEMSTRATA_KAFKA_BROKERS": broker.address, "MEMSTRATA_STREAM_APP_ID": GROUP,
                   "MEMSTRATA_STREAM_LOG_LEVEL": args.worker_log_level}
            if args.batch_max:
                env["MEMSTRATA_STREAM_BATCH_MAX"] = str(args.batch_max)
            log = (args.worker_log or base / "worker.log").open("wb")
            worker = _start_worker(env, log)
            try:
                _warm(broker.address, sessions, "bench-warm")
                console.print("kafka: as fast as the broker takes it ...")
                kafka_sessions = _retenant(sessions, "bench-kafka")
                pids = [worker.pid, broker.proc.pid]  # type: ignore[union-attr]
                start, cpu = time.monotonic(), sum(cpu_seconds(p) for p in pids)
                asyncio.run(_produce(broker.address, kafka_sessions, None))
                _drain(broker.address)
                seconds = time.monotonic() - start
                cpu = sum(cpu_seconds(p) for p in pids) - cpu
                kafka_tps, kafka_cpu = turns / seconds, turns / cpu
                max_rate = messages / seconds
                console.print(f"  {kafka_tps:.1f} turns/s ({max_rate:.1f} messages/s), "
                              f"{kafka_cpu:.1f} turns per CPU second (worker + broker)")

                hold = os.environ.get("MEMSTRATA_STREAM_HOLD_MAX_S", "default")
                batch = env.get("MEMSTRATA_STREAM_BATCH_MAX", "default")
                shapes, rounds = _shapes(broker.address, pids, sessions, args.copies, "bench",
                                         args.profile, f"hold_max_s {hold}, batch_max {batch}",
                                         args.rounds)

                rate = 0.8 * max_rate
                fresh, sent = [float("nan")], {}
                if not args.skip_freshness:
                    console.print(f"kafka at 80%: {rate:.1f} messages/s ...")
                    fresh_sessions = _retenant(sessions, "bench-fresh")
                    sent = asyncio.run(_produce(broker.address, fresh_sessions, rate))
                    _drain(broker.address)
                    fresh = _freshness(broker.address, sent)
            finally:
                _stop(worker)
            old: dict[str, tuple[float, float]] = {}
            old_rounds: list[dict[str, float]] = []
            if args.baseline and args.copies:
                console.print(f"baseline worker: MEMSTRATA_STREAM_HOLD_MAX_S=0 (every batch's "
                              f"open windows indexed provisionally), MEMSTRATA_STREAM_BATCH_MAX="
                              f"{OLD_BATCH_MAX} ...")
                worker = _start_worker({**env, "MEMSTRATA_DATA_DIR": str(base / "kafka-old"),
                                        "MEMSTRATA_STREAM_HOLD_MAX_S": "0",
                                        "MEMSTRATA_STREAM_BATCH_MAX": str(OLD_BATCH_MAX)},
                                       log)
                try:
                    _warm(broker.address, sessions, "bench-warm-old")
                    pids = [worker.pid, broker.proc.pid]  # type: ignore[union-attr]
                    old, old_rounds = _shapes(broker.address, pids, sessions, args.copies,
                                              "bench-old", args.profile, "baseline", args.rounds)
                finally:
                    _stop(worker)
            log.close()
        same = (_same_turns(base / "kafka", sessions, args.copies, "bench", args.rounds)
                if shapes else None)
        same_old = (_same_turns(base / "kafka-old", sessions, args.copies, "bench-old",
                                args.rounds) if old else None)
    p50, p99 = (float(np.percentile(fresh, q)) for q in (50, 99))
    ratio, cpu_ratio = kafka_tps / direct_tps, kafka_cpu / direct_cpu
    print_table("stream ingest (extractive builder, embedded stores, one worker)",
                ["path", "turns/s", "vs direct", "turns/CPU s", "vs direct",
                 "freshness p50 s", "freshness p99 s"],
                [["Memory.ingest (direct)", f"{direct_tps:.1f}", "1.00", f"{direct_cpu:.1f}",
                  "1.00", "-", "-"],
                 ["Kafka (tansu, 1 worker)", f"{kafka_tps:.1f}", f"{ratio:.2f}",
                  f"{kafka_cpu:.1f}", f"{cpu_ratio:.2f}", f"{p50:.2f}", f"{p99:.2f}"]])
    console.print(f"load average now {load_average():.1f}; wall-clock rates swing with the "
                  f"machine's load between phases, CPU seconds much less")
    console.print(f"Kafka/direct = {ratio:.2f} wall, {cpu_ratio:.2f} CPU "
                  f"(target >= {TARGET_RATIO:.2f}): {verdict(ratio >= TARGET_RATIO)} wall, "
                  f"{verdict(cpu_ratio >= TARGET_RATIO)} CPU")
    if shapes:
        rows = []
        for name, got in ((f"baseline (hold 0, batch {OLD_BATCH_MAX})", old),
                          ("this worker", shapes)):
            if got:
                seq, rr = got["sequential"], got["interleaved"]
                rows += [[name, "session by session", f"{seq[0]:.1f}", f"{seq[1]:.1f}", "1.00"],
                         [name, "round-robin by message", f"{rr[0]:.1f}", f"{rr[1]:.1f}",
                          f"{rr[1] / seq[1]:.2f}"]]
        print_table(f"traffic shape: the data {args.copies} times over "
                    f"({len(sessions) * args.copies} sessions), one worker",
                    ["worker", "produced", "turns/s", "turns/CPU s", "vs sequential (CPU)"],
                    rows)
        seq, rr = shapes["sequential"], shapes["interleaved"]
        if old:
            console.print(f"round-robin turns per CPU second vs the baseline's: "
                          f"{rr[1] / old['interleaved'][1]:.2f}x; baseline interleaved/"
                          f"sequential {old['interleaved'][1] / old['sequential'][1]:.2f}, "
                          f"stored turns identical: {verdict(bool(same_old))} ({same_old})")
        console.print(f"interleaved/sequential per CPU second = {rr[1] / seq[1]:.2f} over "
                      f"{args.rounds} round(s) (each: "
                      f"{', '.join(f'{x:.2f}' for x in _ratios(rounds))}; target >= 0.90): "
                      f"{verdict(rr[1] / seq[1] >= 0.9)}; stored turns identical: "
                      f"{verdict(bool(same))} ({same})")
    if not args.skip_freshness:
        console.print(f"freshness at {rate:.0f} msg/s (80% of max) over {len(fresh)}/{len(sent)} turns: "
                          f"p50 {p50:.2f} s, p99 {p99:.2f} s (target p99 < {TARGET_P99_S:.0f} s): "
                      f"{verdict(p99 < TARGET_P99_S)}")
    results: dict[str, Any] = {
        "dataset": str(args.dataset), "sessions": len(sessions), "turns": turns,
        "copies": args.copies, "rounds": args.rounds, "load_average_end": load_average(),
        "direct": {"turns_per_s": direct_tps, "turns_per_cpu_s": direct_cpu},
        "kafka": {"turns_per_s": kafka_tps, "turns_per_cpu_s": kafka_cpu},
        "shapes": {k: {"turns_per_s": v[0], "turns_per_cpu_s": v[1]} for k, v in shapes.items()},
        "per_round": rounds, "same_turns": same,
        "baseline": {k: {"turns_per_s": v[0], "turns_per_cpu_s": v[1]} for k, v in old.items()},
        "baseline_per_round": old_rounds,
        "freshness": None if args.skip_freshness else {
            "messages_per_s": rate, "p50_s": p50, "p99_s": p99, "seconds": fresh}}
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "stream_ingest.json").write_text(json.dumps(results, indent=1) + "\n")
    _plot(results)


def _plot(results: dict[str, Any]) -> None:
    """Turns per CPU second per shape and round; the freshness distribution when measured."""
    plt = pyplot_or_none()
    if plt is None:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    per_round = results["per_round"]
    x = range(len(per_round))
    w = 0.38
    for off, shape in ((-w / 2, "sequential"), (w / 2, "interleaved")):
        left.bar([i + off for i in x], [r.get(shape, 0.0) for r in per_round], w, label=shape)
    for name, style in (("direct", ":"), ("kafka", "--")):
        left.axhline(results[name]["turns_per_cpu_s"], linestyle=style, color="grey",
                     label=f"{name}, one copy")
    left.set_xticks(list(x), [f"round {i + 1}" for i in x])
    left.set_ylabel("turns per CPU second (worker + broker)")
    left.set_title(f"{results['sessions'] * results['copies']} sessions, by traffic shape")
    left.legend(fontsize=8)
    fresh = results["freshness"]
    if fresh is None:
        right.text(0.5, 0.5, "freshness not measured (--skip-freshness)", ha="center")
        right.set_axis_off()
    else:
        times = sorted(fresh["seconds"])
        right.plot(times, [(i + 1) / len(times) for i in range(len(times))])
        right.axvline(TARGET_P99_S, linestyle="--", color="grey", label="p99 target")
        right.set_xlabel("freshness (s): first send to searchable")
        right.set_ylabel("fraction of turns")
        right.set_title(f"at {fresh['messages_per_s']:.0f} msg/s (80% of max)")
        right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT_DIR / "stream_ingest.png", dpi=100)
    plt.close(fig)
    console.print(f"results: {OUT_DIR / 'stream_ingest.json'}, plot: {OUT_DIR / 'stream_ingest.png'}")


def _start_worker(env: dict[str, str], log: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "streams", "worker"], cwd=ROOT,
                            env=env, stdout=log, stderr=subprocess.STDOUT)


def _stop(worker: subprocess.Popen[bytes]) -> None:
    worker.terminate()
    worker.wait(60)


def _warm(brokers: str, sessions: list[Any], tenant: str) -> None:
    """One session through a fresh worker: it has joined the group and loaded its encoder."""
    asyncio.run(_produce(brokers, _retenant(sessions[:1], tenant), None))
    _drain(brokers, 300)


def _round_prefix(prefix: str, r: int) -> str:
    """Tenants of round ``r`` (round 0 keeps the bare prefix)."""
    return prefix if r == 0 else f"{prefix}-r{r}"


def _shapes(brokers: str, pids: list[int], sessions: list[Any], copies: int, prefix: str,
            profile: Path | None, label: str, rounds: int = 1
            ) -> tuple[dict[str, tuple[float, float]], list[dict[str, float]]]:
    """Both traffic shapes, ``rounds`` times in alternating order (fresh tenants each time).

    Returns {shape: (turns/s, turns per CPU second of worker + broker)} over all
    rounds, and each round's {shape: turns per CPU second}. The
    machine's speed drifts by tens of percent within minutes here, so a single
    sequential-then-interleaved pair can be off by more than the effect measured;
    alternating the order spreads the drift over both shapes.
    """
    sums: dict[str, list[float]] = {}  # shape: [turns, seconds, CPU seconds]
    per_round: list[dict[str, float]] = []
    for r in range(rounds):
        order = SHAPES if r % 2 == 0 else SHAPES[::-1]
        this_round: dict[str, float] = {}
        for shape in order if copies else ():
            tenants = f"{_round_prefix(prefix, r)}-{shape}"
            data = [s for c in range(copies) for s in _retenant(sessions, f"{tenants}-{c}")]
            console.print(f"{shape} ({label}, round {r + 1} of {rounds}): {len(data)} sessions, "
                          f"{_messages(data)} messages ...")
            spy = _spy(pids[0], profile, tenants) if profile else None
            start, before = time.monotonic(), [cpu_seconds(p) for p in pids]
            threads_before = thread_cpu_seconds(pids[0])
            asyncio.run(_produce(brokers, data, None, interleave=shape == "interleaved"))
            _drain(brokers)
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
            seconds = time.monotonic() - start
            used = [cpu_seconds(p) - b for p, b in zip(pids, before)]
            total = sums.setdefault(shape, [0.0, 0.0, 0.0])
            total[0] += _turns(data)
            total[1] += seconds
            total[2] += sum(used)
            this_round[shape] = _turns(data) / sum(used)
            console.print(f"  {_turns(data) / seconds:.1f} turns/s, {this_round[shape]:.1f} "
                          f"turns per CPU second (worker {used[0]:.1f} s, broker {used[1]:.1f} s "
                          f"of CPU); load {load_average():.1f}")
            threads = thread_cpu_seconds(pids[0])
            spent = sorted(((threads[n] - threads_before.get(n, 0.0), n) for n in threads),
                           reverse=True)
            console.print("  worker threads (CPU s): " + ", ".join(
                f"{name} {s:.1f}" for s, name in spent[:6] if s >= 0.05))
        if this_round:
            per_round.append(this_round)
    shapes = {shape: (t / secs, t / cpu) for shape, (t, secs, cpu) in sums.items()}
    return shapes, per_round


def _ratios(per_round: list[dict[str, float]]) -> list[float]:
    """Each round's interleaved/sequential turns per CPU second."""
    return [r["interleaved"] / r["sequential"] for r in per_round
            if "interleaved" in r and "sequential" in r]

if __name__ == "__main__":
    main()
