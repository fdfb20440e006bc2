"""Worker processes, consumer-group positions and store snapshots for the stream tests."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memstrata.kafka.ends import log_end_offsets
from memstrata.model import Scope
from streams import topics
from streams.worker import group_lag, wait_drained
from tests.support.serve_proc import QUICK_JOIN

ROOT = Path(__file__).resolve().parents[3]

#: Short group timeouts so joins, leaves and restarts settle in seconds.
FAST = {
    **QUICK_JOIN,
    "MEMSTRATA_KAFKA_COMMIT_INTERVAL_S": "0.5",
    "MEMSTRATA_STREAM_FRESHNESS_S": "1",
    "MEMSTRATA_STREAM_CONTROL_WAIT_S": "20",
}


async def _commit_end(brokers: str, group: str) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    consumer = AIOKafkaConsumer(bootstrap_servers=brokers, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer.topics()
        tps = [TopicPartition(t, p) for t in (topics.TURNS, topics.CONTROL)
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        ends = await log_end_offsets(consumer, tps)  # tansu: see memstrata.kafka.ends
        consumer.assign(tps)
        await consumer.commit({tp: OffsetAndMetadata(off, "") for tp, off in ends.items()})
    finally:
        await consumer.stop()


def start_group_at_end(brokers: str, group: str) -> None:
    """Make a new consumer group start after everything earlier tests produced."""
    asyncio.run(_commit_end(brokers, group))


async def _group_members(brokers: str, group: str) -> tuple[str, int]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=brokers)
    await admin.start()
    try:
        (resp,) = await admin.describe_consumer_groups([group])
        (desc,) = resp.groups
        return desc[2], len(desc[5])  # (state, members)
    finally:
        await admin.close()


def group_members(brokers: str, group: str) -> tuple[str, int]:
    """The consumer group's state ("Stable", "PreparingRebalance", ...) and member count."""
    return asyncio.run(_group_members(brokers, group))


class WorkerProc:
    """One ``StreamRuntime`` worker as a real child process."""

    def __init__(self, brokers: str, data_dir: Path, group: str, log_dir: Path,
                 **env: str) -> None:
        self.brokers = brokers
        self.group = group
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), **FAST,
                    "MEMSTRATA_DATA_DIR": str(data_dir), "MEMSTRATA_KAFKA_BROKERS": brokers,
                    "MEMSTRATA_STREAM_APP_ID": group, **env}
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> "WorkerProc":
        self.starts += 1
        log = (self.log_dir / f"worker-{self.group}-{self.starts}.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streams", "worker"], cwd=ROOT,
            env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return self

    @property
    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace")
                         for p in sorted(self.log_dir.glob(f"worker-{self.group}-*.log")))

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 30.0) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                return proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
        return proc.wait(10)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, nothing is flushed or committed."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

    def drain(self, timeout_s: float = 90.0) -> None:
        """Wait until the group has committed everything produced so far."""
        ok = asyncio.run(wait_drained(self.brokers, self.group, timeout_s))
        if not ok:
            lag = asyncio.run(group_lag(self.brokers, self.group))
            raise AssertionError(f"not drained after {timeout_s}s: {lag}\n{self.log_text[-3000:]}")


