"""Export: lossless, confined to its scope, and congruent with ingest.

The history (tests/integration/lifecycle/support.py) is ingested into a real
embedded data dir; each tenant is exported with the library functions the CLI
uses, and the export ingested into an empty data dir gives the same L0-L3:
session metadata (dates with their zone, labels), raw turns (speakers, message
ids or none, a session that opens with the assistant), digests, L0 unit ids,
summaries, keywords, tags and source ids, one vector and one BM25 document per
unit, and the L1/L2 built from them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.ingest.formats import open_source
from memstrata.lifecycle.export import (
    ExportCounts,
    ExportScopeError,
    ExportWriter,
    read_session,
    user_sessions,
)
from memstrata.lifecycle.records import ExportedSession, export_header
from memstrata.memory import Memory
from memstrata.model import EXPORT_HEADER_KEY, Message, Scope, SessionMeta, Turn
from tests.integration.lifecycle.support import (
    ACME_MAYA,
    GLOBEX_MAYA,
    build_history,
    layers_snapshot,
    open_memory,
    tenants_of,
)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory,
             embedder: MiniLMEmbedder) -> Iterator[Memory]:
    memory = open_memory(tmp_path_factory.mktemp("export") / "original", embedder)
    try:
        build_history(memory)
        yield memory
    finally:
        memory.close()


def export(memory: Memory, path: Path, tenant: str, user: str | None = None, *,
           layers: Path | None = None) -> ExportCounts:
    """What ``memstrata export`` does locally, into ``path`` (and ``layers``)."""
    with path.open("w", encoding="utf-8") as out, \
            (layers.open("w", encoding="utf-8") if layers else nullcontext()) as lay:
        writer = ExportWriter(out, tenant, user, layers_out=lay)
        writer.header(export_header(tenant_id=tenant, user_id=user, source="test",
                                    layers_file=layers.name if layers else None,
                                    exported_at=datetime.now(UTC), version="test"))
        for u in ([user] if user else memory.docs.iter_users(tenant, page=2)):
            for session in user_sessions(memory.docs, Scope(tenant_id=tenant, user_id=u),
                                         layers=layers is not None):
                writer.write(session)
    return writer.counts


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_export_then_ingest_into_an_empty_data_dir_rebuilds_every_layer(
        original: Memory, tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    files = []
    for tenant in tenants_of(original):
        files.append(tmp_path / f"{tenant}.jsonl")
        counts = export(original, files[-1], tenant)
        assert counts.refused_count == 0, counts.refused
    copy = open_memory(tmp_path / "copy", embedder)
    try:
        for f in files:
            source = open_source(f)
            assert source.format == "jsonl" and source.issue_count == 0, source.issues
            copy.ingest(source.sessions())
        before = layers_snapshot(original, with_cached=True)
        after = layers_snapshot(copy, with_cached=True)
    finally:
        copy.close()
    assert len(before) == 45  # LoCoMo 5 + LongMemEval 36 + 4 hand-written sessions
    assert after.keys() == before.keys()
    for key, entry in before.items():
        assert after[key] == entry, key
    zoned = before[("acme", "maya", "opens-with-assistant")]
    assert zoned["meta"].session_date.utcoffset() is not None
    assert zoned["meta"].labels == {"channel": "web", "locale": "pt-PT"}
    assert [m.role for m in zoned["l3"][0].messages] == ["assistant"]
    assert before[("globex", "maya", "g1-dog")]["meta"].labels == {}


def test_an_export_holds_its_scope_and_nothing_else(original: Memory, tmp_path: Path) -> None:
    one = tmp_path / "maya.jsonl"
    export(original, one, "acme", "maya")
    header, *events = lines(one)
    assert header[EXPORT_HEADER_KEY]["scope"] == "user"
    assert header[EXPORT_HEADER_KEY]["user_id"] == "maya"
    assert {(e["tenant_id"], e["user_id"]) for e in events} == {("acme", "maya")}
    assert {e["session_id"] for e in events} == {
        m.session_id for m in original.docs.list_sessions(ACME_MAYA)}

    whole = tmp_path / "acme.jsonl"
    counts = export(original, whole, "acme")
    _, *events = lines(whole)
    assert {e["tenant_id"] for e in events} == {"acme"}
    assert counts.users == {e["user_id"] for e in events} == set(
        original.docs.list_users("acme"))
    assert "g1-dog" not in {e["session_id"] for e in events}  # globex's maya stays out


def test_the_writer_refuses_a_session_outside_its_scope(original: Memory,
                                                         tmp_path: Path) -> None:
    foreign = read_session(original.docs, original.docs.list_sessions(GLOBEX_MAYA)[0],
                           layers=False)
    other_user = read_session(original.docs, original.docs.list_sessions(
        Scope(tenant_id="acme", user_id="leo"))[0], layers=False)
    path = tmp_path / "x.jsonl"
    with path.open("w") as out:
        writer = ExportWriter(out, "acme", "maya")
        for session in (foreign, other_user):
            with pytest.raises(ExportScopeError, match="outside the export's scope"):
                writer.write(session)
    assert path.read_text() == "" and writer.counts.sessions == 0


def test_the_layers_file_holds_l0_and_cached_l1_l2_of_the_scope(original: Memory,
                                                                 tmp_path: Path) -> None:
    turns, layers = tmp_path / "maya.jsonl", tmp_path / "maya.layers.jsonl"
    counts = export(original, turns, "acme", "maya", layers=layers)
    records = lines(layers)
    assert counts.layer_records == len(records)
    assert {(r["tenant_id"], r["user_id"]) for r in records} == {("acme", "maya")}
    assert {r["layer"] for r in records} == {"L0", "L1", "L2"}  # no internal plan records
    for meta in original.docs.list_sessions(ACME_MAYA):
        mine = [r for r in records if r["session_id"] == meta.session_id]
        units = original.docs.session_units(ACME_MAYA, meta.session_id)
        assert [r["unit"] for r in mine if r["layer"] == "L0"] == [
            u.model_dump(mode="json") for u in units]
        cached = [c for c in original.docs.session_layers(ACME_MAYA, meta.session_id)
                  if c.layer in ("L1", "L2")]
        assert [(r["layer"], r["builder"], r["payload"]) for r in mine if r["layer"] != "L0"
                ] == [(c.layer, c.builder, c.payload) for c in cached]
    assert any(r["layer"] == "L1" and r["session_id"] == "opens-with-assistant"
               for r in records)


def test_lines_that_ingest_would_refuse_are_named(tmp_path: Path) -> None:
    meta = SessionMeta(scope=ACME_MAYA, session_id="odd")
    session = ExportedSession(meta=meta, turns=[Turn(index=1, messages=[
        Message(role="user", content="fine"),
        Message(role="assistant", content=""),
        Message(role="assistant", content="long id", source_id="x" * 129)])])
    with (tmp_path / "odd.jsonl").open("w") as out:
        writer = ExportWriter(out, "acme", "maya")
        writer.header({EXPORT_HEADER_KEY: {}})
        writer.write(session)
    assert writer.counts.refused_count == 2
    assert writer.counts.refused[0].startswith("line 3: field 'content'")
    assert writer.counts.refused[1].startswith("line 4: field 'message_id'")
    assert len(lines(tmp_path / "odd.jsonl")) == 4  # kept as stored all the same


def test_ingest_skips_the_header_and_keeps_each_sessions_labels(tmp_path: Path) -> None:
    base = {"tenant_id": "acme", "user_id": "maya", "role": "user", "content": "hello"}
    f = tmp_path / "in.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in (
        {EXPORT_HEADER_KEY: {"format": 1}},
        {**base, "session_id": "labelled", "labels": {"channel": "web"}},
        {**base, "session_id": "cleared", "labels": {}},
        {**base, "session_id": "plain"})) + "\n")
    source = open_source(f)
    assert source.issue_count == 0 and source.session_count == 3
    labels = {s.session_id: s.meta.labels for s in source.sessions()}
    assert labels == {"labelled": {"channel": "web"}, "cleared": {},
                      "plain": {"source": "jsonl"}}
