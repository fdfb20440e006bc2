"""The retention sweep's cost: sessions deleted per second, and its dry run's time.

```bash
.venv/bin/python -m bench.retention_sweep [--users 60] [--sessions 8] [--turns 3] [--kafka]
```

An embedded data dir (Qdrant Edge, tantivy, SQLite, MiniLM, the extractive builder)
gets ``--users`` x ``--sessions`` sessions of ``--turns`` turns each; every other
session is dated three years back and one user in ten holds old sessions only
(inactive). With a policy of 365 days per session and 730 days of inactivity:

1. the dry run (planning only: walking the tenant's users and sessions) is timed;
2. the sweep deletes through ``Memory.delete`` (every store, index and cached layer,
   flushed every ``MEMSTRATA_RETENTION_FLUSH_EVERY`` deletes): sessions deleted per
   second, and per delete call;
3. with ``--kafka``, the same plan is published as control events to an embedded
   broker (no worker applies them: ``apply_wait_s`` 0), timing the publishing alone.

Results go to ``bench/out/retention_sweep.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench._common import OUT_DIR, print_table
from memstrata.config import Settings
from memstrata.layers.windowing import group_turns
from memstrata.lifecycle.retention import RetentionPolicy
from memstrata.lifecycle.retention_sweep import MemoryDeleter, Sweeper
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta

OUT = OUT_DIR / "retention_sweep.json"
NOW = datetime(2025, 6, 1, tzinfo=UTC)
POLICY = {"bench": RetentionPolicy(session_max_age_days=365, user_inactive_days=730)}
TOPICS = ["the garden", "a trip to Lisbon", "the new job", "a cello lesson", "the kitten",
          "a marathon", "the kitchen", "a birthday"]


def history(users: int, sessions: int, turns: int) -> list[Session]:
    out = []
    for u in range(users):
        scope = Scope(tenant_id="bench", user_id=f"user-{u:04d}")
        inactive = u % 10 == 9
        for s in range(sessions):
            old = inactive or s % 2 == 0
            date = NOW - timedelta(days=3 * 365 + s if old else 30 + s)
            msgs = []
            for t in range(turns):
                topic = TOPICS[(u + s + t) % len(TOPICS)]
                msgs += [Message(role="user", content=f"User {u} talks about {topic}, part {t}."),
                         Message(role="assistant", content=f"Noted: {topic} ({s}.{t}).")]
            out.append(Session(meta=SessionMeta(scope=scope, session_id=f"s{s:03d}",
                                                session_date=date), turns=group_turns(msgs)))
    return out


def _kafka_publish(docs: Any, state: Path) -> dict[str, float]:
    """Publish the plan as control events to an embedded broker (nobody applies them)."""
    from memstrata.kafka import KafkaSettings
    from memstrata.lifecycle.retention_topic import ControlTopicDeleter
    from streams.broker import EmbeddedBroker
    from streams.topics import specs

    broker = EmbeddedBroker(log_dir=state / "tansu")
    broker.start()
    try:
        broker.create_topics(specs(4))
        deleter = ControlTopicDeleter(KafkaSettings(brokers=broker.address), apply_wait_s=0)
        with deleter:
            started = time.perf_counter()
            receipt = Sweeper(docs, deleter, state / "retention-kafka", clock=lambda: NOW,
                              ).sweep(POLICY)
            took = time.perf_counter() - started
        events = len(deleter.published)
        return {"events": events, "seconds": took, "events_per_s": events / took,
                "sessions_covered": receipt.sessions_deleted}
    finally:
        broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=60)
    ap.add_argument("--sessions", type=int, default=8, help="sessions per user")
    ap.add_argument("--turns", type=int, default=3, help="turns per session")
    ap.add_argument("--flush-every", type=int, default=200)
    ap.add_argument("--kafka", action="store_true",
                    help="also time publishing the plan as control events")
    args = ap.parse_args()
    result: dict[str, Any] = {"users": args.users, "sessions_per_user": args.sessions,
                              "turns_per_session": args.turns, "flush_every": args.flush_every}
    with tempfile.TemporaryDirectory(prefix="retention-bench-") as tmp:
        data = Path(tmp) / "data"
        memory = Memory.open(Settings(data_dir=data))
        try:
            started = time.perf_counter()
            memory.ingest(history(args.users, args.sessions, args.turns))
            memory.flush()
            result["ingest_s"] = time.perf_counter() - started
            result["sessions_stored"] = memory.stats("bench").sessions
            sweeper = Sweeper(memory.docs, MemoryDeleter(memory), data / "retention",
                              flush_every=args.flush_every, clock=lambda: NOW)
            started = time.perf_counter()
            (plan,) = sweeper.plan(POLICY)
            result["dry_run_s"] = time.perf_counter() - started
            result["expired_sessions"] = plan.sessions_expired
            result["expired_users"] = plan.users_expired
            if args.kafka:
                result["kafka"] = _kafka_publish(memory.docs, Path(tmp))
            started = time.perf_counter()
            receipt = sweeper.sweep(POLICY)
            took = time.perf_counter() - started
            result.update(sweep_s=took, sessions_deleted=receipt.sessions_deleted,
                          delete_calls=len(receipt.tenants["bench"].deleted),
                          sessions_per_s=receipt.sessions_deleted / took,
                          ms_per_delete_call=1000 * took / max(1, len(
                              receipt.tenants["bench"].deleted)),
                          sessions_left=memory.stats("bench").sessions)
        finally:
            memory.close()
    rows = [["ingest (setup)", result["sessions_stored"], result["ingest_s"], "-"],
            ["dry run (plan: sessions checked)", result["sessions_stored"], result["dry_run_s"],
             result["sessions_stored"] / result["dry_run_s"]],
            ["sweep, direct", result["sessions_deleted"], result["sweep_s"],
             result["sessions_per_s"]]]
    if "kafka" in result:
        k = result["kafka"]
        rows.append(["sweep, control topic (publish only)", k["sessions_covered"],
                     k["seconds"], k["sessions_covered"] / k["seconds"]])
    print_table("retention sweep", ["step", "sessions", "seconds", "sessions/s"], rows)
    print(f"{result['delete_calls']} delete calls ({result['expired_users']} whole users), "
          f"{result['ms_per_delete_call']:.1f} ms each; {result['sessions_left']} sessions left")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
