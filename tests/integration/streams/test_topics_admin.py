"""``memstrata topics create|check`` against the tansu broker, as the chart's hook Job runs it.

The Job's command and environment come from the rendered chart (only the broker
address is pointed at the test broker), so what runs here is what a cluster runs.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streams.broker import EmbeddedBroker
from tests.integration.streams.conftest import PARTITIONS

pytestmark = pytest.mark.integration

MEMSTRATA = Path(sys.executable).with_name("memstrata")
_runs = itertools.count(1)


def _env(extra: dict[str, str], tmp: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    return {**base, **extra, "MEMSTRATA_DATA_DIR": str(tmp / "data")}


def _memstrata(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MEMSTRATA), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def _job(values: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The topics Job's args and literal environment, as the chart renders them."""
    pytest.importorskip("helm_python", reason="helm-python-sdk (the deploy extra)")
    from tests.deploy.chart import DISTRIBUTED, by_kind, render

    docs = render({**DISTRIBUTED, **values})
    [job] = [j for j in by_kind(docs, "Job") if j["metadata"]["name"].endswith("-topics")]
    [container] = job["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
    return [*container.get("command", [])[1:], *container["args"]], env


def _describe(address: str, names: list[str]) -> dict[str, tuple[int, dict[str, str]]]:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def go() -> dict[str, tuple[int, dict[str, str]]]:
        admin = AIOKafkaAdminClient(bootstrap_servers=address)
        await admin.start()
        try:
            parts = {d["topic"]: len(d["partitions"]) for d in await admin.describe_topics(names)}
            [resp] = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
            configs = {r[3]: {e[0]: e[1] for e in r[4]} for r in resp.resources}
            return {n: (parts[n], configs.get(n, {})) for n in names}
        finally:
            await admin.close()

    return asyncio.run(go())


def _list(address: str) -> set[str]:
    from aiokafka.admin import AIOKafkaAdminClient

    async def go() -> set[str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=address)
        await admin.start()
        try:
            return set(await admin.list_topics())
        finally:
            await admin.close()

    return asyncio.run(go())


def test_the_chart_job_creates_every_topic_then_check_passes(
        broker: EmbeddedBroker, tmp_path: Path) -> None:
    n = next(_runs)
    group, turns = f"memstrata-topics-{n}", f"memstrata.topics-test-{n}.turns"
    args, env = _job({"grpcTls": {"secret": "memstrata-grpc", "clientCaKey": "ca.crt"},
                      "config": {"MEMSTRATA_KAFKA_GROUP": group,
                                 "MEMSTRATA_KAFKA_TOPIC_TURNS": turns,
                                 "MEMSTRATA_KAFKA_PARTITIONS": str(PARTITIONS),
                                 "MEMSTRATA_KAFKA_RETENTION_HOURS": "48"}})
    assert args == ["topics", "create"]
    env = _env({**env, "MEMSTRATA_KAFKA_BROKERS": broker.address}, tmp_path)

    done = _memstrata(args, env)
    assert done.returncode == 0, done.stdout + done.stderr
    changelog, leader = f"{group}-sessions-changelog", f"{group}-__assignor-__leader"
    created = {line.split()[2] for line in done.stdout.splitlines()
               if line.startswith("created")}
    assert {turns, changelog, leader} <= created, done.stdout
    got = _describe(broker.address, [turns, changelog, leader])
    assert got[turns][0] == PARTITIONS and got[leader][0] == 1
    assert got[turns][1].get("retention.ms") == str(48 * 3_600_000)
    assert got[changelog][1].get("cleanup.policy") == "compact"

    again = _memstrata(["topics", "check"], env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "drift" not in again.stdout + again.stderr


def test_check_reports_drift_and_changes_nothing(broker: EmbeddedBroker, tmp_path: Path) -> None:
    n = next(_runs)
    group = f"memstrata-topics-missing-{n}"
    env = _env({"MEMSTRATA_KAFKA_BROKERS": broker.address, "MEMSTRATA_KAFKA_GROUP": group,
                # the fixture made the shared topics with PARTITIONS partitions
                "MEMSTRATA_KAFKA_PARTITIONS": str(PARTITIONS + 1)}, tmp_path)
    done = _memstrata(["topics", "check"], env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"memstrata.control.v1: partitions is {PARTITIONS}, want {PARTITIONS + 1}" \
        in done.stderr
    assert f"{group}-sessions-changelog: missing" in done.stderr
    assert f"{group}-sessions-changelog" not in _list(broker.address)  # check creates nothing

    # create makes the missing ones but cannot fix a partition count: still drift, exit 1
    made = _memstrata(["topics", "create"], env)
    assert made.returncode == 1, made.stdout + made.stderr
    assert f"{group}-sessions-changelog" in _list(broker.address)
    assert "partitions is" in made.stderr and "missing" not in made.stderr


def test_unreachable_brokers_exit_4(tmp_path: Path) -> None:
    done = _memstrata(["topics", "check"], _env(
        {"MEMSTRATA_KAFKA_BROKERS": "127.0.0.1:1", "MEMSTRATA_KAFKA_REQUEST_TIMEOUT_S": "3"},
        tmp_path))
    assert done.returncode == 4, done.stdout + done.stderr
    assert "cannot reach the brokers at 127.0.0.1:1" in done.stderr
