"""A provisional unit is searchable before its session closes, then replaced under its id.

The worker writes BM25 and documents to osmem-server (OpenSearch-compatible),
which this test process reads while the worker runs.
"""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.model import Scope
from memstrata.store.factory import open_doc_store, open_lexical_store
from streams import topics
from streams.broker import EmbeddedBroker, free_port
from memstrata.wire import TurnEvent
from streams.events import L0Event, utcnow
from streams.produce import StreamProducer
from tests.integration.streams.harness import WorkerProc, read_topic, wait_until
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

ZOE = Scope(tenant_id="t-fresh", user_id="zoe")
FRESHNESS_S = 2.0


def turn(sid: str, n: int, text: str) -> TurnEvent:
    return TurnEvent(tenant_id=ZOE.tenant_id, user_id=ZOE.user_id, session_id=sid,
                     message_id=f"{sid}#{n}", role="user" if n % 2 else "assistant",
                     content=text, ts=utcnow())  # type: ignore[arg-type]


def _metrics(port: int) -> dict[str, float]:
    """The worker's /metrics as {sample with labels: value}."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def send(brokers: str, *events: TurnEvent, close: str | None = None) -> None:
    async def go() -> None:
        async with StreamProducer(brokers) as p:
            for ev in events:
                await (await p.send_turn(ev))
            if close:
                await p.control("close_session", ZOE, close)
    asyncio.run(go())


def test_provisional_unit_is_fresh_then_replaced(broker: EmbeddedBroker, group: str,
                                                  logs: Path, tmp_path: Path,
                                                  osmem_url: str) -> None:
    shared = {"MEMSTRATA_LEXICAL_BACKEND": "opensearch", "MEMSTRATA_DOC_BACKEND": "opensearch",
              "MEMSTRATA_OPENSEARCH_URL": osmem_url,
              "MEMSTRATA_OPENSEARCH_INDEX_PREFIX": "fresh"}
    settings = Settings(data_dir=tmp_path / "reader", lexical_backend="opensearch",
                        doc_backend="opensearch", opensearch_url=osmem_url,
                        opensearch_index_prefix="fresh")
    port = free_port()
    worker = WorkerProc(broker.address, tmp_path / "worker", group, logs,
                        MEMSTRATA_STREAM_FRESHNESS_S=str(FRESHNESS_S),
                        MEMSTRATA_STREAM_METRICS_PORT=str(port), **shared).start()
    lexical, docs = open_lexical_store(settings), open_doc_store(settings)
    try:
        # Warm-up: the worker has joined its group and loaded its encoder.
        send(broker.address, turn("warm", 1, "warming up the kettle"))
        wait_until(lambda: lexical.search(ZOE, "kettle", 5), 90)

        # Searchable before the session is closed (a provisional unit). How fast is
        # measured in bench/stream_ingest.py, not asserted here: on a loaded machine a
        # bound near MEMSTRATA_STREAM_FRESHNESS_S is noise; the deadline catches a hang.
        send(broker.address, turn("s1", 1, "I adopted a tortoise called Humbert."))
        wait_until(lambda: lexical.search(ZOE, "tortoise Humbert", 5), 30, step=0.05)
        # The doc store is written after the search stores (a failed batch then leaves
        # no turn behind), so the unit's record may trail its BM25 hit by a moment.
        wait_until(lambda: docs.session_units(ZOE, "s1"), 30, step=0.05)
        (first,) = docs.session_units(ZOE, "s1")

        lines = ["Humbert eats dandelions.", "He sleeps in the winter.",
                 "Tortoises can live a century.", "We bought him a heat lamp.",
                 "Heat lamps help in spring.", "He now walks in the garden."]
        send(broker.address, *(turn("s1", n, text) for n, text in enumerate(lines, start=2)),
             close="s1")
        worker.drain()
        units = docs.session_units(ZOE, "s1")
        assert [u.turn_index for u in units] == [1, 2, 3, 4]  # 7 messages, 4 turns
        assert units[0].id == first.id  # replaced under the same id, not duplicated
        assert lexical.count(ZOE) == 4 + 1  # four turns of s1 and the warm-up turn
        hits = lexical.search(ZOE, "tortoise Humbert", 10)
        assert len({h.unit_id for h in hits}) == len(hits)

        l0 = read_topic(broker.address, topics.L0)
        notes = [L0Event.model_validate_json(r.value) for r in l0 if r.key == b"t-fresh/zoe/s1"]
        assert notes, [(r.partition, r.offset, r.key) for r in l0]
        assert notes[0].turns == [1] and notes[0].provisional == [1]
        assert first.id in notes[0].unit_ids
        final = [n for n in notes if first.id in n.unit_ids and 1 not in n.provisional]
        assert final, notes  # turn 1 was rebuilt as final under the same id
        assert all(not n.provisional for n in notes if n.cause == "close")

        def lag_gauges_settled() -> dict[str, float] | None:
            """The metrics once every partition's lag gauge is there and at 0 (refreshed
            every 5 s)."""
            got = _metrics(port)
            lags = [v for k, v in got.items() if k.startswith("memstrata_stream_consumer_lag")]
            return got if len(lags) == 8 and not any(lags) else None

        metrics = wait_for(lag_gauges_settled, 30, "consumer lag gauges at 0 on 8 partitions")
        # At least once: a record read again after a group rejoin is counted again.
        assert metrics['memstrata_stream_events_in_total{topic="memstrata.turns.v1"}'] >= 8
        assert metrics['memstrata_stream_events_in_total{topic="memstrata.control.v1"}'] >= 1
        assert metrics["memstrata_stream_freshness_seconds_count"] >= 8
        assert metrics["memstrata_stream_turns_indexed_total"] >= 5
        assert metrics["memstrata_stream_provisional_replaced_total"] >= 1
        assert metrics['memstrata_stream_units_indexed_total{kind="final"}'] >= 4
        assert metrics["memstrata_stream_l0_build_seconds_count"] >= 2
        lags = {k: v for k, v in metrics.items() if k.startswith("memstrata_stream_consumer_lag")}
        assert len(lags) == 8 and not any(lags.values())  # 4 turns + 4 control partitions
    finally:
        worker.stop()
        lexical.close()
        docs.close()
