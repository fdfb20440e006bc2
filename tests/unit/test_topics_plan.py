"""The topics `memstrata topics create` plans: names as the worker and Faust use them."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.topics_cli import SESSIONS_TABLE, faust_topics, plans_for
from memstrata.kafka import KafkaSettings
from streams import topics

ROOT = Path(__file__).resolve().parents[2]


def test_plan_covers_every_topic_with_the_settings() -> None:
    kafka = KafkaSettings(partitions=6, replication=3, retention_hours=24,
                          dlq_retention_hours=240, group="g1", topic_turns="t.turns")
    plans = {p.role: p for p in plans_for(kafka)}
    names = {p.name for p in plans_for(kafka)}
    # every topic the worker declares (streams.topics.ALL, the configured turns for its own)
    assert names >= {"t.turns", *(n for n in topics.ALL if n != topics.TURNS)}
    assert topics.TURNS not in names
    for role in ("turns", "control", "l0", "dlq", "changelog"):
        assert (plans[role].partitions, plans[role].replication) == (6, 3), role
    assert plans["turns"].configs["retention.ms"] == str(24 * 3_600_000)
    assert plans["dlq"].configs["retention.ms"] == str(240 * 3_600_000)
    assert plans["changelog"].configs == {"cleanup.policy": "compact"}
    assert (plans["leader"].partitions, plans["leader"].replication) == (1, 3)


def test_faust_derives_the_same_topic_names() -> None:
    faust = pytest.importorskip("faust")
    from faust.assignor.leader_assignor import LeaderAssignor

    app = faust.App("g2", broker="kafka://127.0.0.1:1", autodiscover=False, store="memory://")
    table = app.Table(SESSIONS_TABLE, partitions=2)
    changelogs, leader = faust_topics("g2")
    assert changelogs == [table.changelog_topic_name]
    assert leader == LeaderAssignor(app)._leader_topic_name
    # The worker's table is this one (streams/app.py is another package's; read, not imported).
    assert f'name="{SESSIONS_TABLE}"' in (ROOT / "streams" / "app.py").read_text()