def wait_until(check: Any, timeout_s: float, step: float = 0.1) -> float:
    """Poll ``check()`` until true; seconds it took (AssertionError on timeout)."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"condition not met within {timeout_s}s")
        time.sleep(step)
    return time.monotonic() - start


def snapshot(memory: Any, scopes: Iterable[Scope]) -> dict[str, Any]:
    """Everything the stores hold for ``scopes``, as plain data, for record-by-record diffs."""
    out: dict[str, Any] = {}
    for scope in sorted(set(scopes), key=str):
        sessions = {}
        for meta in memory.sessions(scope):
            sid = meta.session_id
            sessions[sid] = {
                "meta": meta.model_dump(mode="json"),
                "digest": memory.docs.session_digest(scope, sid),
                "turns": [t.model_dump(mode="json") for t in memory.raw(scope, sid)],
                "units": [u.model_dump(mode="json") for u in memory.l0(scope, sid)],
            }
        out[str(scope)] = {
            "sessions": sessions,
            "vectors": memory.vectors.count(scope),
            "lexical": memory.lexical.count(scope),
            "raw_turns": memory.docs.count_turns(scope),
        }
    return out


async def _read_topic(brokers: str, topic: str, timeout_s: float = 20.0,
                      kafka: Any = None) -> list[Any]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from memstrata.kafka.security import kafka_client_kwargs

    auth = kafka_client_kwargs(kafka) if kafka is not None else {}
    consumer = AIOKafkaConsumer(bootstrap_servers=brokers, enable_auto_commit=False,
                                auto_offset_reset="earliest", **auth)
    await consumer.start()
    try:
        await consumer.topics()
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        ends = await log_end_offsets(consumer, tps)  # tansu: see memstrata.kafka.ends
        consumer.assign(tps)
        starts = await consumer.beginning_offsets(tps)
        for tp in tps:
            consumer.seek(tp, starts[tp])
        got: dict[Any, list[Any]] = {tp: [] for tp in tps}
        deadline = time.monotonic() + timeout_s
        while any(len(got[tp]) < ends[tp] - starts[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: read {[len(v) for v in got.values()]} records, "
                                     f"expected {[ends[tp] - starts[tp] for tp in tps]}")
            batch = await consumer.getmany(timeout_ms=500)
            for tp, msgs in batch.items():
                got[tp].extend(m for m in msgs if m.offset < ends[tp])
        return [m for tp in tps for m in got[tp]]
    finally:
        await consumer.stop()


def read_topic(brokers: str, topic: str, kafka: Any = None) -> list[Any]:
    """Every record of ``topic`` from the beginning (aiokafka ConsumerRecords); ``kafka``:
    the settings that log in (the embedded broker of ``serve``)."""
    return asyncio.run(_read_topic(brokers, topic, kafka=kafka))


class BatchSnapshots:
    """``memstrata ingest`` of files, group by group into one data dir, in a child process.

    The stream tests spend most of their time waiting on a worker process, so the
    batch ingest they compare against runs meanwhile, on the other core. A child
    process rather than a thread of the test process: CPython 3.11's ``ast.parse``
    is not safe in two threads at once, and pytest parses (to rewrite asserts) the
    modules of its plugins' packages when a thread first imports one. The result
    is :func:`snapshot` of each group's scopes, through JSON (plain data already).
    """

    def __init__(self, data_dir: Path, files: dict[str, tuple[Path, str]]) -> None:
        self.out = data_dir.with_name(data_dir.name + "-snapshots.json")
        spec = {"data_dir": str(data_dir), "out": str(self.out),
                "files": {name: [str(path), tenant] for name, (path, tenant) in files.items()}}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.streams.harness", json.dumps(spec)],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def result(self, timeout_s: float) -> dict[str, dict[str, Any]]:
        """Each group's snapshot, once the child has finished (AssertionError if it failed)."""
        out, _ = self.proc.communicate(timeout=timeout_s)
        assert self.proc.returncode == 0, out.decode(errors="replace")[-3000:]
        return json.loads(self.out.read_text())  # type: ignore[no-any-return]

    def stop(self) -> None:
        """Kill the child if it still runs (a test that failed before it asked for the result)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


def _batch_main(spec: dict[str, Any]) -> None:
    from memstrata.config import Settings
    from memstrata.ingest.formats import read_file
    from memstrata.memory import Memory

    groups = {name: read_file(Path(path), tenant_id=tenant).sessions
              for name, (path, tenant) in spec["files"].items()}
    with Memory.open(Settings(data_dir=Path(spec["data_dir"]))) as batch:
        for sessions in groups.values():
            batch.ingest(list(sessions))
        snaps = {name: snapshot(batch, [s.scope for s in sessions])
                 for name, sessions in groups.items()}
    Path(spec["out"]).write_text(json.dumps(snaps))


class BackgroundProducer:
    """Publishes sessions at a steady rate from a thread, so a test can act mid-stream.

    ``done`` is set when the producer has finished (or failed); ``errors`` holds
    what it raised, for the test to report.
    """

    def __init__(self, brokers: str, sessions: list[Any], rate: float,
                 hold_at: int | None = None) -> None:
        self.brokers, self.sessions, self.rate = brokers, sessions, rate
        self.done = threading.Event()
        #: With ``hold_at``, the producer stops after that many messages (``held`` is set)
        #: until ``resume`` is set: "mid-stream" then holds however slow the machine is.
        self.hold_at = hold_at
        self.held = threading.Event()
        self.resume = threading.Event()
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        from streams.produce import StreamProducer, produce_sessions

        outer = self

        class Gated:
            """Delegates to the producer; waits at ``hold_at`` sends for ``resume``."""

            def __init__(self, inner: Any) -> None:
                self.inner, self.sent = inner, 0

            def __getattr__(self, name: str) -> Any:
                return getattr(self.inner, name)

            async def send_turn(self, ev: Any) -> Any:
                if self.sent == outer.hold_at:
                    outer.held.set()
                    await asyncio.get_running_loop().run_in_executor(None, outer.resume.wait)
                self.sent += 1
                return await self.inner.send_turn(ev)

        async def go() -> None:
            async with StreamProducer(self.brokers) as p:
                await produce_sessions(Gated(p), self.sessions,  # type: ignore[arg-type]
                                       rate=self.rate, interleave=True)
        try:
            asyncio.run(go())
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            self.done.set()

    def start(self) -> "BackgroundProducer":
        self._thread.start()
        return self

    def join(self, timeout_s: float) -> None:
        self.resume.set()  # a held producer is never left waiting
        if self._thread.ident is not None:  # started
            self._thread.join(timeout_s)


if __name__ == "__main__":  # BatchSnapshots' child
    _batch_main(json.loads(sys.argv[1]))
